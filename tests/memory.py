"""Memory accounting for the test suite: a pytest plugin that ``tests/conftest.py`` registers.

CI's machine has 24 GB and the whole run must stay under 10 GB (docs/testing.md), with two
pytest-xdist workers side by side. Per test module:

* A background thread samples, every ``SAMPLE_S`` seconds, the RSS of this process, the
  summed PSS of its process tree (training commands, sandboxes, vLLM and Ray workers the
  tests start; PSS splits a page between the processes that share it, so ten processes
  that load torch's libraries count them once, where summed RSS would count them ten
  times) and the machine's memory in use (total minus available).
* Budget: a module declares what its tests add at their peak to the process tree that runs
  them, ``pytestmark = pytest.mark.memory(gb=...)`` (else ``DEFAULT_MODULE_GB``), and
  under xdist it starts only once that fits in the memory pool beside the other workers
  (``tests/memory_pool.py``); the controller hands a free worker the first queued module that
  fits beside the others (``tests/memory_scheduler.py``), so a heavy module does not sit
  waiting behind another. A module whose tree grew by more than it declared is named.
* Leaks: when a module's last test ends (its module-scoped fixtures are gone), garbage is
  collected and glibc hands freed heap back (``malloc_trim``), then RSS is read again. A
  module that leaves its process more than ``TEAMGYM_TEST_RSS_GROWTH_MB`` (default
  ``DEFAULT_GROWTH_MB``) above where it found it holds memory nobody needs (an engine never
  shut down, a cache, a global list). A module that first imports torch, transformers or
  vLLM pays for their code once: ``IMPORT_ALLOWANCE_MB`` more.
* Either finding is printed in the terminal summary and fails the run when
  ``TEAMGYM_TEST_RSS_GUARD=fail`` (``.ci/run`` sets it).
* ``--memory-report PATH`` (or ``TEAMGYM_TEST_MEMORY_REPORT=PATH``) writes one JSON line per
  module to ``PATH.<worker>`` and prints the modules with the highest peaks and the whole
  run's peaks.

It prints nothing unless a module trips the guard or a report was asked for (the hygiene
test holds ``-q`` output to dots and one summary line).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from benchmarks.process_memory import tree_pss as process_tree_pss
from tests.memory_pool import DEFAULT_MODULE_GB, POOL_ENV, MemoryPool, pool_gb

SAMPLE_S = 0.5
DEFAULT_GROWTH_MB = 1024
IMPORT_ALLOWANCE_MB = 1536
GROWTH_ENV = "TEAMGYM_TEST_RSS_GROWTH_MB"
GUARD_ENV = "TEAMGYM_TEST_RSS_GUARD"
REPORT_ENV = "TEAMGYM_TEST_MEMORY_REPORT"
LIBRARIES = ("torch", "transformers", "vllm")  # big enough to earn IMPORT_ALLOWANCE_MB
MB = 1024 * 1024
GB = 1024 * MB


def tree_pss(process) -> int:
    """Bytes: PSS of ``process`` and every descendant (benchmarks/process_memory.py)."""
    return process_tree_pss(process.pid)


def system_used() -> int:
    """Bytes of the machine's memory in use (total minus available)."""
    import psutil

    memory = psutil.virtual_memory()
    return memory.total - memory.available


def release_freed_memory() -> None:
    """Collect garbage and hand freed heap back to the system (glibc), so RSS shows what is
    still referenced rather than what the allocator keeps for later."""
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc (musl): RSS then includes free heap
            pass


class PeakSampler:
    """A daemon thread that keeps the highest figures seen since ``reset`` (and ever)."""

    def __init__(self, process):
        self.process = process
        self._lock = threading.Lock()
        self.peak_self = self.peak_tree = 0
        self.run_peak_tree = self.run_peak_system = 0  # never reset: the whole session's peaks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="teamgym-rss-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def sample(self) -> None:
        try:
            own = self.process.memory_info().rss
        except Exception:  # noqa: BLE001 - a sampler must never end the run
            return
        tree, used = tree_pss(self.process), system_used()
        with self._lock:
            self.peak_self = max(self.peak_self, own)
            self.peak_tree = max(self.peak_tree, tree)
            self.run_peak_tree = max(self.run_peak_tree, self.peak_tree)
            self.run_peak_system = max(self.run_peak_system, used)

    def reset(self) -> tuple[int, int]:
        """The peaks (process RSS, tree PSS) since the last reset; starts a new window."""
        self.sample()
        with self._lock:
            peaks = (self.peak_self, self.peak_tree)
            self.peak_self = self.peak_tree = 0
        return peaks

    def stop(self) -> None:
        self._stop.set()


