"""Plan-Path text: rules, the move grammar and each role's job."""

from __future__ import annotations

from envs.parsing import split_items
from envs.planning.tool_runs import role_job

__all__ = ["instructions", "brief_instructions", "tool_instructions", "parse_moves", "format_moves"]

RULES = (
    "Plan-Path: move the walker A to the goal G on the grid. '#' is a wall, '.' is free. "
    "Rows are numbered top to bottom, columns left to right. Moves: U (up), D (down), "
    "L (left), R (right); you cannot enter walls or leave the grid. Use as few moves as "
    "possible."
)
GRAMMAR = "Write moves separated by spaces or commas, e.g. <answer>R R D L</answer>."
ROLE_JOBS = {
    "planner": (
        "You are the planner. Propose a plan for the executor: a short rationale, then "
        "the full move list from A to G."
    ),
    "executor": (
        "You are the executor. Read the planner's message, check it against the grid, "
        "and commit the moves to make now."
    ),
    "solver": "You solve the task alone. Think briefly, then commit the moves to make now.",
}

# The brief prompt (plan_path-v1): what a 135M model needs and no more. The verbose text above
# costs ~150 tokens per turn in generation, learning and warm start, and its example answer
# is what an untrained small model copies.
BRIEF_RULES = "Plan-Path: walk A to the goal G on the grid. '#' is a wall. Moves: U D L R."
BRIEF_JOBS = {
    "planner": "You are the planner: write every move from A to G.",
    "executor": "You are the executor: write the moves to make now, checking the planner's plan.",
    "solver": "Write every move from A to G.",
}

_ALIASES = {
    "u": "U", "up": "U", "n": "U", "north": "U",
    "d": "D", "down": "D", "s": "D", "south": "D",
    "l": "L", "left": "L", "w": "L", "west": "L",
    "r": "R", "right": "R", "e": "R", "east": "R",
}  # fmt: skip


def instructions(role: str, max_moves: int) -> str:
    return f"{ROLE_JOBS[role]}\n{RULES}\n{GRAMMAR} At most {max_moves} moves per answer are read."


def brief_instructions(role: str) -> tuple[str, str]:
    """(rules before the grid, the role's job after it) of the brief prompt."""
    return BRIEF_RULES, BRIEF_JOBS[role]


def tool_instructions(role: str) -> tuple[str, str]:
    """(rules before the grid, the role's job after it) of the tool team's prompts."""
    return BRIEF_RULES, role_job(role, "every move from A to G", "R R D")


def parse_moves(answer: str) -> tuple[list[str], str | None]:
    """Move names from an answer, case-insensitive; words like 'up' and 'east' work too."""
    moves = []
    for item in split_items(answer):
        move = _ALIASES.get(item.strip(".").lower())
        if move is None:
            return [], f"{item[:20]!r} is not a move (use U, D, L, R)"
        moves.append(move)
    if not moves:
        return [], "the answer holds no moves"
    return moves, None


def format_moves(moves: list[str]) -> str:
    return " ".join(moves)
