"""What `kubectl create secret generic` makes of its sources, for the tests of the env
file /setup writes and of docs/deploy.md's commands.

The real kubectl (`--dry-run=client -o json`, which needs no cluster) when it is on
PATH, as on the machines this project runs on; elsewhere a mirror of its rules
(kubectl/pkg/util/env_file.go): a line's leading blanks are dropped, blank lines
and `#` lines skipped, the key is what precedes the first `=` and must be a valid
name, the value everything after it, verbatim (quotes, escapes, trailing blanks).

Run as a script it stands in for `kubectl` on a test's PATH: `kubectl create secret
generic NAME …` writes the Secret's data as JSON to $BALLET_TEST_SECRETS/NAME.json.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_KEY = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def real_kubectl() -> str | None:
    # As a stand-in on PATH, the test says where the real one is ("": none).
    if "BALLET_TEST_KUBECTL" in os.environ:
        return os.environ["BALLET_TEST_KUBECTL"] or None
    return shutil.which("kubectl")


def secret_data(name: str, sources: list[str], cwd: Path) -> dict[str, str]:
    """The Secret `kubectl create secret generic NAME *sources` would make, decoded."""
    kubectl = real_kubectl()
    if kubectl is None:
        return _mirrored(sources, cwd)
    result = subprocess.run(
        [kubectl, "create", "secret", "generic", name, *sources, "--dry-run=client", "-o", "json"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ValueError(f"kubectl refused: {result.stderr.strip()}")
    data: dict[str, str] = json.loads(result.stdout).get("data", {})
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


def _mirrored(sources: list[str], cwd: Path) -> dict[str, str]:
    data: dict[str, str] = {}
    for source in sources:
        option, _, argument = source.partition("=")
        if option == "--from-literal":
            key, _, value = argument.partition("=")
            pairs = [(key, value)]
        elif option == "--from-env-file":
            pairs = _env_file(cwd / argument)
        else:
            raise ValueError(f"the mirror of kubectl does not know {option}")
        for key, value in pairs:
            if not _KEY.match(key):
                raise ValueError(f"{key!r} is not a valid key name")
            if key in data:
                raise ValueError(f"cannot add key {key}, another key by that name already exists")
            data[key] = value
    return data


def _env_file(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text().removeprefix("\ufeff").splitlines():
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        key, equals, value = line.partition("=")
        pairs.append((key, value if equals else os.environ.get(key, "")))
    return pairs


def main(argv: list[str]) -> int:
    if argv[:3] != ["create", "secret", "generic"] or len(argv) < 4:
        print(f"the test's kubectl only creates generic secrets, not {argv}", file=sys.stderr)
        return 2
    try:
        data = secret_data(argv[3], argv[4:], Path.cwd())
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    out = Path(os.environ["BALLET_TEST_SECRETS"]) / f"{argv[3]}.json"
    out.write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
