"""Reading answers out of model text: tolerant of case and spacing, never raising.

Model output is adversarial (empty, 100 kB, non-ASCII, code). These helpers only do
bounded regex scans and string splits on it; nothing here evaluates it.
"""

from __future__ import annotations

import re

__all__ = ["extract_answer", "split_items"]

_OPEN = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
_ITEM_SEPARATORS = re.compile(r"[\s,;|]+|->|=>")


def extract_answer(text: str) -> str | None:
    """The content of the last ``<answer>...</answer>`` block, stripped.

    ``< ANSWER >`` and ``</ Answer>`` are accepted. A last opening tag without a closing
    tag (a response cut at ``max_new_tokens``) yields the rest of the text. ``None`` when
    there is no opening tag at all.
    """
    last_open = None
    for last_open in _OPEN.finditer(text):  # noqa: B007 - we want the last match
        pass
    if last_open is None:
        return None
    rest = text[last_open.end() :]
    close = _CLOSE.search(rest)
    return (rest[: close.start()] if close else rest).strip()


def split_items(answer: str) -> list[str]:
    """Split an answer into items on commas, semicolons, bars, arrows and whitespace."""
    return [item for item in _ITEM_SEPARATORS.split(answer) if item]
