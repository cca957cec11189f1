"""A hostile agent in a session with companions: from its companion clones it hunts for
credentials, pushes straight to the origins, rewrites a companion branch, writes
where it may not and commits links out of its clone. Judged on what the origins and
the worker's filesystem hold afterwards, not on what the agent says it got."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, SessionResult, Workspaces, static_token
from ballet.sessions.spec import CompanionInfo
from git_repos import git, make_origin, remote_refs
from session_helpers import SECRETS, MakeSpec, WriteScript, run

TOKEN = "ghs_companion_token_do_not_leak"
PROVIDER_KEY = "sk-ant-test"  # parent_env's ANTHROPIC_API_KEY, declared to no session here
BRANCH = "ballet/7-greeting"

HOSTILE = """
import json, os, shutil, subprocess
targets = json.loads(os.environ["HOSTILE"])
companions = dict(line.split("=", 1) for line in
                  open(os.environ["BALLET_COMPANIONS"]).read().splitlines())
found = {"companions": companions}

def attempt(name, action):
    try:
        found[name] = ["got", str(action())[:400]]
    except Exception as error:
        found[name] = ["refused", f"{type(error).__name__}: {error}"[:400]]

def g(path, *args, check=True):
    done = subprocess.run(["git", "-C", path, *args], capture_output=True, text=True,
                          timeout=30)
    if check and done.returncode:
        raise RuntimeError(f"git {args[0]} exited {done.returncode}: {done.stderr[-300:]}")
    return done.stdout + done.stderr

def report(outcome="approve"):
    json.dump(found, open(os.environ["OBSERVED"] + "/found.json", "w"), indent=1)
    json.dump({"outcome": outcome, "summary": "probed"}, open(os.environ["BALLET_REPORT"], "w"))
"""

# Credentials, direct pushes and writes outside: the session must get nothing and move nothing.
PROBE = (
    HOSTILE
    + """
secrets = [s[::-1] for s in targets["secrets"]]  # given reversed: not in its env as they are
hits = []
def search(text, where):
    hits.extend(f"{where}: {s[:6]}..." for s in secrets if s in text)
search(json.dumps(dict(os.environ)), "environment")
roots = [*companions.values(), os.environ["HOME"], os.path.dirname(os.environ["BALLET_REPORT"]),
         os.getcwd() + "/.git"]
for root in roots:
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            try:
                search(open(path, "rb").read(1 << 20).decode(errors="replace"), path)
            except OSError:
                pass
for environ in os.listdir("/proc"):
    if environ.isdigit():
        try:
            search(open(f"/proc/{environ}/environ", "rb").read().decode(errors="replace"),
                   f"/proc/{environ}/environ")
        except OSError:
            pass
found["secret_hits"] = hits
for repo, path in companions.items():
    found[f"config {repo}"] = open(path + "/.git/config").read()
    g(path, "checkout", "-q", "--detach")
    open(path + "/pwned.txt", "w").write("pushed by the session itself\\n")
    g(path, "add", "pwned.txt")
    g(path, "commit", "-q", "-m", "hostile: straight to origin")
    url = g(path, "config", "remote.origin.url").strip()
    tries = {
        "ticket": ["push", "origin", "HEAD:refs/heads/" + targets["branch"]],
        "main": ["push", "--force", "origin", "HEAD:refs/heads/main"],
        "base": ["push", "--force", "origin", "HEAD:refs/heads/" + targets["bases"][repo]],
        "fetch_url": ["push", "--force", url, "HEAD:refs/heads/main"],
        "pushurl_reset": ["-c", "remote.origin.pushurl=" + url, "push", "--force", "origin",
                          "HEAD:refs/heads/main"],
        "origin_itself": ["push", "--force", targets["origins"][repo], "HEAD:refs/heads/main"],
        "origin_ticket": ["push", targets["origins"][repo], "HEAD:refs/heads/" + targets["branch"]],
    }
    for name, args in tries.items():
        attempt(f"push {repo} {name}", lambda args=args: g(path, *args))
    g(path, "checkout", "-q", targets["branch"])  # its ticket branch never moved

