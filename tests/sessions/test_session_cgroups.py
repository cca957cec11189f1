"""Where a worker may make its sessions' cgroups (v1, a delegated v2 subtree, a
container's own cgroup namespace, a hybrid host), and what it then enforces or refuses
at start-up (sessions/confine/cgroups.py, limits.py). On fake cgroup trees: the real
kernel is exercised by test_session_limits.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ballet.core.session_limits import GIB, LimitValues
from ballet.sessions.confine.cgroups import (
    CgroupTree,
    Hierarchy,
    find_hierarchies,
    prepare,
)
from ballet.sessions.confine.limits import LimitsUnavailable, plan_limits
from ballet.sessions.mounts import parse_mountinfo

ALL = frozenset({"memory", "pids", "cpu"})


def v2_cgroup(path: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.controllers").write_text(controllers + "\n")
    (path / "cgroup.subtree_control").write_text("")
    (path / "cgroup.procs").write_text("")
    return path


def test_a_cgroup_v1_host_gives_a_hierarchy_per_controller(tmp_path: Path) -> None:
    for directory in ("cpu,cpuacct", "memory/process_api/x", "pids", "unified"):
        (tmp_path / directory).mkdir(parents=True)
    (tmp_path / "cpu,cpuacct" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "unified" / "cgroup.controllers").write_text("\n")  # v2 without controllers
    own = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/x\n1:cpu,cpuacct:/\n0::/\n"
    mounts = (
        f"32 31 0:29 / {tmp_path}/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
        f"35 31 0:32 / {tmp_path}/memory rw,relatime - cgroup cgroup rw,memory\n"
        f"39 31 0:36 / {tmp_path}/pids rw,relatime - cgroup cgroup rw,pids\n"
        f"40 31 0:37 / {tmp_path}/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
        f"41 31 0:38 / {tmp_path}/unified rw,relatime - cgroup2 cgroup2 rw\n"
    )
    assert find_hierarchies(own, mounts) == (
        Hierarchy(1, tmp_path / "cpu,cpuacct", frozenset({"cpu"})),
        Hierarchy(1, tmp_path / "memory/process_api/x", frozenset({"memory"})),
        Hierarchy(1, tmp_path / "pids", frozenset({"pids"})),
    )


def test_a_cpu_hierarchy_without_bandwidth_control_gives_no_cpu_limit(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()  # no cpu.cfs_quota_us: CONFIG_CFS_BANDWIDTH is off
    mounts = f"32 31 0:29 / {tmp_path}/cpu rw - cgroup cgroup rw,cpu\n"
    assert find_hierarchies("1:cpu:/\n", mounts) == ()


def test_a_delegated_v2_subtree_is_the_workers_own_cgroup(tmp_path: Path) -> None:
    service = v2_cgroup(tmp_path / "system.slice" / "ballet.service")
    mounts = f"30 23 0:26 / {tmp_path} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    own = "0::/system.slice/ballet.service\n"
    assert find_hierarchies(own, mounts) == (Hierarchy(2, service, ALL),)
    # Once the worker moved itself into its leaf, the subtree is still its service's.
    v2_cgroup(service / "ballet-worker")
    assert find_hierarchies(own.replace("\n", "/ballet-worker\n"), mounts) == (
        Hierarchy(2, service, ALL),
    )


def test_a_container_with_its_own_cgroup_namespace_uses_its_root(tmp_path: Path) -> None:
    v2_cgroup(tmp_path, controllers="cpu memory")  # no pids delegated to it
    mounts = f"600 590 0:26 / {tmp_path} rw,nosuid - cgroup2 cgroup rw\n"
    assert find_hierarchies("0::/\n", mounts) == (
        Hierarchy(2, tmp_path, frozenset({"cpu", "memory"})),
    )


def test_a_hybrid_host_takes_each_controller_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    v2_cgroup(tmp_path / "unified" / "worker", controllers="memory pids")
    own = "4:memory:/\n0::/worker\n"
    mounts = (
        f"35 31 0:32 / {tmp_path}/memory rw - cgroup cgroup rw,memory\n"
        f"41 31 0:38 / {tmp_path}/unified rw - cgroup2 cgroup2 rw\n"
    )
    assert find_hierarchies(own, mounts) == (
        Hierarchy(1, tmp_path / "memory", frozenset({"memory"})),
        Hierarchy(2, tmp_path / "unified" / "worker", frozenset({"pids"})),
    )


def test_a_cgroup_outside_the_mounted_part_is_not_one_to_use(tmp_path: Path) -> None:
    # A container given only its own part of the host's hierarchy, without a namespace.
    mounts = f"35 31 0:32 /docker/abc {tmp_path} rw - cgroup cgroup rw,memory\n"
    assert find_hierarchies("4:memory:/elsewhere\n", mounts) == ()
    (tmp_path / "inner").mkdir()
    assert find_hierarchies("4:memory:/docker/abc/inner\n", mounts) == (
        Hierarchy(1, tmp_path / "inner", frozenset({"memory"})),
    )


def test_mount_points_with_spaces_are_read_whole() -> None:
    (mount,) = parse_mountinfo("35 31 0:32 / /sys/fs/my\\040cgroups rw - cgroup cgroup rw,pids\n")
    assert mount.point == Path("/sys/fs/my cgroups") and "pids" in mount.options


def test_preparing_a_v2_subtree_moves_the_worker_into_a_leaf_and_delegates(
    tmp_path: Path,
) -> None:
    base = v2_cgroup(tmp_path / "ballet.service")
    prepare(CgroupTree((Hierarchy(2, base, ALL),)))
    assert (base / "ballet-worker").is_dir()
    assert (base / "cgroup.subtree_control").read_text() == "+cpu +memory +pids"


def test_with_nothing_set_the_defaults_apply_where_enforceable() -> None:
    tree = CgroupTree((Hierarchy(1, Path("/x"), ALL),))
    plan = plan_limits(LimitValues(), slots=1, cgroups=tree, can_mount=True)
    cores = len(os.sched_getaffinity(0))
    assert plan.values == LimitValues(memory=4 * GIB, disk=8 * GIB, processes=512, cpus=cores)
    assert plan.warnings == ()
    assert plan.how("disk") == "a tmpfs per session (clone, HOME, /tmp)"
    assert plan.how("memory") == "cgroup v1 (/x)"
    # Where nothing can be enforced, /tmp alone is limited, and each is warned of.
    bare = plan_limits(LimitValues(), cgroups=None, can_mount=False)
    assert bare.values == LimitValues(disk=8 * GIB)
    assert bare.how("disk") == "/tmp only (bwrap --size) and RLIMIT_FSIZE per file"
    assert [w.split(":")[0] for w in bare.warnings] == ["memory", "processes", "cpus", "disk"]


def test_a_limit_the_operator_set_that_cannot_be_enforced_is_refused() -> None:
    with pytest.raises(LimitsUnavailable) as refused:
        plan_limits(LimitValues(memory=GIB, disk=GIB), cgroups=None, can_mount=False)
    message = str(refused.value)
    assert message.startswith(
        "BALLET_SESSION_MAX_MEMORY, BALLET_SESSION_MAX_DISK set, but this worker cannot"
    )
    assert "run the worker as root where cgroup v1 is mounted" in message
    assert "systemd `Delegate=yes`" in message and "CAP_SYS_ADMIN" in message
    assert "or unset BALLET_SESSION_MAX_MEMORY, BALLET_SESSION_MAX_DISK" in message
    only_memory = CgroupTree((Hierarchy(2, Path("/x"), frozenset({"memory"})),))
    with pytest.raises(LimitsUnavailable, match="BALLET_SESSION_MAX_PROCESSES set"):
        plan_limits(LimitValues(processes=64), cgroups=only_memory, can_mount=True)
