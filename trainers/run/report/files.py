"""Reading a run directory's JSON files for report.html without failing on a damaged one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["read_json", "flat_items", "plain_items", "provenance_items"]


def read_json(path: Path) -> Any:
    """The JSON in ``path``; None when it is missing or not JSON (a report shows what it can)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _flattened(data: Any, text: Callable[[Any], str], prefix: str = "") -> list[tuple[str, str]]:
    """(key, ``text(value)``) of a mapping, nested mappings as ``a.b`` keys; not a mapping: []."""
    if not isinstance(data, dict):
        return []
    items = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            items += _flattened(value, text, f"{name}.")
        else:
            items.append((name, text(value)))
    return items


def flat_items(data: Any) -> list[tuple[str, str]]:
    """(key, value as JSON text) of a mapping, nested mappings as ``a.b`` keys."""
    return _flattened(data, lambda value: json.dumps(value, ensure_ascii=False, default=str))


def plain_items(data: Any, missing: str) -> list[tuple[str, str]]:
    """(key, value as a reader writes it) of a mapping, nested mappings as ``a.b`` keys: strings
    without JSON quotes, ``None`` as ``missing`` (e.g. "not installed"), the rest as JSON."""

    def text(value: Any) -> str:
        if value is None:
            return missing
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)

    return _flattened(data, text)


def provenance_items(session: dict[str, Any]) -> list[tuple[str, str]]:
    """A provenance session's rows: plain values; a package's version is None when it is not
    installed, any other None is unknown."""
    rest = {k: v for k, v in session.items() if k not in ("what", "versions")}
    return plain_items(rest, "unknown") + plain_items(
        {"versions": session.get("versions") or {}}, "not installed"
    )
