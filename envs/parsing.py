"""Reading answers out of model text: tolerant of case and spacing, never raising.

Model output is adversarial (empty, 100 kB, non-ASCII, code). These helpers only do
bounded regex scans and string splits on it; nothing here evaluates it.

What is parsed is capped: every reply parser of the built-in envs (the helpers here,
``envs.math.checking.extract_boxed``, ``envs.code.env.parse_io_tests`` and
``parse_assert_tests``) reads at most the first ``MAX_PARSED_CHARS`` characters of its
input and does work linear in them (no regex here has nested or adjacent unbounded
quantifiers that could backtrack). The env cuts a reply to its ``max_action_chars``
(4096 by default, 16384 for code) before that; the cap bounds the work when a caller
raises ``max_action_chars`` or calls a parser directly.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PARSED_CHARS", "extract_answer", "extract_code", "split_items"]

MAX_PARSED_CHARS = 65_536
"""Longest prefix of a reply that a parser reads; the rest is ignored (module docstring)."""

_OPEN = re.compile(r"<\s*answer\s*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.IGNORECASE)
_ITEM_SEPARATORS = re.compile(r"[\s,;|]+|->|=>")
# A fence line: three backticks, then an optional language tag, then the end of the line.
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[ \t]*$", re.MULTILINE)


def extract_answer(text: str) -> str | None:
    """The content of the last ``<answer>...</answer>`` block, stripped.

    ``< ANSWER >`` and ``</ Answer>`` are accepted. A last opening tag without a closing
    tag (a response cut at ``max_new_tokens``) yields the rest of the text. ``None`` when
    there is no opening tag at all. Reads the first ``MAX_PARSED_CHARS`` characters.
    """
    text = text[:MAX_PARSED_CHARS]
    last_open = None
    for last_open in _OPEN.finditer(text):  # noqa: B007 - we want the last match
        pass
    if last_open is None:
        return None
    rest = text[last_open.end() :]
    close = _CLOSE.search(rest)
    return (rest[: close.start()] if close else rest).strip()


def split_items(answer: str) -> list[str]:
    """Split an answer into items on commas, semicolons, bars, arrows and whitespace
    (its first ``MAX_PARSED_CHARS`` characters)."""
    return [item for item in _ITEM_SEPARATORS.split(answer[:MAX_PARSED_CHARS]) if item]


def extract_code(text: str) -> str | None:
    """The program in a response: the last fenced block (```python ... ```, or a bare
    ``` fence), else the content of the last ``<answer>`` block. A last fence that is never
    closed (a reply cut at ``max_new_tokens``) yields the rest of the text; a fence tagged
    with another language than python/py/python3 (e.g. ```text) is skipped. ``None`` when
    there is neither a fence nor an answer block, or the code is blank. Reads the first
    ``MAX_PARSED_CHARS`` characters.

    Only slices the text: the code is run by ``envs.sandbox``, never here.
    """
    text = text[:MAX_PARSED_CHARS]
    fences = list(_FENCE.finditer(text))
    blocks: list[str] = []
    index = 0
    while index < len(fences):  # pair fences in order: opener, closer, opener, ...
        opener = fences[index]
        closer = fences[index + 1] if index + 1 < len(fences) else None
        end = closer.start() if closer else len(text)
        if opener.group(1).lower() in ("", "python", "py", "python3"):
            blocks.append(text[opener.end() : end].strip("\n"))
        index += 2
    code = blocks[-1] if blocks else extract_answer(text)
    return code if code and code.strip() else None
