"""The sandbox benchmark runs, prints its table and returns sane figures (timings not asserted)."""

from __future__ import annotations

import math
import re

from benchmarks import sandbox as bench


def test_tiny_run_prints_and_returns_positive_figures(capsys):
    rows = bench.main(["--n", "2", "--workers", "2"])
    out = capsys.readouterr().out
    assert [row["program"] for row in rows] == list(bench.PROGRAMS)
    for row in rows:
        figures = {key: value for key, value in row.items() if key != "program"}
        assert set(figures) == {
            "bare_s", "bare_nosite_s", "sandbox_s", "overhead", "seq_per_s", "pool_per_s", "speedup"
        }  # fmt: skip
        assert all(math.isfinite(value) and value > 0 for value in figures.values()), row
        assert math.isclose(row["overhead"], row["sandbox_s"] / row["bare_s"])
        assert math.isclose(row["speedup"], row["pool_per_s"] / row["seq_per_s"])
    assert re.search(r"isolation: (namespaces|fallback): .*rlimits.*audit", out)
    for name in bench.PROGRAMS:
        assert re.search(rf"{name}(\s+[\d.]+x?){{7}}\n", out), name
