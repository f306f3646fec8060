"""Renders report.html from a run directory (see the package docstring)."""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import jinja2

from trainers.run.files import atomic_write_text
from trainers.run.report.eval_page import eval_context, is_evaluation
from trainers.run.report.run_page import is_training_run, run_context

__all__ = ["REPORT_FILE", "report_kind", "build_report", "write_report"]

REPORT_FILE = "report.html"

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,  # every value, in every position: model text never becomes markup
    undefined=jinja2.StrictUndefined,  # a template bug fails the build, not a silent blank
    trim_blocks=True,
    lstrip_blocks=True,
)


def report_kind(run_dir: str | Path) -> str | None:
    """``"evaluation"``, ``"training run"``, or None when ``run_dir`` is neither."""
    run_dir = Path(run_dir)
    if is_evaluation(run_dir):
        return "evaluation"
    if is_training_run(run_dir):
        return "training run"
    return None


def _roles(context: dict[str, Any]) -> list[str]:
    groups = context.get("evaluations") or context.get("transcripts") or []
    return sorted({turn.role for group in groups for ep in group["episodes"] for turn in ep.turns})


def _version() -> str:
    try:
        return metadata.version("teamgym")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def build_report(run_dir: str | Path) -> str:
    """The HTML of ``run_dir``'s report.

    Raises:
        FileNotFoundError: ``run_dir`` is neither a training run nor an evaluation directory.
    """
    run_dir = Path(run_dir)
    kind = report_kind(run_dir)
    if kind is None:
        raise FileNotFoundError(
            f"{run_dir} is not a run directory: it has no metrics.jsonl, eval.jsonl or config.json "
            "(a training run) and no results.json (a benchmarks.evaluate run)"
        )
    context = eval_context(run_dir) if kind == "evaluation" else run_context(run_dir)
    context.update(
        roles=_roles(context),
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        source=str(run_dir),
        version=_version(),
    )
    return _ENVIRONMENT.get_template("report.html.j2").render(context)


def write_report(run_dir: str | Path) -> Path:
    """(Re)writes ``run_dir/report.html`` atomically; returns its path."""
    path = Path(run_dir) / REPORT_FILE
    atomic_write_text(path, build_report(run_dir))
    return path
