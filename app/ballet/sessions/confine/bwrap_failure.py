"""Why bubblewrap could not make a sandbox where the worker runs, and what to change.

`ballet worker` and `ballet serve` start a throwaway sandbox before anything else
(bwrap.check_bwrap); when it fails, bwrap's one line of stderr is all there is to
go on. The common causes need different fixes, so the message names the one
bwrap's words point at rather than listing every setting that could be involved.
"""

from __future__ import annotations

UNCONFINED = (
    "or set BALLET_SESSION_ISOLATION=none to run sessions unconfined (unsafe: an agent "
    "then reaches everything the worker can; docs/security.md)"
)

# A container runtime masks parts of /proc (bind mounts over /proc/kcore, /proc/keys,
# a read-only /proc/sys...). The kernel lets a new user namespace mount a fresh
# /proc only where no part of the existing one is covered, so bwrap's --proc fails.
MASKED_PROC = "Can't mount proc on /newroot/proc"


def why_bwrap_failed(stderr: str, returncode: int) -> str:
    """The whole refusal: what bwrap said, its likely cause, and the fix."""
    said = stderr.strip() or f"exit code {returncode}"
    if MASKED_PROC in said:
        return (
            f"bubblewrap cannot create a sandbox here ({said}): this container's /proc is"
            " masked (parts of it covered, as container runtimes do by default), and a"
            " sandbox may mount its own /proc only where all of /proc is visible. In"
            " Kubernetes run the worker pod with `hostUsers: false` and the container with"
            " `securityContext.procMount: Unmasked`, as manifests/worker.yaml does"
            " (docs/deploy.md); with podman `--security-opt unmask=ALL`, with docker"
            f" `--security-opt systempaths=unconfined`; {UNCONFINED}"
        )
    return (
        f"bubblewrap cannot create a sandbox here ({said})"
        ": it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1,"
        " user.max_user_namespaces > 0; AppArmor: kernel.apparmor_restrict_unprivileged_userns"
        f"=0 or a bwrap profile; in Kubernetes see docs/deploy.md), {UNCONFINED}"
    )
