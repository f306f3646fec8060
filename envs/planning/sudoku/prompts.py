"""Sudoku text: rules, the fill grammar and each role's job.

A fill is written ``r<row>c<col>=<digit>`` with 1-based row and column, e.g. ``r2c3=4``.
Case and spaces inside a fill do not matter (``R2C3 = 4``, ``r2 c3 = 4``) and ``:`` may
stand for ``=`` (``r2c3:4``). Fills are separated by commas, semicolons, spaces or
newlines. A fill whose row, column or digit is out of range still parses (the rules
reject it as an illegal move); numbers have at most 6 digits.
"""

from __future__ import annotations

import re

from envs.planning.sudoku.game import Move
from envs.planning.tool_runs import role_job

__all__ = ["instructions", "tool_instructions", "parse_moves", "format_moves"]

RULES = (
    "Sudoku: fill every empty cell '.' of the grid with a digit so that each row, each "
    "column and each box (the blocks between the '|' and '-' lines) holds every digit "
    "exactly once: digits 1-4 on a 4x4 grid, 1-9 on a 9x9 grid. Rows are numbered top to "
    "bottom, columns left to right, from 1. The digits printed at the start (the clues) "
    "cannot be changed; a digit you wrote can be overwritten. A fill that repeats a digit "
    "already in its row, column or box is illegal. The puzzle has exactly one solution."
)
GRAMMAR = (
    "Write each fill as r<row>c<column>=<digit>, separated by commas, e.g. <answer>r1c2=3, r4c4=1</answer>."
)
ROLE_JOBS = {
    "planner": (
        "You are the planner. Propose a plan for the executor: a short rationale (which "
        "row, column or box forces each digit), then the fills that complete the grid."
    ),
    "executor": (
        "You are the executor. Read the planner's message, check each fill against the "
        "grid, and commit the fills to make now."
    ),
    "solver": "You solve the task alone. Think briefly, then commit the fills to make now.",
}

# The tool team's rules (before the grid): what a program needs to read the board and write fills.
TOOL_RULES = (
    "Sudoku: fill every empty cell '.' so that each row, each column and each box (between the '|' "
    "and '-' lines) holds every digit once: 1-4 on a 4x4 grid, 1-9 on a 9x9 grid. Rows and columns "
    "are numbered from 1; a fill is r<row>c<column>=<digit>."
)

# Numbers are bounded so that int() never sees a huge string; every quantifier is
# separated by a literal, so a failing match is linear in the text it scans.
_FILL = re.compile(
    r"r\s*([0-9]{1,6})\s*c\s*([0-9]{1,6})\s*[=:]\s*([0-9]{1,6})(?=[\s,;]|\Z)",
    re.IGNORECASE | re.ASCII,
)
_SEPARATORS = re.compile(r"[\s,;]*", re.ASCII)
_ITEM_END = re.compile(r"[,;\n]")


def instructions(role: str, max_moves: int) -> str:
    return f"{ROLE_JOBS[role]}\n{RULES}\n{GRAMMAR} At most {max_moves} fills per answer are read."


def tool_instructions(role: str) -> tuple[str, str]:
    """(rules before the grid, the role's job after it) of the tool team's prompts."""
    return TOOL_RULES, role_job(role, "the fills of every empty cell", "r1c2=3, r4c4=1")


def parse_moves(answer: str) -> tuple[list[Move], str | None]:
    """Fills ``(row, col, digit)`` (row and col 0-based) from an answer, or an error
    naming the first item that is not a fill."""
    moves: list[Move] = []
    pos = _SEPARATORS.match(answer).end()
    while pos < len(answer):
        match = _FILL.match(answer, pos)
        if match is None:
            return [], f"{_item_at(answer, pos)!r} is not a fill (write r<row>c<column>=<digit>)"
        row, col, digit = (int(group) for group in match.groups())
        moves.append((row - 1, col - 1, digit))
        pos = _SEPARATORS.match(answer, match.end()).end()
    if not moves:
        return [], "the answer holds no fills (write r<row>c<column>=<digit>)"
    return moves, None


def _item_at(answer: str, pos: int, max_chars: int = 20) -> str:
    """The unreadable item starting at ``pos``: up to the next comma, semicolon or line
    break, cut to ``max_chars`` characters (bounded work on huge answers)."""
    window = answer[pos : pos + 4 * max_chars]
    end = _ITEM_END.search(window)
    item = (window[: end.start()] if end else window).strip()
    return item if len(item) <= max_chars else item[:max_chars] + "..."


def format_moves(moves: list[Move]) -> str:
    """``[(0, 1, 3), (3, 3, 1)]`` -> ``"r1c2=3, r4c4=1"``."""
    return ", ".join(f"r{row + 1}c{col + 1}={digit}" for row, col, digit in moves)