@dataclass
class ModuleMemory:
    """One module's figures (MB, seconds) on one worker."""

    module: str
    worker: str
    seconds: float
    waited_s: float
    declared_mb: float
    rss_start_mb: float
    rss_end_mb: float
    peak_self_mb: float
    peak_tree_mb: float
    first_imports: list[str]

    @property
    def added_mb(self) -> float:
        """What the module added to its tree at the peak (tree PSS over the process's start RSS)."""
        return self.peak_tree_mb - self.rss_start_mb

    @property
    def kept_mb(self) -> float:
        return self.rss_end_mb - self.rss_start_mb

    @property
    def allowed_kept_mb(self) -> float:
        bound = float(os.environ.get(GROWTH_ENV, DEFAULT_GROWTH_MB))
        return bound + (IMPORT_ALLOWANCE_MB if self.first_imports else 0)

    def findings(self) -> list[str]:
        out = []
        if self.added_mb > self.declared_mb:
            out.append(
                f"added {self.added_mb:.0f} MB at its peak but declares {self.declared_mb:.0f} MB: "
                "raise its pytest.mark.memory(gb=...) or make it lighter"
            )
        if self.kept_mb > self.allowed_kept_mb:
            out.append(
                f"kept {self.kept_mb:.0f} MB after its last test (RSS {self.rss_start_mb:.0f} -> "
                f"{self.rss_end_mb:.0f} MB; bound {self.allowed_kept_mb:.0f} MB, {GROWTH_ENV}): free what it "
                "holds when it ends"
            )
        return out


def _module_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


