"""PhasePeaks reads which phase raised the process's peak memory, with real allocations (in a
fresh process: a test worker's peak is whatever an earlier test reached)."""

from __future__ import annotations

import json
import subprocess
import sys

PHASES = """
import json
import numpy as np
from trainers.runtime.peak_memory import PEAK_PREFIX, PhasePeaks, peak_rss_mb

peaks = PhasePeaks()
peaks.end("before")
block = np.ones(200 * 2**20 // 8)  # 200 MB, every page written
del block
peaks.end("big")
peaks.end("after")
print(json.dumps({phase: peaks.metrics()[PEAK_PREFIX + phase] for phase in ("before", "big", "after")}))
"""


def test_the_phase_that_allocates_raises_the_peak_and_later_phases_keep_it():
    out = subprocess.run([sys.executable, "-c", PHASES], capture_output=True, text=True, check=True).stdout
    mb = json.loads(out)
    assert mb["big"] >= mb["before"] + 150 and mb["after"] == mb["big"]
