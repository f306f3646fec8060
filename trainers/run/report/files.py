"""Reading a run directory's JSON files for report.html without failing on a damaged one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["read_json", "flat_items", "plain_items"]


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


def plain_items(data: Any, missing: str, prefix: str = "") -> list[tuple[str, str]]:
    """(key, value as a reader writes it) of a mapping, nested mappings as ``a.b`` keys: strings
    without JSON quotes, ``None`` as ``missing`` (e.g. "not installed"), the rest as JSON."""
    if not isinstance(data, dict):
        return []
    items = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            items += plain_items(value, missing, f"{name}.")
        elif value is None:
            items.append((name, missing))
        else:
            items.append((name, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    return items
