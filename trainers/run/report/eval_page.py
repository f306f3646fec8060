"""What report.html shows of a ``benchmarks.evaluate`` output directory: its config and
provenance (``results.json``), success and invalid-rate bars with +-1 s.e. error bars, every
table of ``results.md`` as it stands there, and the transcripts: the stored episodes of each
cell (``episodes/<row>__<column>.jsonl``), or the Markdown transcripts of evaluations made
before episodes were stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainers.run.episodes import EPISODES_DIR, read_episode_dicts
from trainers.run.report.charts import bar_chart
from trainers.run.report.episodes import episode_view, text_view
from trainers.run.report.files import flat_items, provenance_items, read_json

__all__ = ["is_evaluation", "eval_context", "markdown_tables"]

RESULTS_FILE = "results.json"


def is_evaluation(out_dir: Path) -> bool:
    return (out_dir / RESULTS_FILE).exists()


def markdown_tables(text: str) -> list[dict[str, Any]]:
    """``results.md`` as blocks in order: ``{"table": title, "header": [...], "rows": [[...]]}``
    for each ``### title`` pipe table, ``{"text": line}`` for the lines between them."""
    blocks: list[dict[str, Any]] = []
    table: dict[str, Any] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("### "):
            table = {"table": stripped[4:], "header": [], "rows": []}
            blocks.append(table)
        elif stripped.startswith("|") and table is not None:
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue  # the separator row
            if not table["header"]:
                table["header"] = cells
            else:
                table["rows"].append(cells)
        elif stripped:
            table = None
            blocks.append({"text": stripped})
    return blocks


def _label(cell: dict[str, Any]) -> str:
    return str(cell.get("env")) + (f" ({cell['difficulty']})" if cell.get("difficulty") else "")


def _bars(cells: list[dict[str, Any]], key: str, title: str):
    groups = list(dict.fromkeys(_label(c) for c in cells))
    names = list(dict.fromkeys(str(c.get("row")) for c in cells))
    values = {}
    for cell in cells:
        mean, se = (cell.get("mean") or {}).get(key), (cell.get("se") or {}).get(key)
        if isinstance(mean, int | float):
            values[(_label(cell), str(cell.get("row")))] = (
                float(mean),
                se if isinstance(se, int | float) else None,
            )
    return bar_chart(title, "rate", groups, names, values, rate=True)


def _transcripts(out_dir: Path) -> list[dict[str, Any]]:
    shown = []
    episodes = out_dir / EPISODES_DIR
    if episodes.is_dir():
        for path in sorted(episodes.glob("*.jsonl")):
            views = [episode_view(e) for e in read_episode_dicts(path)]
            shown.append({"name": path.stem.replace("__", " on "), "episodes": views, "transcript": None})
    if not shown and (out_dir / "transcripts").is_dir():
        for path in sorted((out_dir / "transcripts").glob("*.md")):
            text = text_view(path.read_text(encoding="utf-8", errors="replace"), 60_000)
            shown.append({"name": path.stem.replace("__", " on "), "episodes": [], "transcript": text})
    return shown


def eval_context(out_dir: Path) -> dict[str, Any]:
    """The template's data for an evaluation directory."""
    results = read_json(out_dir / RESULTS_FILE)
    results = results if isinstance(results, dict) else {}
    cells = [c for c in results.get("cells", []) if isinstance(c, dict)]
    markdown = out_dir / "results.md"
    blocks = (
        markdown_tables(markdown.read_text(encoding="utf-8", errors="replace")) if markdown.exists() else []
    )
    charts = [
        chart
        for chart in (
            _bars(cells, "success", "Success rate (mean +- 1 s.e. over seeds)"),
            _bars(cells, "invalid_rate", "Invalid-reply rate (mean +- 1 s.e. over seeds)"),
        )
        if chart is not None
    ]
    provenance = {
        k: results.get(k) for k in ("created", "command", "git_commit", "versions", "models", "protocol")
    }
    return {
        "kind": "evaluation",
        "title": out_dir.resolve().name,
        "summary": [
            ("envs", ", ".join(dict.fromkeys(_label(c) for c in cells))),
            ("teams", ", ".join(dict.fromkeys(str(c.get("row")) for c in cells))),
            ("complete", results.get("complete")),
            ("created", results.get("created")),
        ],
        "config": flat_items(results.get("config") or {}),
        "provenance": [{"what": "evaluation", "items": provenance_items(provenance)}],
        "env_settings": json.dumps(results.get("envs") or {}, indent=2, default=str),
        "charts": charts,
        "tables": blocks,
        "transcripts": _transcripts(out_dir),
    }
