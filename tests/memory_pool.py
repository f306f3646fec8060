"""A memory budget shared by the pytest processes of one run (pytest-xdist workers).

Each test module declares how much memory its tests add, at their peak, to the process
that runs them and its children: ``pytestmark = pytest.mark.memory(gb=...)`` (undeclared:
``DEFAULT_MODULE_GB``). Before a worker starts a module it asks the pool for what it holds
now (its PSS: its share of the machine's memory) plus that declaration, and waits until that
fits beside what the other workers hold. So two heavy modules (a vLLM engine, a learning
run) never run at once, while light modules run beside anything. ``tests/memory.py``
measures every module and fails CI when one adds more than it declared, so the
declarations stay true.

Why not one worker per N GB: most modules take a few hundred MB and a few take 5-8 GB; a
fixed split would either idle a core or let two heavy modules meet. The pool is a JSON file
under an exclusive ``fcntl`` lock (POSIX; elsewhere every module runs as if alone): entries
of processes that died are dropped, and a worker that waits is served before a later one,
so a heavy module is not starved by a stream of light ones.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

POOL_ENV = "TEAMGYM_TEST_MEMORY_POOL"  # the pool's directory, set by the controller for its workers
POOL_GB_ENV = "TEAMGYM_TEST_MEMORY_GB"
DEFAULT_POOL_GB = 9.0
"""What the test processes may hold together, GB: CI's budget is 10 GB for the machine, which
idles at ~0.5 GB; the declarations are rounded-up peaks, so this much lets the two learning
tests (4 GB each) run side by side and keeps a vLLM module (7 GB) beside light ones only."""
DEFAULT_MODULE_GB = 0.5
"""What an undeclared module may add to its process tree at its peak, GB (76 of the 79
undeclared modules added under 0.45 GB in CI on 2026-11-27; the three above declare 1). Kept
small so that a heavy module fits beside light ones: at 1 GB each, a vLLM module never did."""
POLL_S = 0.2

try:
    import fcntl
except ImportError:  # not POSIX: no pool (each module runs as if alone)
    fcntl = None


def pool_gb() -> float:
    return float(os.environ.get(POOL_GB_ENV, DEFAULT_POOL_GB))


class MemoryPool:
    """The budget in ``directory`` (``state.json`` under ``lock``), shared by ``total_gb``."""

    def __init__(self, directory: Path, total_gb: float) -> None:
        self.directory = Path(directory)
        self.total_gb = total_gb
        self.state_path = self.directory / "state.json"
        self.lock_path = self.directory / "lock"

    @contextmanager
    def _locked(self):
        with open(self.lock_path, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield self._read()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict:
        try:
            state = json.loads(self.state_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            state = {}
        state.setdefault("held", {})
        state.setdefault("waiting", {})
        state.setdefault("idle_rss_gb", {})
        for kind in ("held", "waiting"):  # a worker that died holds nothing
            state[kind] = {who: entry for who, entry in state[kind].items() if _alive(entry["pid"])}
        return state

    def _write(self, state: dict) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.state_path)

    def acquire(self, who: str, gb: float) -> float:
        """Hold ``gb`` (at most the whole pool) for ``who``; returns the seconds it waited."""
        if fcntl is None:
            return 0.0
        gb = min(gb, self.total_gb)
        started = time.monotonic()
        since = None
        while True:
            with self._locked() as state:
                if since is None:  # the time this worker's wait began (kept if it was waiting already)
                    since = state["waiting"].get(who, {}).get("since", time.time())
                others = sum(e["gb"] for w, e in state["held"].items() if w != who)
                earlier = sum(e["gb"] for w, e in state["waiting"].items() if w != who and e["since"] < since)
                if others + gb + earlier <= self.total_gb + 1e-9:
                    state["held"][who] = {"pid": os.getpid(), "gb": gb}
                    state["waiting"].pop(who, None)
                    self._write(state)
                    return time.monotonic() - started
                state["waiting"][who] = {"pid": os.getpid(), "gb": gb, "since": since}
                self._write(state)
            time.sleep(POLL_S)

    def release(self, who: str, rss_gb: float = 0.0) -> None:
        """End ``who``'s hold; ``rss_gb``: what its process still holds (the scheduler's estimate
        of where that worker's next module starts)."""
        if fcntl is None:
            return
        with self._locked() as state:
            state["held"].pop(who, None)
            state["idle_rss_gb"][who] = rss_gb
            self._write(state)

    def snapshot(self) -> dict:
        """The state: ``held`` {worker: {pid, gb}}, ``waiting`` likewise, ``idle_rss_gb`` {worker: GB}."""
        if fcntl is None:
            return self._read()
        with self._locked() as state:
            return state

    # Declarations: each worker writes what its collection declares (module -> GB); the
    # controller's scheduler (tests/memory_scheduler.py), which collects nothing, reads them.
    def write_declarations(self, who: str, declared_gb: dict[str, float]) -> None:
        tmp = self.directory / f".declared.{who}.tmp"
        tmp.write_text(json.dumps(declared_gb))
        os.replace(tmp, self.directory / f"declared.{who}.json")

    def declarations(self) -> dict[str, float]:
        merged: dict[str, float] = {}
        for path in sorted(self.directory.glob("declared.*.json")):
            try:
                merged.update(json.loads(path.read_text()))
            except (FileNotFoundError, json.JSONDecodeError):  # replaced as it was read: skip it
                pass
        return merged


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
