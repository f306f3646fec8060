"""The suite's memory guard, memory pool and scheduler (tests/memory.py, tests/memory_pool.py,
tests/memory_scheduler.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from tests.conftest import SUBPROCESS_TIMEOUT_S
from tests.memory import GROWTH_ENV, GUARD_ENV, POOL_ENV, REPORT_ENV, ModuleMemory
from tests.memory_pool import MemoryPool

REPO = Path(__file__).resolve().parents[1]

LEAKY_MODULE = """
import pytest

pytestmark = pytest.mark.memory(gb=0.05)
KEPT = []


def test_keeps_a_buffer():
    KEPT.append(bytearray(300 * 1024 * 1024))  # touched pages: 300 MB of RSS, kept in a global
"""


def run_guarded(tmp_path, *args, **env):
    (tmp_path / "test_leaky.py").write_text(LEAKY_MODULE)
    clean = {k: v for k, v in os.environ.items() if k not in (REPORT_ENV, POOL_ENV, GUARD_ENV)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.memory", "-p", "no:cacheprovider", "-q",
         str(tmp_path / "test_leaky.py"), *args],
        cwd=REPO, env={**clean, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )  # fmt: skip


def test_a_module_that_keeps_memory_or_outgrows_its_declaration_fails_a_guarded_run(tmp_path):
    guarded = run_guarded(tmp_path, **{GUARD_ENV: "fail", GROWTH_ENV: "100"})
    assert guarded.returncode == 1, guarded.stdout[-2000:]
    out = guarded.stdout
    assert "test_leaky.py [main]: added" in out and "declares 51 MB" in out  # over its pytest.mark.memory
    assert "test_leaky.py [main]: kept" in out and "bound 100 MB" in out  # still held after its last test
    assert "1 passed" in out  # the test itself passed: the guard failed the run
    report = tmp_path / "memory.jsonl"
    unguarded = run_guarded(tmp_path, "--memory-report", str(report), **{GROWTH_ENV: "100"})
    assert unguarded.returncode == 0  # without TEAMGYM_TEST_RSS_GUARD=fail it only reports
    (line,) = (tmp_path / "memory.jsonl.main").read_text().splitlines()
    record = ModuleMemory(**json.loads(line))
    assert record.kept_mb > 250 and record.peak_tree_mb >= record.rss_end_mb
    assert "whole run: peak PSS of the process tree" in unguarded.stdout
    assert "test_leaky.py [main]" in unguarded.stdout.split("time per test module")[1]  # its seconds
    assert "all 1 modules:" in unguarded.stdout


def test_findings_name_what_to_change():
    fields = dict(module="m.py", worker="gw0", seconds=1.0, waited_s=0.0, first_imports=[])
    fine = ModuleMemory(declared_mb=1024, rss_start_mb=500, rss_end_mb=520, peak_self_mb=900,
                        peak_tree_mb=1400, **fields)  # fmt: skip
    assert fine.findings() == []
    heavy = ModuleMemory(declared_mb=1024, rss_start_mb=500, rss_end_mb=520, peak_self_mb=900,
                         peak_tree_mb=2000, **fields)  # fmt: skip
    assert heavy.findings() == [
        "added 1500 MB at its peak but declares 1024 MB: "
        "raise its pytest.mark.memory(gb=...) or make it lighter"
    ]
    importing = ModuleMemory(declared_mb=4096, rss_start_mb=300, rss_end_mb=1800, peak_self_mb=1900,
                             peak_tree_mb=1900, **{**fields, "first_imports": ["torch"]})  # fmt: skip
    assert importing.findings() == []  # torch's code is paid once, by the module that imports it


def blocked_acquire(pool, who, gb):
    """Start ``pool.acquire(who, gb)`` in a thread; returns (thread, event set once acquired)."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (pool.acquire(who, gb), done.set()), daemon=True)
    thread.start()
    return thread, done


def test_the_pool_holds_a_module_until_it_fits_beside_the_others(tmp_path):
    pool = MemoryPool(tmp_path, total_gb=8.0)
    pool.acquire("gw0", 6.0)
    pool.acquire("gw1", 2.0)  # fits beside: no wait
    pool.release("gw1")
    thread, done = blocked_acquire(pool, "gw1", 4.0)
    assert not done.wait(1.0)  # 6 + 4 > 8: it waits (it can only be late, never early)
    pool.release("gw0")
    thread.join(SUBPROCESS_TIMEOUT_S)
    assert done.is_set()
    pool.release("gw1")
    pool.acquire("gw0", 20.0)  # more than the whole pool: it takes the whole pool, alone
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["held"] == {"gw0": {"pid": os.getpid(), "gb": 8.0}}


