"""The learning benchmark's results (``benchmarks.learning``): per-arm means and standard
errors over seeds, the learning curves against steps or training minutes, the printed tables
and the PNG. Pure functions of the run records, so a results JSON can be re-reported."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

import envs
from benchmarks.tables import print_table
from trainers.clock import UNCAPPED_STEPS


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    array = np.asarray(values, dtype=np.float64)
    se = float(array.std(ddof=1) / np.sqrt(len(array))) if len(array) > 1 else 0.0
    return float(array.mean()), se


def minute_curve(runs: list[dict[str, Any]], every: float) -> dict[float, tuple[float, float]]:
    """Validation success (mean, s.e. over seeds) at each mark of ``every`` training minutes
    that every run evaluated at: a run evaluates after the step that passes a mark, so its
    evaluation counts for the last mark it passed."""
    per_run = [
        {round(every * int(at // every + 1e-9), 6): success for _, at, success in r["curve_minutes"]}
        for r in runs
    ]
    marks = sorted(set.intersection(*(set(curve) for curve in per_run)))
    return {mark: mean_se([curve[mark] for curve in per_run]) for mark in marks}


def summarise(
    runs: list[dict[str, Any]], arm_teams: dict[str, str], minutes_every: float = 0.0
) -> dict[str, dict[str, Any]]:
    """Per arm of ``arm_teams`` (arm -> the team it trains; the table's order): success before /
    after / gain as (mean, s.e.) over seeds, mean curves (against steps, and against training
    minutes: at ``minutes_every`` marks, else the seeds' mean minutes at each step), the
    --general difficulties, samples and times."""
    out: dict[str, dict[str, Any]] = {}
    for name, team in arm_teams.items():
        mine = [r for r in runs if r["arm"] == name]
        if not mine:
            continue
        # a run read back from the results JSON has its curve's steps as strings
        curves = [{int(step): success for step, success in r["curve"].items()} for r in mine]
        steps = sorted(set.intersection(*(set(curve) for curve in curves)))
        if minutes_every:
            by_minutes = minute_curve(mine, minutes_every)
        elif all("curve_minutes" in r for r in mine):  # at each step, the seeds' mean minutes
            at_step = [{step: minutes for step, minutes, _ in r["curve_minutes"]} for r in mine]
            by_minutes = {
                float(np.mean([at[s] for at in at_step])): mean_se([curve[s] for curve in curves])
                for s in steps
            }
        else:  # runs recorded before the minute curves
            by_minutes = {}
        difficulties = sorted(
            set.intersection(*(set(r.get("general", {})) & set(r.get("general_before", {})) for r in mine))
        )
        out[name] = {
            "team": team,
            "seeds": [r["seed"] for r in mine],
            "before": mean_se([r["before"] for r in mine]),
            "after": mean_se([r["after"] for r in mine]),
            "gain": mean_se([r["after"] - r["before"] for r in mine]),
            # every seed plays the same test tasks: the task-level s.e. of the mean is about
            # one seed's, so the seeds' mean of it is reported
            "after_task_se": float(np.mean([r["after_task_se"] for r in mine])),
            "test_tasks": mine[0]["test_tasks"],
            "curve": {s: mean_se([curve[s] for curve in curves]) for s in steps},
            "curve_minutes": by_minutes,
            "general": {
                d: {
                    # each seed's own warm start (one trained again on a new checkout may differ)
                    "before": mean_se([r["general_before"][d]["success"] for r in mine]),
                    "after": mean_se([r["general"][d]["success"] for r in mine]),
                    "after_task_se": float(np.mean([r["general"][d]["success_se"] for r in mine])),
                }
                for d in difficulties
            },
            # runs recorded before "steps" ran to their last evaluation
            "steps": mean_se([float(r.get("steps", max(c))) for r, c in zip(mine, curves, strict=True)]),
            "samples": float(np.mean([r["samples"] for r in mine])),
            "train_min": float(np.mean([r["phases"]["time/step"] for r in mine])) / 60,
            "wall_min": float(np.mean([r["wall_s"] for r in mine])) / 60,
            "phases_min": {p: float(np.mean([r["phases"][p] for r in mine])) / 60 for p in mine[0]["phases"]},
            # the machine's speed as the arm trained (runs recorded before it: None)
            "tokens_per_s": float(np.mean([r["tokens_per_s"] for r in mine]))
            if all("tokens_per_s" in r for r in mine)
            else None,
        }
    return out


def plot(summary: dict[str, dict[str, Any]], path: Path, title: str) -> Path | None:
    """Validation success per arm, mean +- 1 s.e. over seeds, against training minutes (or
    against steps for results recorded before the minute curves)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    by_minutes = all(arm.get("curve_minutes") for arm in summary.values())
    figure = Figure(figsize=(8.4, 4.2))
    axes = figure.subplots()
    # Arms that end equal (two tool arms at 1.0) would hide each other: each arm its own line
    # style and marker, and the legend outside the axes, where it covers no curve.
    styles = [("-", "o"), ("--", "s"), ("-.", "^"), (":", "D")]
    for index, (name, arm) in enumerate(summary.items()):
        linestyle, marker = styles[index % len(styles)]
        curve = arm["curve_minutes"] if by_minutes else arm["curve"]
        xs = sorted(curve)
        mean = np.array([curve[x][0] for x in xs])
        se = np.array([curve[x][1] for x in xs])
        count = len(arm["seeds"])
        label = f"{name} ({count} seed{'s' if count != 1 else ''})"
        axes.plot(xs, mean, linestyle=linestyle, marker=marker, label=label)
        axes.fill_between(xs, mean - se, mean + se, alpha=0.2)
    axes.set_xlabel(
        "training minutes (rollout + update; 0: the warm start)"
        if by_minutes
        else "training step (0: the warm start)"
    )
    axes.set_ylabel("validation success (greedy)")
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return path


def _fmt(mean_and_se: tuple[float, float] | list[float]) -> str:
    return f"{mean_and_se[0]:.3f} +- {mean_and_se[1]:.3f}"


def comparison_line(summary: dict[str, dict[str, Any]], first: str, other: str) -> str:
    """``first - other: diff +- s.e. (...)``: the difference of two arms' held-out success after
    training, in standard errors over seeds where both arms have them."""
    a, b = summary[first]["after"], summary[other]["after"]
    diff, se = a[0] - b[0], float(np.hypot(a[1], b[1]))
    if min(len(summary[first]["seeds"]), len(summary[other]["seeds"])) < 2:
        note = "no s.e. over seeds: an arm has one seed"
    elif se == 0:
        note = "s.e. 0: every seed of both arms ended equal"
    else:
        note = f"s.e.; {diff / se:+.1f} s.e."
    return f"{first} - {other}: {diff:+.3f} +- {se:.3f} ({note})"


def print_report(
    summary: dict[str, dict[str, Any]],
    args: argparse.Namespace,
    warm_min: dict[str, float],
    comparisons: tuple[tuple[str, str], ...],
) -> None:
    """The results table, the differences between arms (``comparisons``: first - second, with
    their standard error) and, with --general, the generalisation table."""
    header = [
        "arm",
        "seeds",
        "steps",
        "samples/run",
        "test success before",
        "test success after",
        "gain",
        "task s.e.",
        "train min",
        "gen",
        "learn",
        "tok/s",
    ]
    rows = [
        [
            name,
            str(len(arm["seeds"])),
            f"{arm['steps'][0]:.1f}",
            f"{arm['samples']:.0f}",
            _fmt(arm["before"]),
            _fmt(arm["after"]),
            _fmt(arm["gain"]),
            f"{arm['after_task_se']:.3f}",
            f"{arm['train_min']:.1f}",
            f"{arm['phases_min']['time/generate']:.1f}",
            f"{arm['phases_min']['time/learner']:.1f}",
            "-" if arm.get("tokens_per_s") is None else f"{arm['tokens_per_s']:.1f}",
        ]
        for name, arm in summary.items()
    ]
    budget = (
        f"{args.minutes:g} training minutes per arm"
        + (f" (at most {args.steps} steps)" if args.steps != UNCAPPED_STEPS else "")
        if args.minutes
        else f"{args.steps} RL steps x {args.tasks_per_step} tasks (single: x2)"
    )
    print(
        f"\nLearning benchmark: {args.env}, {args.model}, warm start "
        + ", ".join(f"{team} {minutes:.1f}" for team, minutes in warm_min.items())
        + " training min, "
        f"then {budget}, K={args.num_generations}, lr={args.lr}, passes={args.passes}; held-out test "
        f"success on {args.test_tasks} tasks from test index {envs.HELDOUT_TEST_START} (greedy), mean "
        f"+- s.e. over each arm's seeds; task s.e.: the standard error over those test tasks; curves: "
        f"{args.eval_split} success on {args.eval_tasks} tasks"
    )
    print_table(header, rows)
    for first, other in comparisons:
        if first in summary and other in summary:
            print(comparison_line(summary, first, other))
    print(
        "train min: the arm's training steps (rollout + update), evaluations excluded; gen / learn: its "
        "parts; tok/s: tokens generated per second of generation, the machine's speed as the arm trained "
        "(equal wall time is a fair budget only where the arms' tok/s agree)"
    )
    if args.general:
        print(
            f"\nGeneralisation (trained on the preset's difficulty only): held-out test success on "
            f"{args.general_tasks} tasks per difficulty, before (the warm start) -> after, mean +- s.e. "
            "over seeds"
        )
        general_rows = []
        for name, arm in summary.items():
            cells = [
                f"{_fmt(arm['general'][d]['before'])} -> {_fmt(arm['general'][d]['after'])}"
                if d in arm["general"]
                else "n/a"
                for d in args.general
            ]
            general_rows.append([name, *cells])
        print_table(["arm", *args.general], general_rows)
