"""Sokoban text: rules, the move grammar and each role's job."""

from __future__ import annotations

import re

from envs.parsing import split_items
from envs.planning.tool_runs import role_job

__all__ = ["instructions", "brief_instructions", "tool_instructions", "parse_moves", "format_moves", "LEGEND"]

LEGEND = (
    "'#' wall, '_' floor, '.' target, '$' box, '*' box on a target, '@' you (the player), "
    "'+' you standing on a target"
)
RULES = (
    "Sokoban: push every box onto a target. Legend: " + LEGEND + ". Rows are numbered top "
    "to bottom, columns left to right. Moves: U (up), D (down), L (left), R (right), one "
    "cell each. Walking into a box pushes it one cell the same way, but only if the cell "
    "beyond it is free (not a wall, not another box). You cannot pull boxes, so a box "
    "pushed into a corner that is not a target is stuck for good. You cannot walk into "
    "walls. Every step counts, pushes included: use as few moves as possible."
)
GRAMMAR = (
    "Write moves separated by spaces or commas, e.g. <answer>U R R D</answer> (words like "
    "'up' or a run like 'URRD' work too)."
)
ROLE_JOBS = {
    "planner": (
        "You are the planner. Propose a plan for the executor: a short rationale, then "
        "the full move list that puts every box on a target."
    ),
    "executor": (
        "You are the executor. Read the planner's message, check it against the grid, "
        "and commit the moves to make now."
    ),
    "solver": "You solve the task alone. Think briefly, then commit the moves to make now.",
}

# The brief prompt (sokoban-v1): the rules a small model needs, about a third of the tokens.
BRIEF_RULES = (
    "Sokoban: push every box onto a target. '#' wall, '_' floor, '.' target, '$' box, '*' box on "
    "a target, '@' you, '+' you on a target. Moves: U D L R. Walk into a box to push it; you "
    "cannot pull."
)
BRIEF_JOBS = {
    "planner": "You are the planner: write the moves that put every box on a target.",
    "executor": "You are the executor: write the moves to make now, checking the planner's plan.",
    "solver": "Write the moves that put every box on a target.",
}

_ALIASES = {
    "u": "U", "up": "U", "north": "U",
    "d": "D", "down": "D", "south": "D",
    "l": "L", "left": "L", "west": "L",
    "r": "R", "right": "R", "east": "R",
}  # fmt: skip
_RUN = re.compile(r"[udlr]+")  # matched against the lower-cased item
_PUNCTUATION = ".!()[]{}'\"`"


def instructions(role: str, max_moves: int) -> str:
    return f"{ROLE_JOBS[role]}\n{RULES}\n{GRAMMAR} At most {max_moves} moves per answer are read."


def brief_instructions(role: str) -> tuple[str, str]:
    """(rules before the grid, the role's job after it) of the brief prompt."""
    return BRIEF_RULES, BRIEF_JOBS[role]


def tool_instructions(role: str) -> tuple[str, str]:
    """(rules before the grid, the role's job after it) of the tool team's prompts."""
    return BRIEF_RULES, role_job(role, "the moves that put every box on a target", "U R R D")


def parse_moves(answer: str) -> tuple[list[str], str | None]:
    """Move names from an answer, case-insensitive.

    Items are split on spaces, commas, semicolons, bars and arrows; each is a move letter,
    a word (up/down/left/right, north/south/west/east) or a run of move letters such as
    ``URRD``. Surrounding punctuation (``.``, brackets, quotes) is ignored.
    """
    moves: list[str] = []
    for item in split_items(answer):
        word = item.strip(_PUNCTUATION).lower()
        move = _ALIASES.get(word)
        if move is not None:
            moves.append(move)
        elif _RUN.fullmatch(word):
            moves.extend(word.upper())
        else:
            return [], f"{item[:20]!r} is not a move (use U, D, L, R)"
    if not moves:
        return [], "the answer holds no moves"
    return moves, None


def format_moves(moves: list[str]) -> str:
    return " ".join(moves)
