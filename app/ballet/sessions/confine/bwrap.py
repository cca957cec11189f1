"""The bubblewrap command line of a confined session, and the check that bwrap works.

The sandbox starts from an empty root (bwrap's own tmpfs) and gets, in order:
1. read-only: the system (`/usr`, `/etc`, the `/lib*` and `/bin` links, `/opt`),
   Ballet's Python, and the tool directories on the session's PATH;
2. masks over any secret that lies inside those (the data dir, the App key, the
   env file): an empty tmpfs over a directory, /dev/null over a file;
3. (first, in fact, so a tool under /tmp shows) a fresh `/proc` of its own pid
   namespace (no worker to read), `/dev` and a private `/tmp` (the workspace's
   own, on the session's size-limited disk, or a tmpfs of the disk's size);
4. the session's own mirror objects read-only (its clone's alternates);
5. read-write: its clone, HOME and BALLET_* directory; nothing else is writable;
6. the egress proxy's socket, the model gateway's, and the relay that starts the agent.
Every namespace is new (user, pid, ipc, uts, cgroup, network); the session may
not make user namespaces of its own, nor trace any process (a seccomp filter);
it dies with the worker, and the worker kills its init once its process ends
(reaper.py); its terminal is detached (`--new-session`: no TIOCSTI keystrokes
into the worker's tty).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ballet.sessions.confine.bwrap_failure import why_bwrap_failed

SYSTEM_PATHS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
)  # fmt: skip
RELAY = Path(__file__).with_name("relay.py")
INSIDE_SOCKET = "/run/ballet/egress.sock"
INSIDE_GATEWAY = "/run/ballet/gateway.sock"
INSIDE_RELAY = "/run/ballet/relay.py"
HOSTNAME = "ballet-session"
INIT_MEMORY = ("/proc/1/mem", "/proc/1/task/1/mem")


class SandboxUnavailable(Exception):
    """bwrap cannot start a sandbox here; the message says what to install or set."""


@dataclass(frozen=True)
class SandboxLayout:
    clone: Path
    home: Path
    files: Path
    mirror_objects: Path
    egress_socket: Path
    readonly: tuple[Path, ...]  # besides the system's: Python, tools, the operator's
    hidden: tuple[Path, ...]  # never visible, even inside a read-only directory
    writable: tuple[Path, ...] = ()  # besides the session's own (tests only)
    tmp: Path | None = None  # the workspace's own /tmp, on its size-limited disk
    tmp_size: int | None = None  # else: bytes of the sandbox's own /tmp (None: unbounded)
    gateway_socket: Path | None = None  # the session's model gateway (sessions/gateway/)


@dataclass(frozen=True)
class RelaySpec:
    proxy_port: int
    # (port inside, host:port through the proxy, or the path of a unix socket inside)
    forwards: tuple[tuple[int, str], ...]

    def arguments(self) -> list[str]:
        forwards = [f"{port}={target}" for port, target in self.forwards]
        return [INSIDE_SOCKET, str(self.proxy_port), *forwards]


def bwrap_argv(
    layout: SandboxLayout,
    relay: RelaySpec,
    command: Sequence[str],
    *,
    bwrap: str = "bwrap",
    info_fd: int | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    args = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    args += ["--cap-drop", "ALL"]
    if info_fd is not None:  # the init's pid, for the worker to end it (reaper.py)
        args += ["--info-fd", str(info_fd)]
    if seccomp_fd is not None:  # no tracing of the init or of anything else (seccomp.py)
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--hostname", HOSTNAME]
    if supports_disable_userns(bwrap):
        args.append("--disable-userns")
    # /tmp first: a tool directory under /tmp (a test's) is bound on top of it.
    args += ["--proc", "/proc", "--dev", "/dev"]
    if layout.tmp is not None:  # counted in the session's disk with its clone and HOME
        args += ["--bind", str(layout.tmp), "/tmp"]
    else:
        size = [] if layout.tmp_size is None else ["--size", str(layout.tmp_size)]
        args += [*size, "--tmpfs", "/tmp"]
    # The init's memory is the agent's user's to write (the kernel asks no ptrace call
    # for /proc/1/mem, so no seccomp filter can refuse it): a read-only /dev/null over it.
    for memory in INIT_MEMORY:
        args += ["--ro-bind", "/dev/null", memory]
    roots = readonly_roots(layout.readonly, layout.hidden)
    for root in roots:
        args += _read_only(root)
    for secret in layout.hidden:
        if any(_within(secret, root) for root in roots) and secret.exists():
            mask = ["--tmpfs"] if secret.is_dir() else ["--ro-bind", "/dev/null"]
            args += [*mask, str(secret)]
    args += ["--ro-bind", str(layout.mirror_objects), str(layout.mirror_objects)]
    for writable in (layout.clone, layout.home, layout.files, *layout.writable):
        args += ["--bind", str(writable), str(writable)]
    args += ["--ro-bind", str(layout.egress_socket), INSIDE_SOCKET]
    if layout.gateway_socket is not None:
        args += ["--ro-bind", str(layout.gateway_socket), INSIDE_GATEWAY]
    args += ["--ro-bind", str(RELAY), INSIDE_RELAY, "--chdir", str(layout.clone)]
    python = str(Path(sys.executable).resolve())
    return [*args, "--", python, "-I", "-S", INSIDE_RELAY, *relay.arguments(), "--", *command]


def _read_only(root: Path) -> list[str]:
    """`root` read-only in the sandbox; a system link (/bin -> usr/bin on a merged
    /usr) stays the link it is."""
    if str(root) in SYSTEM_PATHS and root.is_symlink():
        return ["--symlink", os.readlink(root), str(root)]
    return ["--ro-bind", str(root), str(root)]


def readonly_roots(extra: Iterable[Path], hidden: Iterable[Path]) -> list[Path]:
    """The read-only directories: the system's and `extra`, minus any that would show a
    secret whole (a directory holding the data dir is left out; a secret inside a
    system directory is masked instead), nested ones folded into their parent."""
    hidden = tuple(hidden)
    candidates = [Path(p) for p in SYSTEM_PATHS if os.path.lexists(p)]
    for path in extra:
        path = Path(os.path.abspath(path))
        # Judged by where it leads, as the secrets are resolved: a link to a directory
        # holding one is no way in. Bound by its own name, which PATH and tools use.
        seen_as = (path, path.resolve())
        if path.exists() and not any(_within(s, p) for s in hidden for p in seen_as):
            candidates.append(path)
    roots: list[Path] = []
    for path in candidates:
        if not any(_within(path, root) for root in roots):
            roots = [r for r in roots if not _within(r, path)]
            roots.append(path)
    return roots


def tool_paths(path_variable: str) -> tuple[Path, ...]:
    """What the session's PATH needs visible: each directory on it, and whole the
    prefixes whose `bin` holds only links into them: a virtualenv's for its `bin`,
    `node_modules` for its `.bin`, a version manager's root (pyenv, rbenv, nodenv:
    `<root>/shims` beside `<root>/versions`) for its shims."""
    found: list[Path] = []
    for entry in filter(None, path_variable.split(os.pathsep)):
        path = Path(entry)
        parent = path.parent
        if (
            (path.name == ".bin" and parent.name == "node_modules")
            or (path.name == "bin" and (parent / "pyvenv.cfg").is_file())
            or (path.name == "shims" and (parent / "versions").is_dir())
        ):
            path = parent
        found.append(path)
    return tuple(found)


@functools.cache
def ballet_python_paths() -> tuple[Path, ...]:
    """Ballet's own interpreter (the relay runs on it) and installed packages: agent
    scripts commonly use the same Python. Code only, nothing secret."""
    import ballet

    source = Path(ballet.__file__).resolve().parent.parent
    return tuple(dict.fromkeys(Path(p) for p in (sys.base_prefix, sys.prefix, source)))


def _within(path: Path, root: Path) -> bool:
    # Part by part: `root in path.parents` made a Path of every ancestor, and was most
    # of the mount plan's time (~2 ms of every session's start).
    parts = root.parts
    return path.parts[: len(parts)] == parts


@functools.cache
def supports_disable_userns(bwrap: str) -> bool:
    try:
        help_text = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--disable-userns" in help_text


def check_bwrap(bwrap: str = "bwrap") -> None:
    """Start a throwaway sandbox the way sessions do; raise SandboxUnavailable with what
    to do when it cannot (bwrap missing, user namespaces disabled or forbidden)."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    for path in SYSTEM_PATHS:
        if os.path.lexists(path):
            argv += _read_only(Path(path))
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--", "true"]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError as error:
        raise SandboxUnavailable(
            f"bubblewrap ({bwrap}) is not installed, and agent sessions run confined by it: "
            "install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
            "bubblewrap), or set BALLET_SESSION_ISOLATION=none to run sessions unconfined "
            "(unsafe: an agent then reaches everything the worker can; docs/security.md)"
        ) from error
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailable(f"bubblewrap could not be run: {error}") from error
    if result.returncode != 0:
        raise SandboxUnavailable(why_bwrap_failed(result.stderr, result.returncode))