def test_the_pool_serves_an_earlier_waiter_first_and_forgets_dead_workers(tmp_path):
    pool = MemoryPool(tmp_path, total_gb=8.0)
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(ended.stdout)
    state = {
        "held": {"gw9": {"pid": dead, "gb": 8.0}},  # a worker that died holding the pool
        "waiting": {"gw5": {"pid": os.getpid(), "gb": 7.5, "since": 0.0}},  # waits since long ago
    }
    (tmp_path / "state.json").write_text(json.dumps(state))
    thread, done = blocked_acquire(pool, "gw1", 1.0)
    assert not done.wait(1.0)  # 1 + 7.5 > 8: the earlier waiter goes first, dead gw9 or not
    state = json.loads((tmp_path / "state.json").read_text())
    assert "gw9" not in state["held"] and "gw1" in state["waiting"]
    pool.acquire("gw5", 7.5)  # the earlier waiter gets it at once (the dead worker holds nothing)
    pool.release("gw5")
    thread.join(SUBPROCESS_TIMEOUT_S)
    assert done.is_set()


class FakeNode:
    """What the scheduler reads of an xdist WorkerController: its gateway's id."""

    def __init__(self, worker):
        self.gateway = type("Gateway", (), {"id": worker})()


def scheduler_with(pool, queue, assigned):
    """A MemoryAwareScheduling whose xdist state is set directly (its choice is plain logic)."""
    from collections import OrderedDict

    from tests.memory_scheduler import MemoryAwareScheduling

    scheduler = object.__new__(MemoryAwareScheduling)
    scheduler.pool = pool
    scheduler.workqueue = OrderedDict((module, {f"{module}::t": False}) for module in queue)
    scheduler.assigned_work = assigned
    return scheduler


def test_the_scheduler_hands_out_the_first_module_that_fits_beside_the_other_workers(tmp_path):
    pool = MemoryPool(tmp_path, total_gb=9.0)
    pool.write_declarations("gw0", {"vllm.py": 7.0, "learning.py": 4.0, "other_learning.py": 4.0})
    gw0, gw1 = FakeNode("gw0"), FakeNode("gw1")
    queue = ["vllm.py", "other_learning.py", "light.py"]
    # gw0 has the learning module (4 GB + a fresh worker's 0.4) in hand, not yet started
    assigned = {gw0: {"learning.py": {"learning.py::t": False}}, gw1: {}}
    assert scheduler_with(pool, queue, assigned)._next_module(gw1) == "other_learning.py"
    # gw0 now holds 7.5 GB (a heavy module running): only the light one fits beside it
    pool.acquire("gw0", 7.5)
    assert scheduler_with(pool, queue, assigned)._next_module(gw1) == "light.py"
    # gw1 ended its last module holding 8 GB itself: nothing fits, it gets the head (and waits)
    pool.release("gw1", rss_gb=8.0)
    assert scheduler_with(pool, queue, assigned)._next_module(gw1) == "vllm.py"
    # another worker's finished modules count nothing
    pool.release("gw0")
    assigned = {gw0: {"learning.py": {"learning.py::t": True}}, gw1: {}}
    pool.release("gw1", rss_gb=0.5)
    assert scheduler_with(pool, queue, assigned)._next_module(gw1) == "vllm.py"


def test_a_worker_busy_with_a_long_module_is_handed_a_short_one(tmp_path, monkeypatch):
    from tests import memory_scheduler

    monkeypatch.setattr(memory_scheduler, "LONG_MODULES", ("learning.py", "long.py", "other_long.py"))
    pool = MemoryPool(tmp_path, total_gb=9.0)
    gw0, gw1 = FakeNode("gw0"), FakeNode("gw1")
    queue = ["long.py", "other_long.py", "light.py", "other_light.py"]
    # gw0 has just started the one-test learning module: xdist asks for its next one at once
    assigned = {gw0: {"learning.py": {"learning.py::t": False}}, gw1: {}}
    assert scheduler_with(pool, queue, assigned)._next_module(gw0) == "light.py"
    # gw1, busy with nothing long, takes the first long module
    assert scheduler_with(pool, queue, assigned)._next_module(gw1) == "long.py"
    # only long modules left: a busy worker still gets one (the queue must drain)
    assert scheduler_with(pool, ["long.py"], assigned)._next_module(gw0) == "long.py"
    # once the learning module is done, gw0 takes long modules again
    assigned = {gw0: {"learning.py": {"learning.py::t": True}}, gw1: {}}
    assert scheduler_with(pool, queue, assigned)._next_module(gw0) == "long.py"
