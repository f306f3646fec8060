"""The sandbox benchmark runs, prints its table and returns sane figures (timings not asserted)."""

from __future__ import annotations

import math
import re
import shutil

import pytest

from benchmarks import sandbox as bench


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the isolated mode needs bubblewrap")
def test_tiny_run_prints_and_returns_positive_figures(capsys):
    rows = bench.main(["--n", "2", "--workers", "2"])
    out = capsys.readouterr().out
    assert [row["program"] for row in rows] == list(bench.PROGRAMS)
    for row in rows:
        figures = {key: value for key, value in row.items() if key != "program"}
        assert set(figures) == {
            "bare_s", "unshare_s", "fallback_s", "isolated_s", "iso_vs_unshare", "iso_vs_fallback",
            "fallback_pool_per_s", "isolated_pool_per_s",
        }  # fmt: skip
        assert all(math.isfinite(value) and value > 0 for value in figures.values()), row
        assert math.isclose(row["iso_vs_unshare"], row["isolated_s"] / row["unshare_s"])
        assert math.isclose(row["iso_vs_fallback"], row["isolated_s"] / row["fallback_s"])
    assert re.search(r"isolated: bwrap.*minfs.*budget", out)
    assert re.search(r"fallback: .*rlimits.*audit", out)
    for name in bench.PROGRAMS:
        assert re.search(rf"{name}(\s+[\d.]+x?){{8}}\n", out), name
