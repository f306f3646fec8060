"""What an evaluation leaves behind: cells with mean +- standard error, the results file,
Markdown tables and PNG plots.

A ``Cell`` is one (team row, env, difficulty): the metrics of each seed and their mean and
standard error over seeds (``s.e. = std(ddof=1) / sqrt(seeds)``; none with one seed), and
for success also the standard error over the tasks played (``Cell.task_se``), shown in
brackets: with greedy decoding the seeds differ only in their tasks, so the task-level s.e.
is the one that says how far the number would move on other tasks.
Metrics a seed could not define (``turns_to_success`` without a solved episode) are NaN
there and are left out of that metric's mean and s.e. In JSON, NaN is written as null.

Markdown: one table per metric, rows = teams, columns = envs (one column per difficulty
when several are evaluated). Plots (``plots/``): grouped bars of success, invalid-action
rate and tokens per episode with s.e. error bars; pass@k against k (when ``--samples`` >
1); success against difficulty (when several difficulties were evaluated).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trainers.run.files import atomic_write_text

__all__ = [
    "Cell",
    "Column",
    "summarize",
    "seed_spread",
    "markdown_tables",
    "write_results",
    "write_plots",
    "to_json",
]

TABLE_METRICS = ("success", "pass@", "invalid_rate", "turns_to_success", "tokens_per_episode", "return/")
RATE_METRICS = ("success", "invalid_rate")
METRIC_TITLES = {
    "success": "success rate",
    "invalid_rate": "invalid-action rate (share of turns)",
    "turns_to_success": "turns to success (solved episodes; a turn = one cycle of the roles)",
    "tokens_per_episode": "generated tokens per episode",
}
# Tables only evaluations of some envs have (benchmarks.game_probes): key -> (title, digits).
PROBE_TABLES = {
    "exploitability": (
        "Kuhn poker: exploitability of the first seat's policy (chips/hand a best response wins; "
        "Nash 0, always-bet 0.333, uniform 0.458)",
        3,
    ),
    "chips_vs_nash": ("Kuhn poker: chips/hand against the Nash policy (seat-averaged, exact; Nash 0)", 3),
    "contribution_rate": ("public goods: share of the endowment contributed (SPNE 1)", 3),
    "welfare_ratio": ("public goods: welfare over the SPNE welfare (full contribution)", 3),
    "free_rider_gain": (
        "public goods: best unilateral free-rider's gain over full contribution (rules; < 0)",
        2,
    ),
    "steps_to_success": ("ALFWorld: the actor's commands in won episodes", 1),
    "invalid_command_rate": ("ALFWorld: share of the actor's commands that were not admissible", 3),
    "score": ("WebShop: score (mean purchase reward x 100; no purchase scores 0)", 1),
    "purchase_rate": ("WebShop: share of episodes that bought something", 3),
    "steps": ("WebShop: the shopper's actions per episode", 1),
    "invalid_action_rate": ("WebShop: share of the shopper's actions that changed nothing", 3),
}
# ALFWorld's success per task type (benchmarks.game_probes), in one table.
TASK_TYPE_KEYS = ("pick", "look", "clean", "heat", "cool", "pick_two")


@dataclass(frozen=True)
class Column:
    """One env column: the env id and difficulty (``None``: the env's default / no sizes)."""

    env_id: str
    difficulty: str | None = None

    @property
    def label(self) -> str:
        return self.env_id + (f" ({self.difficulty})" if self.difficulty else "")


@dataclass
class Cell:
    """One (row, column): the per-seed metrics, or why the row cannot play the env."""

    row: str
    column: Column
    seeds: list[int] = field(default_factory=list)
    per_seed: list[dict[str, float]] = field(default_factory=list)
    tasks: list[list[int]] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0

    @property
    def mean(self) -> dict[str, float]:
        return summarize(self.per_seed)[0]

    @property
    def se(self) -> dict[str, float]:
        return summarize(self.per_seed)[1]

    @property
    def task_se(self) -> float:
        """Standard error of the mean success over every task the seeds played: each seed's
        ``success_se`` (over its block of tasks) combined as independent strata,
        sqrt(sum se^2) / seeds. NaN when the seeds did not report it (ladder cells)."""
        values = [m["success_se"] for m in self.per_seed if "success_se" in m]
        if not values or len(values) != len(self.per_seed):
            return float("nan")
        return float(math.sqrt(sum(v * v for v in values)) / len(values))


def summarize(per_seed: Sequence[dict[str, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Mean and standard error over seeds of every metric (NaN values left out)."""
    keys = sorted({key for metrics in per_seed for key in metrics})
    mean, se = {}, {}
    for key in keys:
        values = np.array([m[key] for m in per_seed if key in m and not math.isnan(m[key])], dtype=float)
        mean[key] = float(values.mean()) if len(values) else float("nan")
        se[key] = float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")
    return mean, se


def to_json(value: Any) -> Any:
    """JSON-safe copy: NaN/inf -> None, tuples -> lists, dataclass-free plain data."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def _cell_json(cell: Cell) -> dict[str, Any]:
    mean, se = summarize(cell.per_seed)
    return to_json(
        {
            "row": cell.row,
            "env": cell.column.env_id,
            "difficulty": cell.column.difficulty,
            "skipped": cell.skipped,
            "seeds": cell.seeds,
            "task_seeds": cell.tasks,
            "seconds": round(cell.seconds, 3),
            "mean": mean,
            "se": se,
            "per_seed": cell.per_seed,
        }
    )


def _fmt(mean: float, se: float, digits: int) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.{digits}f}" + ("" if math.isnan(se) else f" ± {se:.{digits}f}")


def _table(title: str, rows: list[str], columns: list[Column], cells: dict, text_of) -> str:
    lines = [f"### {title}", "", "| team | " + " | ".join(c.label for c in columns) + " |"]
    lines.append("|---" * (len(columns) + 1) + "|")
    for row in rows:
        lines.append(f"| {row} | " + " | ".join(text_of(cells[row, c]) for c in columns) + " |")
    return "\n".join(lines)


def _metric_text(key: str, digits: int):
    def text(cell: Cell) -> str:
        if cell.skipped:
            return "n/a"
        mean, se = summarize(cell.per_seed)
        if key not in mean:
            return "-"
        return _fmt(mean[key], se.get(key, float("nan")), digits)

    return text


def _success_text(cell: Cell) -> str:
    """'0.286 ± 0.073 [± 0.033]': mean ± s.e. over seeds [± s.e. over tasks]."""
    text = _metric_text("success", 3)(cell)
    if cell.skipped or math.isnan(cell.task_se) or text == "-":
        return text
    return f"{text} [± {cell.task_se:.3f}]"


def _task_type_text(cell: Cell) -> str:
    if cell.skipped:
        return "n/a"
    mean, se = summarize(cell.per_seed)
    parts = []
    for name in TASK_TYPE_KEYS:
        key = f"success/{name}"
        parts.append(f"{name} " + (_fmt(mean[key], se.get(key, float("nan")), 2) if key in mean else "-"))
    return ", ".join(parts)


def _returns_text(cell: Cell) -> str:
    if cell.skipped:
        return "n/a"
    mean = summarize(cell.per_seed)[0]
    parts = [f"{k.split('/', 1)[1]} {v:+.3f}" for k, v in mean.items() if k.startswith("return/")]
    return ", ".join(parts) or "-"


def _outcomes_text(cell: Cell) -> str:
    """Per seat: win / draw / loss rates, e.g. ``first 0.50/0.25/0.25`` (games only)."""
    if cell.skipped:
        return "n/a"
    mean = summarize(cell.per_seed)[0]
    seats = [k.split("/", 1)[1] for k in mean if k.startswith("win/")]
    results = ("win", "draw", "loss")
    parts = [f"{seat} " + "/".join(f"{mean.get(f'{r}/{seat}', 0.0):.2f}" for r in results) for seat in seats]
    return ", ".join(parts) or "-"


def _ladder_text(cell: Cell) -> str:
    """Per opponent: the model's win / draw / loss rates over both seats (ladder rows only)."""
    if cell.skipped:
        return "n/a"
    mean, se = summarize(cell.per_seed)
    opponents = [k.split("/")[1] for k in mean if k.startswith("vs/") and k.endswith("/win")]
    parts = []
    for opponent in opponents:
        rates = "/".join(f"{mean[f'vs/{opponent}/{r}']:.2f}" for r in ("win", "draw", "loss"))
        error = se.get(f"vs/{opponent}/win", float("nan"))
        parts.append(f"{opponent} {rates}" + ("" if math.isnan(error) else f" (win ± {error:.2f})"))
    return ", ".join(parts) or "-"


def _elo_text(cell: Cell) -> str:
    """Every player's Elo on the ladder, the model's with its standard error."""
    if cell.skipped:
        return "n/a"
    mean, se = summarize(cell.per_seed)
    players = sorted((k.split("/", 1)[1] for k in mean if k.startswith("elo/")), key=lambda p: p != "model")
    parts = []
    for player in players:
        error = se.get(f"elo/{player}", float("nan"))
        spread = "" if math.isnan(error) or player == "random" else f" ± {error:.0f}"
        parts.append(f"{player} {mean[f'elo/{player}']:+.0f}{spread}")
    return ", ".join(parts) or "-"


def markdown_tables(cells: Sequence[Cell], rows: Sequence[str], columns: Sequence[Column], note: str) -> str:
    """Every metric table (rows = teams, columns = envs); ``note`` goes under the heading."""
    by_key = {(cell.row, cell.column): cell for cell in cells}
    rows, columns = list(rows), list(columns)
    keys = sorted({k for cell in cells for m in cell.per_seed for k in m if k.startswith("pass@")},
                  key=lambda k: int(k.split("@")[1]))  # fmt: skip
    pass_keys = keys[1:] if len(keys) > 1 else []  # pass@1 equals success
    parts = [note, ""]
    parts.append(_table(METRIC_TITLES["success"], rows, columns, by_key, _success_text))
    for key in pass_keys:
        parts += ["", _table(f"{key} (unbiased estimator)", rows, columns, by_key, _metric_text(key, 3))]
    for key, digits in (("invalid_rate", 3), ("turns_to_success", 2), ("tokens_per_episode", 1)):
        parts += ["", _table(METRIC_TITLES[key], rows, columns, by_key, _metric_text(key, digits))]
    parts += ["", _table("mean return per role", rows, columns, by_key, _returns_text)]
    if any(k.startswith("win/") for cell in cells for m in cell.per_seed for k in m):
        title = "win / draw / loss per seat (games; a game cut off before its end is none)"
        parts += ["", _table(title, rows, columns, by_key, _outcomes_text)]
    if any(k.startswith("vs/") for cell in cells for m in cell.per_seed for k in m):
        title = "ladder: the model's win / draw / loss against each opponent, half the games in each seat"
        parts += ["", _table(title, rows, columns, by_key, _ladder_text)]
        title = "Elo on the ladder (Bradley-Terry over every pairing, both seats; random = 0)"
        parts += ["", _table(title, rows, columns, by_key, _elo_text)]
    if any(k.startswith("success/") for cell in cells for m in cell.per_seed for k in m):
        title = "ALFWorld: success per task type (mean +- s.e. over seeds; - : no task of that type)"
        parts += ["", _table(title, rows, columns, by_key, _task_type_text)]
    for key, (title, digits) in PROBE_TABLES.items():
        if any(key in m for cell in cells for m in cell.per_seed):
            parts += ["", _table(title, rows, columns, by_key, _metric_text(key, digits))]
    skipped = [cell for cell in cells if cell.skipped]
    if skipped:
        parts += ["", "n/a cells:", ""]
        parts += [f"- {cell.row} on {cell.column.label}: {cell.skipped}" for cell in skipped]
    return "\n".join(parts) + "\n"


def write_results(
    out_dir: Path, header: dict[str, Any], cells: Sequence[Cell], markdown: str | None = None
) -> Path:
    """Writes ``results.json`` (header: config, versions, models, envs; then every cell) and,
    when given, ``results.md``, each atomically; returns the JSON path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = {**to_json(header), "cells": [_cell_json(cell) for cell in cells]}
    path = out_dir / "results.json"
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    if markdown is not None:
        atomic_write_text(out_dir / "results.md", markdown)
    return path


# ---------------------------------------------------------------------------- plots
def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _save(fig: Any, path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fig.savefig(tmp, format="png", dpi=110)
    os.replace(tmp, path)


def _bars(cells: dict, rows: list[str], columns: list[Column], key: str, title: str, path: Path) -> None:
    from matplotlib.figure import Figure

    # Width: about 0.55 in per bar plus room for the legend on the right.
    fig = Figure(figsize=(4.5 + max(3.0, 0.55 * len(columns) * len(rows)), 4.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / max(1, len(rows))
    x = np.arange(len(columns))
    for i, row in enumerate(rows):
        means, errors = [], []
        for column in columns:
            cell = cells[row, column]
            mean, se = summarize(cell.per_seed) if not cell.skipped else ({}, {})
            means.append(mean.get(key, np.nan))
            errors.append(se.get(key, np.nan))
        # One seed has no standard error: no error bars, rather than bars of zero height.
        yerr = np.nan_to_num(errors) if any(not math.isnan(e) for e in errors) else None
        ax.bar(x + (i - (len(rows) - 1) / 2) * width, means, width, yerr=yerr, capsize=3, label=row)
    ax.set_xticks(x, [c.label for c in columns], rotation=15 if len(columns) > 3 else 0)
    ax.set_title(title)
    ax.set_ylabel(key)
    if key in RATE_METRICS:
        ax.set_ylim(0.0, 1.05)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)


def _curves(panels: list[tuple[str, list[str], dict[str, tuple[list[float], list[float], list[float]]]]],
            xlabel: str, ylabel: str, path: Path) -> None:  # fmt: skip
    """One axes per panel (title, x tick labels, row -> (x, mean, se)) with error-bar curves."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.5 + 4.5 * len(panels), 4.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, ticks, series) in zip(axes, panels, strict=True):
        for row, (xs, means, errors) in series.items():
            yerr = np.nan_to_num(errors) if any(not math.isnan(e) for e in errors) else None
            ax.errorbar(xs, means, yerr=yerr, marker="o", capsize=3, label=row)
        if ticks:
            ax.set_xticks(range(len(ticks)), ticks)
        else:  # numeric x (k of pass@k): a tick at every measured point
            ax.set_xticks(sorted({x for xs, _, _ in series.values() for x in xs}))
        ax.set_ylim(0.0, 1.05)  # both curves are rates
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _save(fig, path)


def seed_spread(seeds: Sequence[int]) -> str:
    """What the error bars and the ± mean: 'mean ± s.e. over 3 seeds (0, 1, 2)', or, with one
    seed, that there is no standard error."""
    listed = ", ".join(map(str, seeds))
    if len(seeds) > 1:
        return f"mean ± s.e. over {len(seeds)} seeds ({listed})"
    return f"one seed ({listed}), so no standard error (--seeds 0 1 2 gives mean ± s.e.)"


def write_plots(
    out_dir: Path, cells: Sequence[Cell], rows: Sequence[str], columns: Sequence[Column]
) -> list[Path]:
    """Writes the PNG plots (module docstring) under ``out_dir/plots``; [] without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return []
    plots = out_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    by_key = {(cell.row, cell.column): cell for cell in cells}
    rows, columns = list(rows), list(columns)
    written = []
    spread = seed_spread(max((cell.seeds for cell in cells), key=len, default=[]))
    for key in ("success", "invalid_rate", "tokens_per_episode"):
        path = plots / f"{key}.png"
        _bars(by_key, rows, columns, key, f"{METRIC_TITLES[key]}\n{spread}", path)
        written.append(path)
    pass_keys = sorted({k for c in cells for m in c.per_seed for k in m if k.startswith("pass@")},
                       key=lambda k: int(k.split("@")[1]))  # fmt: skip
    if len(pass_keys) > 1:
        panels = []
        for column in columns:
            series = {}
            for row in rows:
                cell = by_key[row, column]
                if cell.skipped:
                    continue
                mean, se = summarize(cell.per_seed)
                ks = [int(k.split("@")[1]) for k in pass_keys]
                series[row] = (ks, [mean[k] for k in pass_keys], [se[k] for k in pass_keys])
            panels.append((column.label, [], series))
        path = plots / "pass_at_k.png"
        _curves(panels, "k (samples drawn per task)", "pass@k", path)
        written.append(path)
    env_ids = list(dict.fromkeys(c.env_id for c in columns))
    if any(sum(c.env_id == env_id for c in columns) > 1 for env_id in env_ids):
        panels = []
        for env_id in env_ids:
            env_columns = [c for c in columns if c.env_id == env_id]
            series = {}
            for row in rows:
                points = [
                    (i, by_key[row, c]) for i, c in enumerate(env_columns) if not by_key[row, c].skipped
                ]
                if points:
                    stats = [summarize(cell.per_seed) for _, cell in points]
                    series[row] = (
                        [i for i, _ in points],
                        [m["success"] for m, _ in stats],
                        [s["success"] for _, s in stats],
                    )
            panels.append((env_id, [c.difficulty or "default" for c in env_columns], series))
        path = plots / "difficulty.png"
        _curves(panels, "difficulty", "success rate", path)
        written.append(path)
    return written
