"""The report's SVG charts: tick values and which points are drawn."""

from __future__ import annotations

import math

import pytest

from trainers.run.report.charts import _nice_ticks, line_chart


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.0, 1.0, [0.0, 0.25, 0.5, 0.75, 1.0]),
        (3.0, 17.0, [0.0, 5.0, 10.0, 15.0, 20.0]),
        (-0.3, 0.1, [-0.3, -0.2, -0.1, 0.0, 0.1]),
        (2.0, 2.0, [2.0, 2.25, 2.5, 2.75, 3.0]),
    ],
)
def test_ticks_are_round_and_cover_the_range(low, high, expected):
    assert _nice_ticks(low, high) == expected


@pytest.mark.parametrize(
    ("low", "high"), [(0.19375, 0.19375000000000003), (1e6, 1e6 + 1e-9), (-5.0, math.nextafter(-5.0, 0))]
)
def test_a_range_narrower_than_float_rounding_gets_a_few_ticks(low, high):
    """ALFWorld's run: two evaluations' mean returns equal but for their last bit; the step from
    that range did not move the tick it was added to, and the report's tick loop grew until the
    kernel stopped the training process (24 GB)."""
    ticks = _nice_ticks(low, high)
    assert 2 <= len(ticks) <= 7
    assert ticks[0] <= low and ticks[-1] >= high


def test_a_chart_of_such_values_and_of_missing_ones_is_drawn():
    chart = line_chart("mean return", "return", {"return/actor": ([0, 6], [0.19375, 0.19375000000000003])})
    assert chart is not None and len(chart.series[0].points) == 2 and len(chart.y_ticks) <= 7
    chart = line_chart("turns", "turns", {"turns": ([0, 1, 2], [float("nan"), 4.0, float("inf")])})
    assert [p.step for p in chart.series[0].points] == [1]
    assert line_chart("turns", "turns", {"turns": ([0], [float("nan")])}) is None
