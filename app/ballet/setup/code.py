"""The one-time setup code: `/setup` registers an App only for whoever can read
`ballet serve`'s log or its data directory, as Jenkins' initial admin password
and Gitea's install lock do. Without it, the first visitor of a public address
would register their own App and receive every webhook.

The code is kept in BALLET_DATA_DIR/setup-code (owner-only from its creation,
written whole before it appears), reused by every start until an App is
registered, then deleted. Twelve characters of an alphabet without look-alikes
(no 0/O, 1/I/L) carry 59 bits: guessing is bounded by the code's length, not by
a lockout, which would let a stranger lock the operator out by guessing badly.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

from ballet.settings import SettingsError

CODE_FILE = "setup-code"
ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
GROUPS, GROUP_LENGTH = 3, 4
CODE_LENGTH = GROUPS * GROUP_LENGTH


def new_code() -> str:
    """A fresh code, grouped for reading aloud and typing: `K7QM-4XHP-R9TB`."""
    chars = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
    return "-".join(chars[i : i + GROUP_LENGTH] for i in range(0, CODE_LENGTH, GROUP_LENGTH))


def normalised(typed: str) -> str:
    """What a person typed, as the code is compared: case, spaces and dashes aside."""
    return "".join(ch for ch in typed.upper() if ch not in " -\t")


def is_the_code(expected: str, typed: str) -> bool:
    """Compared in constant time, so the answer's timing tells nothing of the code."""
    return hmac.compare_digest(
        normalised(expected).encode("utf-8"), normalised(typed).encode("utf-8")
    )


def setup_code(data_dir: Path) -> str:
    """The code kept under `data_dir`, made now if there is none (or it was damaged)."""
    path = data_dir / CODE_FILE
    try:
        with contextlib.suppress(FileNotFoundError):
            kept = path.read_text().strip()
            if len(normalised(kept)) == CODE_LENGTH and set(normalised(kept)) <= set(ALPHABET):
                return kept
        data_dir.mkdir(parents=True, exist_ok=True)
        code = new_code()
        # mkstemp makes the file 0600; it is renamed into place only once written, so
        # a reader never sees a half-written code, nor one anyone else could read.
        fd, temporary = tempfile.mkstemp(prefix=f".{CODE_FILE}.", dir=data_dir)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(code + "\n")
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise SettingsError(
            f"no GitHub App is configured, and {path} cannot hold the one-time setup code"
            f" ({exc.strerror}): give `ballet serve` a writable BALLET_DATA_DIR"
        ) from exc
    return code


def forget_setup_code(data_dir: Path) -> None:
    """Setup is done (or an App was configured by hand): the code opens nothing more."""
    with contextlib.suppress(FileNotFoundError):
        (data_dir / CODE_FILE).unlink()