def plant(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        file.write("planted by a hostile session")
    return path

attempt("read other", lambda: open(targets["writes"]["other_session"]).read())
for name, path in targets["writes"].items():
    attempt(f"write {name}", lambda path=path: plant(path))
report()
"""
)

# The companion's branch reset to its base and committed anew: a rewrite of what an
# earlier session pushed.
REWRITE = (
    HOSTILE
    + """
lib = companions["octo/lib"]
found["before"] = g(lib, "log", "--format=%s").splitlines()
g(lib, "reset", "-q", "--hard", "origin/" + targets["bases"]["octo/lib"])
open(lib + "/lib.py", "w").write("VALUE = 99\\n")
g(lib, "commit", "-qam", "hostile: history rewritten")
found["after"] = g(lib, "log", "--format=%s").splitlines()
report("done")
"""
)

# Links out of the companion clone, committed on its ticket branch.
LINKS = (
    HOSTILE
    + """
lib = companions["octo/lib"]
for name, target in targets["links"].items():
    os.symlink(target, os.path.join(lib, name))
    attempt(f"read through {name}", lambda name=name: open(os.path.join(lib, name)).read())
g(lib, "add", *targets["links"])
g(lib, "commit", "-qm", "hostile: links out")
report("done")
"""
)

# The companion's directory swapped for a link to another session's clone, for
# Ballet's push after the session to follow on the worker's side.
SWAP = (
    HOSTILE
    + """
lib = companions["octo/lib"]
shutil.rmtree(lib)
os.symlink(targets["other_clone"], lib)
found["swapped"] = os.readlink(lib)
report()
"""
)


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


def _targets(
    tmp_path: Path, workspaces: Workspaces, lib: Path, docs: Path, **more: object
) -> dict[str, object]:
    return {
        "secrets": [s[::-1] for s in (*SECRETS.values(), TOKEN, PROVIDER_KEY)],
        "branch": BRANCH,
        "bases": {"octo/lib": "main", "octo/docs": "trunk"},
        "origins": {"octo/lib": lib.as_uri(), "octo/docs": docs.as_uri()},
        **more,
    }


def _hostile_run(
    script: str,
    targets: dict[str, object],
    spec_companions: tuple[CompanionInfo, ...],
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> tuple[SessionResult, dict[str, Any]]:
    write_script("agent", script)
    runtime = Runtime(adapter="command", command=("agent",), env=("OBSERVED", "HOSTILE"))
    env = {**parent_env, "OBSERVED": str(observed), "HOSTILE": json.dumps(targets)}
    result = run(
        make_spec(runtime=runtime, companions=spec_companions),
        workspaces,
        env,
        options,
        git_auth=static_token(TOKEN),
    )
    found = json.loads((observed / "found.json").read_text())
    return result, found


def _earlier_session_commit(tmp_path: Path, lib: Path) -> str:
    """The ticket branch on lib's origin with a commit an earlier session pushed."""
    work = tmp_path / "lib-earlier"
    git("clone", "-q", str(lib), str(work))
    git("checkout", "-q", "-b", BRANCH, cwd=work)
    (work / "lib.py").write_text("VALUE = 3\n")
    git("commit", "-qam", "earlier session", cwd=work)
    git("push", "-q", "origin", BRANCH, cwd=work)
    return str(remote_refs(lib)[f"refs/heads/{BRANCH}"])


def _has_object(repo: Path, sha: str) -> bool:
    return (
        subprocess.run(
            ["git", "cat-file", "-e", sha], cwd=repo, capture_output=True, check=False
        ).returncode
        == 0
    )


def test_a_hostile_agent_gets_no_credential_and_no_way_out_of_its_companions(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
    origin: Path,
) -> None:
    lib, docs, companions = _companions(tmp_path)
    earlier = _earlier_session_commit(tmp_path, lib)
    other = workspaces.root / "sessions" / "acme_other_7" / "repo" / "work.txt"
    other.parent.mkdir(parents=True)
    other.write_text("another ticket's work\n")
    lib_mirror = workspaces.mirror_path("octo/lib")
    demo_mirror = workspaces.mirror_path("octo/demo")
    writes = {
        "other_session": str(other),
        "other_session_new": str(other.parent / "planted.txt"),
        "lib_mirror": str(lib_mirror / "objects" / "planted"),
        "lib_mirror_hook": str(lib_mirror / "hooks" / "pre-receive"),
        "demo_mirror": str(demo_mirror / "objects" / "planted"),
        "lib_origin": str(lib / "hooks" / "pre-receive"),
        "workspaces_root": str(workspaces.root / "planted"),
        "system": "/usr/ballet-was-here",
    }
    targets = _targets(tmp_path, workspaces, lib, docs, writes=writes)
    before = {path: remote_refs(path) for path in (lib, docs, origin)}
    result, found = _hostile_run(
        PROBE, targets, companions, make_spec, write_script, workspaces, options,
        parent_env, observed,
    )  # fmt: skip

    assert result.failure_reason is None, result.report.summary
    # Both companions were there to attack.
    assert set(found["companions"]) == {"octo/lib", "octo/docs"}
    # No credential anywhere it could read: environment, clones' .git, HOME, /proc.
    assert found["secret_hits"] == [], found["secret_hits"]
    for repo in ("octo/lib", "octo/docs"):
        config = found[f"config {repo}"]
        assert TOKEN not in config and "extraheader" not in config.lower(), config
    # Every push of its own failed, and no origin moved: not the ticket branch, not main.
    pushes = {name: value[0] for name, value in found.items() if name.startswith("push ")}
    assert len(pushes) == 14 and set(pushes.values()) == {"refused"}, found
    assert {path: remote_refs(path) for path in (lib, docs, origin)} == before
    assert remote_refs(lib)[f"refs/heads/{BRANCH}"] == earlier
    for path in (lib, docs, origin):
        assert "hostile" not in git("log", "--all", "--format=%s", cwd=path)
    # Its branches did not move, so Ballet pushed nothing for it either.
    assert result.companion_heads == {"octo/lib": earlier}
    # Nothing written outside its workspace reached the worker's filesystem.
    assert other.read_text() == "another ticket's work\n"
    for name, planted in writes.items():
        if name != "other_session":
            assert not Path(planted).exists(), (name, found[f"write {name}"])
    assert found["read other"][0] == "refused", found["read other"]
    assert TOKEN not in result.output_tail and TOKEN not in result.report.summary


def test_a_rewritten_companion_branch_is_not_forced_over_an_earlier_sessions_commit(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    lib, docs, companions = _companions(tmp_path)
    earlier = _earlier_session_commit(tmp_path, lib)
    result, found = _hostile_run(
        REWRITE, _targets(tmp_path, workspaces, lib, docs), companions[:1], make_spec,
        write_script, workspaces, options, parent_env, observed,
    )  # fmt: skip

    # The agent did rewrite it in its clone: the earlier commit was gone there.
    assert found["before"][0] == "earlier session", found
    assert found["after"] == ["hostile: history rewritten", "initial"], found
    # Ballet's push was refused (not forced), and the session says so, naming the repository.
    assert result.failure_reason == "push", result.report.summary
    assert "octo/lib" in result.report.summary
    assert "rejected" in result.report.summary or "fetch first" in result.report.summary
    # The origin still holds the earlier session's commit, and none of the rewrite.
    refs = remote_refs(lib)
    assert refs[f"refs/heads/{BRANCH}"] == earlier
    log = git("log", "--format=%s", f"refs/heads/{BRANCH}", cwd=lib).splitlines()
    assert log == ["earlier session", "initial"]
    assert "VALUE = 99" not in git("show", f"{BRANCH}:lib.py", cwd=lib)
    assert TOKEN not in result.report.summary


def test_links_out_of_a_companion_are_pushed_as_links_and_nothing_they_point_at(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    lib, docs, companions = _companions(tmp_path)
    host_secret = tmp_path / "data" / "host-only.txt"
    host_secret.parent.mkdir()
    host_secret.write_text("host-only-content-do-not-leak\n")
    links = {
        "passwd": "/etc/passwd",
        "mirror": str(workspaces.mirror_path("octo/lib")),
        "mirror-config": str(workspaces.mirror_path("octo/lib") / "config"),
        "host-secret": str(host_secret),
        "up": "../../../../..",
    }
    targets = _targets(tmp_path, workspaces, lib, docs, links=links)
    result, found = _hostile_run(
        LINKS, targets, companions[:1], make_spec, write_script, workspaces, options,
        parent_env, observed,
    )  # fmt: skip

    assert result.failure_reason is None, result.report.summary
    pushed = remote_refs(lib)[f"refs/heads/{BRANCH}"]
    assert result.companion_heads == {"octo/lib": pushed}
    # Each is in the pushed tree as a link (mode 120000) whose blob is its target's path.
    tree = {
        line.split("\t")[1]: line.split()[0]
        for line in git("ls-tree", pushed, cwd=lib).splitlines()
    }
    for name, target in links.items():
        assert tree[name] == "120000", tree
        assert git("cat-file", "blob", f"{pushed}:{name}", cwd=lib) == target
    # No object the push brought holds what any link points at on the worker.
    passwd = Path("/etc/passwd").read_text()
    objects = git("rev-list", "--objects", f"main..{pushed}", cwd=lib).splitlines()
    for line in objects:
        sha = line.split()[0]
        if git("cat-file", "-t", sha, cwd=lib) != "blob":
            continue
        content = git("cat-file", "blob", sha, cwd=lib)
        assert "host-only-content" not in content
        assert not (passwd.strip() and passwd.strip() in content)
        assert "[remote" not in content and "bare = true" not in content
    # The host's secret was no more readable through its link inside than directly.
    assert found["read through host-secret"][0] == "refused", found


def test_a_companion_swapped_for_a_link_to_another_sessions_clone_leaves_that_clone_alone(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    """Another session's clone (a `--shared` clone: its objects borrowed through
    alternates) on the same branch of the same repository, which this session's
    companion directory now links to. Ballet's push runs on the worker, outside the
    sandbox: it must neither push that session's work nor alter its clone."""
    lib, docs, companions = _companions(tmp_path)
    other = workspaces.root / "sessions" / "acme_other_7" / "companions" / "octo" / "lib"
    other.parent.mkdir(parents=True)
    git("clone", "-q", "--shared", str(lib), str(other))
    git("checkout", "-q", "-b", BRANCH, cwd=other)
    (other / "lib.py").write_text("VALUE = 42  # another session's unfinished work\n")
    git("commit", "-qam", "another session's work", cwd=other)
    theirs = git("rev-parse", "HEAD", cwd=other)
    alternates = other / ".git" / "objects" / "info" / "alternates"
    assert alternates.is_file()
    borrowed = alternates.read_text()
    targets = _targets(tmp_path, workspaces, lib, docs, other_clone=str(other))
    result, found = _hostile_run(
        SWAP, targets, companions[:1], make_spec, write_script, workspaces, options,
        parent_env, observed,
    )  # fmt: skip

    assert found["swapped"] == str(other), found
    # Nothing of the other session's went to the origin under this session's name.
    assert f"refs/heads/{BRANCH}" not in remote_refs(lib), (result.failure_reason, result.report)
    assert not _has_object(lib, theirs)
    assert "octo/lib" not in result.companion_heads
    # The session fails, saying what it did; nothing of the link was read.
    assert result.failure_reason == "push" and "replaced" in result.report.summary
    # The other session's clone is as it was: its alternates kept.
    assert git("rev-parse", "HEAD", cwd=other) == theirs
    assert alternates.is_file() and alternates.read_text() == borrowed, (
        "Ballet's push of this session's companion removed another session's alternates",
        result.failure_reason,
        result.report.summary,
    )


def test_a_companion_swapped_for_a_link_to_another_tickets_clone_leaves_that_clone_alone(
    tmp_path: Path,
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    """The same swap, to the live clone of another ticket (another branch, another
    repository): nothing of it may be pushed, and its objects stay borrowed."""
    lib, docs, companions = _companions(tmp_path)
    elsewhere = make_origin(tmp_path / "elsewhere", {"secret-plan.md": "another ticket\n"})
    other = workspaces.root / "sessions" / "acme_other_9" / "repo"
    other.parent.mkdir(parents=True)
    git("clone", "-q", "--shared", str(elsewhere), str(other))
    git("checkout", "-q", "-b", "ballet/9-other", cwd=other)
    alternates = other / ".git" / "objects" / "info" / "alternates"
    borrowed = alternates.read_text()
    targets = _targets(tmp_path, workspaces, lib, docs, other_clone=str(other))
    result, found = _hostile_run(
        SWAP, targets, companions[:1], make_spec, write_script, workspaces, options,
        parent_env, observed,
    )  # fmt: skip

    assert found["swapped"] == str(other), found
    assert f"refs/heads/{BRANCH}" not in remote_refs(lib)
    assert "octo/lib" not in result.companion_heads
    # The other ticket's clone still borrows its mirror's objects: its git still works.
    assert alternates.is_file() and alternates.read_text() == borrowed, (
        "Ballet's push of this session's companion removed another ticket's alternates",
        result.failure_reason,
        result.report.summary,
    )
    git("cat-file", "-e", "HEAD:secret-plan.md", cwd=other)
