"""Tic-tac-toe rules and the exact minimax solution (pure functions, no env state).

A board is a 9-character string, row by row, of ``"."`` (empty), ``"X"`` and ``"O"``; cells
are numbered 1-9 in the same order. The side to move is passed explicitly rather than read
from the marks' counts: in the env an invalid reply forfeits that turn, so X may face a
board where O has moved more often. ``value(board, mark)`` is the result with best play
from here, from X's side (+1 X wins, 0 draw, -1 O wins), ``mark`` to move; memoised, the
whole table (at most 3^9 boards x 2 sides) fills in well under a second.
"""

from __future__ import annotations

import functools

__all__ = [
    "EMPTY",
    "LINES",
    "other",
    "winner",
    "is_over",
    "legal_cells",
    "play",
    "value",
    "mover_value",
    "best_cells",
]

EMPTY = "." * 9
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def other(mark: str) -> str:
    """The opponent's mark."""
    return "O" if mark == "X" else "X"


def winner(board: str) -> str | None:
    """``"X"`` or ``"O"`` when that mark fills a line, else None."""
    for a, b, c in LINES:
        if board[a] != "." and board[a] == board[b] == board[c]:
            return board[a]
    return None


def is_over(board: str) -> bool:
    """A line is filled or no cell is left."""
    return winner(board) is not None or "." not in board


def legal_cells(board: str) -> list[int]:
    """Empty cells, numbered 1-9 (none once the game is over)."""
    return [] if is_over(board) else [i + 1 for i, mark in enumerate(board) if mark == "."]


def play(board: str, cell: int, mark: str) -> str:
    """The board after ``mark`` takes ``cell`` (1-9).

    Raises:
        ValueError: The cell is not a legal move here.
    """
    if cell not in legal_cells(board):
        raise ValueError(f"cell {cell} is not a legal move on {board!r}")
    return board[: cell - 1] + mark + board[cell:]


@functools.cache
def value(board: str, mark: str) -> int:
    """Result with best play from ``board``, ``mark`` to move, for X: +1, 0 or -1."""
    won = winner(board)
    if won is not None:
        return 1 if won == "X" else -1
    if "." not in board:
        return 0
    children = [value(play(board, cell, mark), other(mark)) for cell in legal_cells(board)]
    return max(children) if mark == "X" else min(children)


def mover_value(board: str, mark: str, perspective: str) -> int:
    """``value(board, mark)`` from ``perspective``'s side (``mark`` to move)."""
    result = value(board, mark)
    return result if perspective == "X" else -result


def best_cells(board: str, mark: str) -> list[int]:
    """The legal cells that keep the best result for ``mark``, to move (minimax-optimal)."""
    scored = {cell: mover_value(play(board, cell, mark), other(mark), mark) for cell in legal_cells(board)}
    best = max(scored.values(), default=None)
    return [cell for cell, score in scored.items() if score == best]
