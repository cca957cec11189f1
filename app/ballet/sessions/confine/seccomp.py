"""The seccomp filter bubblewrap puts on a session (`bwrap --seccomp FD`).

An agent runs with the same uid as bwrap's own init (pid 1 of the sandbox), so
without a filter it may ptrace that init: clear its death signal, make it tell
the worker "exited" while the sandbox lives on, or write its memory. The
worker no longer trusts the init's word (see `reaper.py`), and this filter
takes the tools away: tracing and reading or writing another process's memory
(`ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`, `kcmp`; the third way,
`/proc/1/mem`, is no system call of its own and is covered by a read-only
/dev/null mounted over it, see bwrap.py), and the kernel
interfaces container runtimes deny by default (`bpf`, `perf_event_open`,
`userfaultfd`, the key ring). Each fails with EPERM, as a tool expects of a
forbidden call. A call of another architecture's ABI (i386 or x32 on x86-64)
fails the same way, whatever its number, so no table is sidestepped by the ABI.

Classic BPF, written out here: the program is a dozen instructions, and the
library that would build it (libseccomp) is not on every worker.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import struct

# From linux/audit.h and the kernel's syscall tables of each architecture.
ARCHITECTURES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
            "pidfd_getfd": 438, "kcmp": 312, "bpf": 321, "perf_event_open": 298,
            "userfaultfd": 323, "keyctl": 250, "add_key": 248, "request_key": 249,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
            "pidfd_getfd": 438, "kcmp": 272, "bpf": 280, "perf_event_open": 241,
            "userfaultfd": 282, "keyctl": 219, "add_key": 217, "request_key": 218,
        },
    ),
}  # fmt: skip
X32_SYSCALL_BIT = 0x40000000  # x86-64's x32 ABI: the same calls under other numbers

# linux/filter.h and linux/seccomp.h
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_NR_OFFSET, _ARCH_OFFSET = 0, 4


@functools.cache
def deny_filter(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture, as bwrap reads it (an array of
    `struct sock_filter`); None on an architecture this table does not know."""
    known = ARCHITECTURES.get(machine or platform.machine())
    if known is None:
        return None
    arch, calls = known
    numbers = sorted(set(calls.values()))
    program: list[tuple[int, int, int, int]] = [(_LD_W_ABS, 0, 0, _ARCH_OFFSET)]
    # Instructions are (code, jump if true, jump if false, k); a jump skips that many.
    # The two returns are last: ALLOW at -2, DENY at -1.
    body: list[tuple[int, str | None, str | None, int]] = [(_JEQ_K, None, "deny", arch)]
    body.append((_LD_W_ABS, None, None, _NR_OFFSET))
    if arch == ARCHITECTURES["x86_64"][0]:
        body.append((_JGE_K, "deny", None, X32_SYSCALL_BIT))
    body += [(_JEQ_K, "deny", None, number) for number in numbers]
    body.append((_RET_K, None, None, _ALLOW))
    body.append((_RET_K, None, None, _ERRNO | errno.EPERM))
    deny_at = len(body) - 1
    for index, (code, if_true, if_false, k) in enumerate(body):
        true = deny_at - index - 1 if if_true == "deny" else 0
        false = deny_at - index - 1 if if_false == "deny" else 0
        program.append((code, true, false, k))
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def filter_fd(program: bytes) -> int:
    """A file descriptor bwrap can read the program from (a memfd at offset 0)."""
    fd = os.memfd_create("ballet-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
