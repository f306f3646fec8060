"""The step's machine readings (``machine/*``): what they contain and that they add up."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SUBPROCESS_TIMEOUT_S
from trainers.runtime.machine_load import MACHINE_PREFIX, MachineLoad

REPO = Path(__file__).resolve().parents[3]


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(i * i for i in range(1000))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_busy_step_is_seen_busy_and_the_shares_add_up():
    load = MachineLoad()
    _busy(0.3)  # 30 clock ticks at Linux's usual 100 Hz
    metrics = load.metrics()
    shares = [metrics[f"{MACHINE_PREFIX}cpu_{k}"] for k in ("user", "system", "iowait", "idle", "steal")]
    assert sum(shares) == pytest.approx(1.0, abs=0.01)
    assert all(0 <= s <= 1 for s in shares)
    # one busy thread: this process had some of the CPUs (how much depends on what else runs)
    assert metrics[f"{MACHINE_PREFIX}process_cpu_share"] > 0.02
    assert metrics[f"{MACHINE_PREFIX}major_faults"] >= 0


def test_a_sleeping_step_used_almost_no_cpu_of_its_own():
    # In a fresh interpreter: the share counts every thread of the process, and a pytest worker
    # still holds threads from earlier tests (torch pools, Ray, vLLM) that may be running.
    script = (
        "import time\n"
        "from trainers.runtime.machine_load import MACHINE_PREFIX, MachineLoad\n"
        "load = MachineLoad()\n"
        "time.sleep(0.3)\n"
        "print(load.metrics()[MACHINE_PREFIX + 'process_cpu_share'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )  # fmt: skip
    assert float(out.stdout) < 0.05
