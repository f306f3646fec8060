"""Reading a run directory's JSON files for report.html without failing on a damaged one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["read_json", "flat_items"]


def read_json(path: Path) -> Any:
    """The JSON in ``path``; None when it is missing or not JSON (a report shows what it can)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def flat_items(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(key, value as JSON text) of a mapping, nested mappings as ``a.b`` keys."""
    if not isinstance(data, dict):
        return []
    items = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            items += flat_items(value, f"{name}.")
        else:
            items.append((name, json.dumps(value, ensure_ascii=False, default=str)))
    return items
