"""PNG plots of a run directory, regenerated from its ``metrics.jsonl`` and ``eval.jsonl``.

``plot_run(run_dir)`` writes under ``run_dir/plots/``:

* ``train_reward.png``: every ``reward/<role>`` training metric vs step;
* ``train_success.png``: the training ``success`` and ``invalid_rate`` vs step;
* ``eval.png``: the in-run evaluations' ``success`` and ``invalid_rate`` (and ``<team>/success``,
  ``<team>/invalid_rate`` of a warm start's other teams) and every ``return/<role>`` vs step;
* ``train_loss.png``: a warm start's reply-token NLL (``nll``) and validation NLL (``val_nll``).

Rates are drawn on a 0..1 axis. A plot without data is skipped. Figures are built with
``matplotlib.figure.Figure`` and its Agg canvas rather than pyplot: no backend is switched
for the calling process (a notebook keeps its own), and no figure is registered anywhere,
so nothing accumulates over a long run.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainers.run.files import EVAL_FILE, METRICS_FILE, PLOTS_DIR, read_jsonl

__all__ = ["plot_run", "run_figures", "RATE_LABEL"]

_warned_matplotlib = False

Series = dict[str, tuple[list[int], list[float]]]


def _series(records: Iterable[dict[str, Any]], keys: Iterable[str]) -> Series:
    """(steps, values) of each key, sorted by step; null/non-numeric values are gaps and a
    repeated step keeps its last value."""
    by_key: dict[str, dict[int, float]] = {key: {} for key in keys}
    for record in records:
        step = record.get("step")
        if not isinstance(step, int):
            continue
        for key, points in by_key.items():
            value = record.get(key)
            if isinstance(value, int | float):
                points[step] = float(value)
    return {
        key: (sorted(points), [points[s] for s in sorted(points)]) for key, points in by_key.items() if points
    }


def _keys_with_prefix(records: Iterable[dict[str, Any]], prefix: str) -> list[str]:
    return sorted({key for record in records for key in record if key.startswith(prefix)})


RATE_LABEL = "rate"
"""The y label of a panel of rates (success, invalid replies): drawn on a 0..1 axis, so an
all-zero curve reads as zero rather than as noise on a -0.04..0.04 scale."""


def _save(panels: list[tuple[str, str, Series]], path: Path, *, markers: bool) -> None:
    """Draws one axes per panel (title, y label, series) side by side and writes the PNG
    atomically, so a viewer never opens a half-written file."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(6.4 * len(panels), 4.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, ylabel, series) in zip(axes, panels, strict=True):
        for label, (steps, values) in series.items():
            # A lone point of a bare line would draw nothing.
            marker = "o" if markers or len(steps) == 1 else None
            ax.plot(steps, values, label=label, marker=marker, markersize=4)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        if ylabel == RATE_LABEL:
            ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", dpi=100)
    os.replace(tmp, path)


Panel = tuple[str, str, Series]
"""(title, y label, series) of one axes."""


def run_figures(
    train: list[dict[str, Any]], evals: list[dict[str, Any]]
) -> list[tuple[str, list[Panel], bool]]:
    """The run's figures (module docstring) from its metrics and eval records: (file name,
    panels, markers) each; the PNGs and report.html's charts are both drawn from these."""
    figures: list[tuple[str, list[tuple[str, str, Series]], bool]] = []
    reward = _series(train, _keys_with_prefix(train, "reward/"))
    if reward:
        figures.append(("train_reward.png", [("Training reward per role", "mean reward", reward)], False))
    success = _series(train, ["success", "invalid_rate"])
    if success:
        figures.append(
            ("train_success.png", [("Training success and invalid actions", RATE_LABEL, success)], False)
        )
    nll = _series(train, ["nll", "val_nll"])
    if nll:
        figures.append(("train_loss.png", [("Reply-token NLL", "nats per token", nll)], True))
    eval_panels = []
    eval_rates = _series(
        evals,
        [
            "success",
            *(k for k in _keys_with_prefix(evals, "") if k.endswith("/success")),
            "invalid_rate",
            *(k for k in _keys_with_prefix(evals, "") if k.endswith("/invalid_rate")),
        ],
    )
    if eval_rates:
        eval_panels.append(("Evaluation success and invalid replies", RATE_LABEL, eval_rates))
    eval_returns = _series(evals, _keys_with_prefix(evals, "return/"))
    if eval_returns:
        eval_panels.append(("Evaluation return per role", "mean return", eval_returns))
    if eval_panels:
        # Markers: evaluations are few points, a bare line would hide where they are.
        figures.append(("eval.png", eval_panels, True))
    return figures


def plot_run(run_dir: str | Path) -> list[Path]:
    """Writes the run's plots (see the module docstring) into ``run_dir/plots/``.

    Args:
        run_dir: A run directory written by :class:`trainers.run.log.RunLogger`.

    Returns:
        The PNG paths written; ``[]`` when there is no data or matplotlib is not installed (it
        warns once then).
    """
    global _warned_matplotlib
    try:
        import matplotlib.figure  # noqa: F401  (imported lazily: plotting is optional)
    except ImportError as error:
        if not _warned_matplotlib:
            _warned_matplotlib = True
            warnings.warn(
                f"plots are off ({error}); `pip install matplotlib` to enable them. "
                "metrics.jsonl and eval.jsonl are still written.",
                RuntimeWarning,
                stacklevel=2,
            )
        return []

    run_dir = Path(run_dir)
    figures = run_figures(read_jsonl(run_dir / METRICS_FILE), read_jsonl(run_dir / EVAL_FILE))
    if not figures:
        return []
    plots_dir = run_dir / PLOTS_DIR
    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, panels, markers in figures:
        path = plots_dir / name
        _save(panels, path, markers=markers)
        written.append(path)
    return written
