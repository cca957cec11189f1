"""A ticket's companions in its session: cloned beside its clone on the ticket's branch,
listed in BALLET_COMPANIONS, writable under the same confinement, pushed where they moved."""

from __future__ import annotations

import json
from pathlib import Path

from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, Workspaces
from ballet.sessions.prompt import render_prompt
from ballet.sessions.spec import CompanionInfo
from git_repos import git, make_origin, remote_refs
from session_helpers import SECRETS, MakeSpec, WriteScript, run

# Commits in the ticket's clone and in each companion the file lists; says what it saw.
AGENT = """
import json, os, subprocess
seen = {"file": open(os.environ["BALLET_COMPANIONS"]).read(),
        "context": json.load(open(os.environ["BALLET_CONTEXT"]))["companions"]}
for line in seen["file"].splitlines():
    repo, _, path = line.partition("=")
    seen[repo] = subprocess.run(["git", "-C", path, "branch", "--show-current"],
                                capture_output=True, text=True, check=True).stdout.strip()
    if repo == "octo/lib":
        open(os.path.join(path, "lib.py"), "w").write("VALUE = 2\\n")
        subprocess.run(["git", "-C", path, "commit", "-qam", "lib: two"], check=True)
open("app.txt", "w").write("uses lib 2\\n")
subprocess.run(["git", "add", "app.txt"], check=True)
subprocess.run(["git", "commit", "-q", "-m", "app: use lib"], check=True)
json.dump(seen, open(os.environ["OBSERVED"] + "/seen.json", "w"))
json.dump({"outcome": "done", "summary": "both"}, open(os.environ["BALLET_REPORT"], "w"))
"""


def _companions(tmp_path: Path) -> tuple[Path, Path, tuple[CompanionInfo, ...]]:
    lib = make_origin(tmp_path / "lib", {"lib.py": "VALUE = 1\n"})
    docs = make_origin(tmp_path / "docs", {"README.md": "# docs\n"})
    git("symbolic-ref", "HEAD", "refs/heads/main", cwd=docs)
    git("branch", "-m", "main", "trunk", cwd=docs)
    return (
        lib,
        docs,
        (
            CompanionInfo(repo="octo/lib", clone_url=lib.as_uri(), base="main"),
            CompanionInfo(repo="octo/docs", clone_url=docs.as_uri(), base="trunk"),
        ),
    )


def test_the_agent_commits_in_a_companion_and_only_that_one_is_pushed(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    lib, docs, companions = _companions(tmp_path)
    write_script("agent", AGENT)
    runtime = Runtime(adapter="command", command=("agent",), env=("OBSERVED",))
    spec = make_spec(runtime=runtime, companions=companions)
    result = run(spec, workspaces, {**parent_env, "OBSERVED": str(observed)}, options)

    assert result.failure_reason is None, result.report.summary
    seen = json.loads((observed / "seen.json").read_text())
    lines = seen["file"].splitlines()
    assert [line.partition("=")[0] for line in lines] == ["octo/lib", "octo/docs"]
    # Both on the ticket's branch, made from each one's own base.
    assert seen["octo/lib"] == seen["octo/docs"] == "ballet/7-greeting"
    assert [(c["repo"], c["base"]) for c in seen["context"]] == [
        ("octo/lib", "main"),
        ("octo/docs", "trunk"),
    ]
    pushed = remote_refs(lib)["refs/heads/ballet/7-greeting"]
    assert result.companion_heads == {"octo/lib": pushed}
    assert git("show", f"{pushed}:lib.py", cwd=lib).strip() == "VALUE = 2"
    # No commits in docs: its branch is neither pushed nor named.
    assert "refs/heads/ballet/7-greeting" not in remote_refs(docs)


def test_a_companion_branch_from_an_earlier_session_is_checked_out_and_named_again(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
) -> None:
    lib, _, companions = _companions(tmp_path)
    work = tmp_path / "lib-work"
    git("clone", "-q", str(lib), str(work))
    git("checkout", "-q", "-b", "ballet/7-greeting", cwd=work)
    (work / "lib.py").write_text("VALUE = 3\n")
    git("commit", "-qam", "earlier", cwd=work)
    git("push", "-q", "origin", "ballet/7-greeting", cwd=work)
    earlier = remote_refs(lib)["refs/heads/ballet/7-greeting"]
    write_script(
        "agent",
        "import json, os\nlib = open(os.environ['BALLET_COMPANIONS']).read().split('=')[1]"
        ".splitlines()[0]\nassert open(lib + '/lib.py').read() == 'VALUE = 3\\n'\n"
        "json.dump({'outcome': 'approve', 'summary': 'read it'},"
        " open(os.environ['BALLET_REPORT'], 'w'))\n",
    )
    result = run(make_spec(companions=companions[:1]), workspaces, parent_env, options)
    assert result.failure_reason is None, result.report.summary
    assert result.companion_heads == {"octo/lib": earlier}


def test_a_secret_committed_in_a_companion_fails_the_session_naming_it(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
) -> None:
    lib, _, companions = _companions(tmp_path)
    write_script(
        "agent",
        "import json, os, subprocess\n"
        "lib = open(os.environ['BALLET_COMPANIONS']).read().split('=')[1].strip()\n"
        "open(lib + '/leak.txt', 'w').write(os.environ['ANTHROPIC_API_KEY'])\n"
        "subprocess.run(['git', '-C', lib, 'add', 'leak.txt'], check=True)\n"
        "subprocess.run(['git', '-C', lib, 'commit', '-qm', 'leak'], check=True)\n"
        "json.dump({'outcome': 'done', 'summary': 'x'}, open(os.environ['BALLET_REPORT'], 'w'))\n",
    )
    runtime = Runtime(adapter="command", command=("agent",), env=("ANTHROPIC_API_KEY",))
    result = run(
        make_spec(runtime=runtime, companions=companions[:1]), workspaces, parent_env, options
    )
    assert result.failure_reason == "secret"
    assert "octo/lib" in result.report.summary
    assert "refs/heads/ballet/7-greeting" not in remote_refs(lib)
    assert SECRETS["GITHUB_TOKEN"] not in result.report.summary


def test_the_prompt_names_the_companions_and_where_to_find_them(make_spec: MakeSpec) -> None:
    spec = make_spec(
        companions=(CompanionInfo(repo="octo/lib", clone_url="file:///x", base="trunk"),)
    )
    prompt = render_prompt(spec, report_path=Path("/r.json"), handoff_path=None)
    section = prompt.split("## The ticket's other repositories\n\n")[1].split("\n## ")[0]
    assert "`octo/lib` (base `trunk`)" in section and "`$BALLET_COMPANIONS`" in section
    assert "git -C <path> diff origin/<base>...HEAD" in section
    assert "other repositories" not in render_prompt(
        make_spec(), report_path=Path("/r.json"), handoff_path=None
    )