class MemoryGuard:
    """The plugin object (one per pytest process: the controller and each xdist worker)."""

    def __init__(self, config):
        import psutil

        self.config = config
        worker_input = getattr(config, "workerinput", None)
        self.is_controller = worker_input is None
        self.worker = worker_input["workerid"] if worker_input else "main"
        self.process = psutil.Process()
        self.sampler = PeakSampler(self.process)
        self.records: list[ModuleMemory] = []
        self.declared_gb: dict[str, float] = {}
        self._module: str | None = None
        self._module_start = self._waited = 0.0
        self._rss_start = 0
        self._loaded: set[str] = set()
        report = config.getoption("memory_report", None)
        self.report_path = Path(report) if report else None
        self._pool_dir: str | None = None
        self.pool = None
        if self.is_controller and config.getoption("numprocesses", None):  # xdist: workers share a pool
            self._pool_dir = tempfile.mkdtemp(prefix="teamgym-memory-pool-")
            os.environ[POOL_ENV] = self._pool_dir  # the workers start after this and inherit it
        elif not self.is_controller and os.environ.get(POOL_ENV):
            self.pool = MemoryPool(Path(os.environ[POOL_ENV]), pool_gb())

    # --------------------------------------------------------------- per module
    def pytest_collection_modifyitems(self, items):
        for item in items:
            mark = item.get_closest_marker("memory")
            gb = float(mark.kwargs["gb"]) if mark else DEFAULT_MODULE_GB
            module = _module_of(item)
            self.declared_gb[module] = max(self.declared_gb.get(module, 0.0), gb)
        if self.pool:  # for the controller's scheduler, which collects nothing itself
            self.pool.write_declarations(self.worker, self.declared_gb)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config, log):
        """``--dist loadfile`` (pyproject's default) under the pool: the memory-aware variant."""
        if self._pool_dir is None or config.getvalue("dist") != "loadfile":
            return None
        from tests.memory_scheduler import MemoryAwareScheduling

        return MemoryAwareScheduling(config, log, MemoryPool(Path(self._pool_dir), pool_gb()))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        module = _module_of(item)
        if module != self._module:
            self._begin(module)
        yield
        if nextitem is None or _module_of(nextitem) != module:
            self._end()

    def _begin(self, module: str) -> None:
        if self._module is not None:  # xdist can hand a module's tests out in several batches
            self._end()
        if not self.records:  # later modules start where the last one's _end released memory
            release_freed_memory()
        self._rss_start = self.process.memory_info().rss
        declared = self.declared_gb.get(module, DEFAULT_MODULE_GB)
        self._waited = 0.0
        # The pool counts this worker's share of the machine (PSS: the libraries both workers map
        # count half each), not its RSS, which would count them twice.
        if self.pool:
            self._waited = self.pool.acquire(self.worker, tree_pss(self.process) / GB + declared)
        self._module, self._module_start = module, time.perf_counter()
        self._loaded = {name for name in LIBRARIES if name in sys.modules}
        self.sampler.reset()

    def _end(self) -> None:
        if self._module is None:
            return
        peak_self, peak_tree = self.sampler.reset()
        release_freed_memory()
        rss_end = self.process.memory_info().rss
        if self.pool:
            self.pool.release(self.worker, tree_pss(self.process) / GB)
        record = ModuleMemory(
            module=self._module,
            worker=self.worker,
            seconds=round(time.perf_counter() - self._module_start, 2),
            waited_s=round(self._waited, 2),
            declared_mb=round(self.declared_gb.get(self._module, DEFAULT_MODULE_GB) * 1024, 1),
            rss_start_mb=round(self._rss_start / MB, 1),
            rss_end_mb=round(rss_end / MB, 1),
            peak_self_mb=round(max(peak_self, rss_end) / MB, 1),
            peak_tree_mb=round(max(peak_tree, rss_end) / MB, 1),
            first_imports=sorted(n for n in LIBRARIES if n in sys.modules and n not in self._loaded),
        )
        self.records.append(record)
        self._module = None
        if self.report_path is not None:
            with open(self._worker_file(), "a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(record)) + "\n")

    def _worker_file(self) -> Path:
        return self.report_path.with_name(f"{self.report_path.name}.{self.worker}")

    # ------------------------------------------------------------------ session
    def pytest_sessionstart(self, session):
        if self.report_path is not None and self.is_controller:
            for old in self.report_path.parent.glob(f"{self.report_path.name}.*"):
                old.unlink()

    def pytest_sessionfinish(self, session):
        self._end()
        self.sampler.sample()
        self.sampler.stop()
        offenders = self.offenders()
        if offenders and os.environ.get(GUARD_ENV) == "fail" and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if hasattr(self.config, "workeroutput"):  # an xdist worker: the controller reports
            self.config.workeroutput["teamgym_memory_offenders"] = [asdict(r) for r in offenders]

    def pytest_unconfigure(self, config):
        if self._pool_dir is not None:
            shutil.rmtree(self._pool_dir, ignore_errors=True)
            os.environ.pop(POOL_ENV, None)

    def offenders(self) -> list[ModuleMemory]:
        return [r for r in self.records if r.findings()]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):  # xdist controller: a worker's offenders
        for raw in getattr(node, "workeroutput", {}).get("teamgym_memory_offenders", []):
            self.records.append(ModuleMemory(**raw))

    def _all_records(self) -> list[ModuleMemory]:
        records = []
        for path in sorted(self.report_path.parent.glob(f"{self.report_path.name}.*")):
            for line in path.read_text(encoding="utf-8").splitlines():
                records.append(ModuleMemory(**json.loads(line)))
        return records

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if not self.is_controller:
            return
        write = terminalreporter.write_line
        offenders = self.offenders()
        if offenders:
            terminalreporter.section("memory guard", sep="-", red=True)
            for r in offenders:
                for finding in r.findings():
                    write(f"{r.module} [{r.worker}]: {finding}")
            if os.environ.get(GUARD_ENV) == "fail":
                write(f"{GUARD_ENV}=fail: the run fails")
        if self.report_path is None:
            return
        records = self._all_records()
        terminalreporter.section("memory per test module (top 12 by peak PSS of the process tree)", sep="-")
        write("   tree peak |   added / declared |  RSS start->end |  seconds (waited) | module [worker]")
        for r in sorted(records, key=lambda r: r.peak_tree_mb, reverse=True)[:12]:
            write(
                f"{r.peak_tree_mb:9.0f} MB | {r.added_mb:6.0f} / {r.declared_mb:5.0f} MB | "
                f"{r.rss_start_mb:5.0f}->{r.rss_end_mb:<5.0f} MB | {r.seconds:6.1f} s ({r.waited_s:5.1f}) | "
                f"{r.module} [{r.worker}]"
            )
        # Where CI's minutes go (its test run has a 30-minute budget): the longest modules.
        terminalreporter.section("time per test module (top 15 by seconds)", sep="-")
        for r in sorted(records, key=lambda r: r.seconds, reverse=True)[:15]:
            write(f"{r.seconds:7.1f} s | {r.module} [{r.worker}]")
        write(f"all {len(records)} modules: {sum(r.seconds for r in records) / 60:.1f} minutes summed")
        waited = sum(r.waited_s for r in records)
        write(
            f"whole run: peak PSS of the process tree {self.sampler.run_peak_tree / MB:.0f} MB, "
            f"peak memory in use on the machine {self.sampler.run_peak_system / MB:.0f} MB; "
            f"workers waited {waited:.0f} s for the memory pool ({pool_gb():g} GB)"
        )
        write(f"per-module lines: {self.report_path}.*")


def pytest_addoption(parser):
    parser.addoption(
        "--memory-report",
        metavar="PATH",
        default=os.environ.get(REPORT_ENV) or None,
        help=f"write per-module memory figures (JSON lines) to PATH.<worker> and print the top modules "
        f"(default: ${REPORT_ENV})",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "memory(gb): the most this module's tests add to the memory of the process tree that runs them, "
        f"GB (default {DEFAULT_MODULE_GB}; tests/memory.py)",
    )
    config.pluginmanager.register(MemoryGuard(config), "teamgym-memory-guard")
