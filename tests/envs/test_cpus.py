"""CPUs a process may use: affinity mask and cgroup quota (v1 and v2) from fake files, and
the busy-CPU reading from a fake /proc/stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from envs import cpus
from envs.cpus import allotted_cpus, busy_cpus, cgroup_cpu_quota


def _cgroup_v2(root: Path, quota: str, path: str = "/user.slice/job") -> Path:
    directory = root / path.lstrip("/")
    directory.mkdir(parents=True)
    (directory / "cpu.max").write_text(quota + "\n")
    proc = root / "proc_cgroup"
    proc.write_text(f"0::{path}\n")
    return proc


def test_affinity_mask_alone_gives_its_cpus(tmp_path):
    allotment = allotted_cpus({0, 2, 5}, cgroup_root=tmp_path, proc_cgroup=tmp_path / "none")
    assert (allotment.count, allotment.cpus, allotment.source) == (3, (0, 2, 5), "affinity")
    assert allotment.describe() == "3 CPUs (affinity)"


@pytest.mark.parametrize(
    ("quota", "expected"),
    [("150000 100000", 1), ("200000 100000", 2), ("50000 100000", 1), ("max 100000", 8)],
)
def test_cgroup_v2_quota_caps_the_affinity_mask(tmp_path, quota, expected):
    proc = _cgroup_v2(tmp_path, quota)
    allotment = allotted_cpus(set(range(8)), cgroup_root=tmp_path, proc_cgroup=proc)
    assert allotment.count == expected
    assert allotment.source == ("affinity" if quota.startswith("max") else "cgroup quota")


def test_a_quota_on_a_parent_cgroup_counts_and_the_smallest_wins(tmp_path):
    proc = _cgroup_v2(tmp_path, "max 100000", path="/kubepods/pod1/container")
    (tmp_path / "kubepods" / "pod1" / "cpu.max").write_text("300000 100000\n")
    (tmp_path / "kubepods" / "cpu.max").write_text("600000 100000\n")
    assert cgroup_cpu_quota(tmp_path, proc) == 3.0
    assert allotted_cpus(set(range(16)), cgroup_root=tmp_path, proc_cgroup=proc).count == 3


def test_cgroup_v1_cfs_quota(tmp_path):
    directory = tmp_path / "cpu,cpuacct" / "docker" / "abc"
    directory.mkdir(parents=True)
    (directory / "cpu.cfs_quota_us").write_text("250000\n")
    (directory / "cpu.cfs_period_us").write_text("100000\n")
    proc = tmp_path / "proc_cgroup"
    proc.write_text("5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n")
    assert cgroup_cpu_quota(tmp_path, proc) == 2.5
    assert allotted_cpus({0, 1, 2, 3}, cgroup_root=tmp_path, proc_cgroup=proc).count == 2
    (directory / "cpu.cfs_quota_us").write_text("-1\n")  # -1: no limit
    assert cgroup_cpu_quota(tmp_path, proc) is None


def test_unreadable_or_garbled_cgroup_files_mean_no_quota(tmp_path):
    proc = _cgroup_v2(tmp_path, "garbage")
    assert cgroup_cpu_quota(tmp_path, proc) is None
    proc.write_text("not a cgroup line\n")
    assert cgroup_cpu_quota(tmp_path, proc) is None
    assert cgroup_cpu_quota(tmp_path / "missing", tmp_path / "missing") is None


def test_the_real_machine_gives_at_least_one_cpu():
    allotment = allotted_cpus()
    assert 1 <= allotment.count <= max(1, len(allotment.cpus))


def _stat(busy: list[int], idle: list[int]) -> str:
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for i, (b, d) in enumerate(zip(busy, idle, strict=True)):
        lines.append(f"cpu{i} {b} 0 0 {d} 0 0 0 0 0 0")
    return "\n".join(lines) + "\n"


def test_busy_cpus_counts_the_busy_share_of_the_chosen_cpus(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    snapshots = iter([_stat([0, 0], [0, 0]), _stat([100, 0], [0, 100])])  # cpu0 fully busy, cpu1 idle
    monkeypatch.setattr(cpus, "_own_cpu_seconds", lambda: 0.0)  # this process used nothing meanwhile

    def read(path, chosen):  # each read of the fake /proc/stat returns the next snapshot
        stat.write_text(next(snapshots))
        return original(path, chosen)

    original = cpus._cpu_times
    monkeypatch.setattr(cpus, "_cpu_times", read)
    assert busy_cpus((0, 1), interval=0.01, proc_stat=stat) == pytest.approx(1.0)


def test_busy_cpus_subtracts_this_processes_own_work(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    snapshots = iter([_stat([0, 0], [0, 0]), _stat([100, 100], [0, 0])])  # both CPUs busy
    own = iter([0.0, 1.0])  # ... and this process used one CPU's worth of the elapsed second
    monkeypatch.setattr(cpus, "_own_cpu_seconds", lambda: next(own))
    clock = iter([0.0, 1.0])
    monkeypatch.setattr(cpus.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(cpus.time, "sleep", lambda s: None)

    original = cpus._cpu_times

    def read(path, chosen):
        stat.write_text(next(snapshots))
        return original(path, chosen)

    monkeypatch.setattr(cpus, "_cpu_times", read)
    assert busy_cpus((0, 1), proc_stat=stat) == pytest.approx(1.0)


def test_busy_cpus_on_the_real_machine_is_a_plausible_number():
    allotment = allotted_cpus()
    assert 0.0 <= busy_cpus(allotment.cpus, interval=0.05) <= (__import__("os").cpu_count() or 1) + 0.5
