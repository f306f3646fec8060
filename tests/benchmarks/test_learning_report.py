"""The learning benchmark's summary of its run records: means and standard errors over seeds,
curves against training minutes, the table's arm order (benchmarks/learning_report.py)."""

from __future__ import annotations

import pytest

from benchmarks.learning_report import mean_se, minute_curve, summarise


def test_mean_and_standard_error():
    assert mean_se([0.5]) == (0.5, 0.0)
    mean, se = mean_se([0.2, 0.4, 0.6])
    assert mean == pytest.approx(0.4) and se == pytest.approx(0.2 / 3**0.5)


def record(arm, seed, before, after, minutes):
    """One (arm, seed) as benchmarks.learning writes it, evaluated at steps 0, 4, 8."""
    return {
        "arm": arm,
        "seed": seed,
        "before": before,
        "after": after,
        "after_task_se": 0.04,
        "test_tasks": 128,
        "curve": {"0": before, "4": (before + after) / 2, "8": after},  # as read back from JSON
        "curve_minutes": [[0, 0.0, before], [4, minutes / 2, (before + after) / 2], [8, minutes, after]],
        "steps": 8,
        "general": {"hard": {"success": after / 2, "success_se": 0.02}},
        "general_before": {"hard": {"success": before / 2, "success_se": 0.02}},  # its own warm start's
        "samples": 100,
        "phases": {
            "time/step": 60.0 * minutes,
            "time/generate": 30.0 * minutes,
            "time/learner": 30.0 * minutes,
        },
        "wall_s": 120.0 * minutes,
    }


def test_summary_is_over_seeds_in_the_arms_order_with_each_arms_team():
    runs = [
        record("b", 0, 0.4, 0.6, 10.2),
        record("a", 0, 0.2, 0.3, 10.1),
        record("a", 1, 0.2, 0.5, 10.3),
    ]
    summary = summarise(runs, {"a": "team-a", "b": "team-b", "c": "team-c"}, minutes_every=5.0)
    assert list(summary) == ["a", "b"]  # the order given; an arm without runs is left out
    a = summary["a"]
    assert a["team"] == "team-a" and a["seeds"] == [0, 1]
    assert a["after"] == pytest.approx((0.4, 0.1)) and a["gain"] == pytest.approx((0.2, 0.1))
    assert a["curve"] == {0: (0.2, 0.0), 4: pytest.approx((0.3, 0.05)), 8: pytest.approx((0.4, 0.1))}
    # each run's evaluation counts for the last 5-minute mark it passed
    assert a["curve_minutes"] == {
        0.0: (0.2, 0.0),
        5.0: pytest.approx((0.3, 0.05)),
        10.0: pytest.approx((0.4, 0.1)),
    }
    assert a["general"]["hard"]["after"] == pytest.approx((0.2, 0.05))
    assert a["general"]["hard"]["before"] == pytest.approx((0.1, 0.0))
    assert a["train_min"] == pytest.approx(10.2) and summary["b"]["steps"] == (8.0, 0.0)


def test_minute_curve_keeps_only_the_marks_every_run_reached():
    short = record("a", 0, 0.2, 0.4, 6.0)  # evaluated at 0, 3 and 6 minutes
    long = record("a", 1, 0.2, 0.6, 12.0)  # at 0, 6 and 12
    assert sorted(minute_curve([short, long], 5.0)) == [0.0, 5.0]


def test_the_machines_speed_per_arm_is_its_runs_mean_tokens_per_s_and_absent_for_old_records():
    fast, slow = record("a", 0, 0.2, 0.3, 10.0), record("a", 1, 0.2, 0.3, 10.0)
    fast["tokens_per_s"], slow["tokens_per_s"] = 20.0, 10.0  # the same work on a slower machine
    old = record("b", 0, 0.2, 0.3, 10.0)  # recorded before the reading existed
    summary = summarise([fast, slow, old], {"a": "single", "b": "single"})
    assert summary["a"]["tokens_per_s"] == pytest.approx(15.0)
    assert summary["b"]["tokens_per_s"] is None
