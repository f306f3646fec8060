"""Sudoku rules: fill a 4x4 or 9x9 grid so every row, column and box holds each digit once.
Pure, no text grammar.

The board (size, box shape, clues and the unique solution) is immutable and shared by
every copy of a state; a state is just the current grid as a tuple, so ``copy()`` is O(1)
and ``apply`` builds a new tuple. Cells are indexed 0-based inside the code; every
message meant for a player (``apply``'s reasons, ``render``) is 1-based, like the grammar.

The solver is a backtracking search over bitmasks of used digits per row, column and box,
always branching on the empty cell with the fewest candidates (minimum remaining values).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BOX_SHAPES",
    "EMPTY",
    "Board",
    "Sudoku",
    "Move",
    "parse_grid",
    "count_solutions",
    "solve",
    "find_solution",
]

# Grid size -> (box rows, box columns).
BOX_SHAPES: dict[int, tuple[int, int]] = {4: (2, 2), 9: (3, 3)}
EMPTY = 0
_GRID_CHARS = frozenset(".0123456789")

Move = tuple[int, int, int]  # (row, col, digit): row and col 0-based, digit 1..size
Grid = tuple[int, ...]  # row-major, size * size cells, EMPTY for a blank


@dataclass(frozen=True)
class _Units:
    """Per-cell row, column and box numbers of one grid shape (cached per size)."""

    size: int
    box_rows: int
    box_cols: int
    row_of: tuple[int, ...]
    col_of: tuple[int, ...]
    box_of: tuple[int, ...]
    all_digits: int  # bitmask with bits 1..size set


@functools.cache
def _units(size: int) -> _Units:
    if size not in BOX_SHAPES:
        raise ValueError(f"Sudoku size must be one of {sorted(BOX_SHAPES)}, got {size}")
    box_rows, box_cols = BOX_SHAPES[size]
    cells = range(size * size)
    return _Units(
        size=size,
        box_rows=box_rows,
        box_cols=box_cols,
        row_of=tuple(i // size for i in cells),
        col_of=tuple(i % size for i in cells),
        box_of=tuple((i // size) // box_rows * (size // box_cols) + (i % size) // box_cols for i in cells),
        all_digits=(1 << (size + 1)) - 2,
    )


def parse_grid(grid: str | Sequence[int] | Sequence[Sequence[int]]) -> Grid:
    """A grid as a flat row-major tuple of ints (``EMPTY`` = blank).

    Accepts a flat sequence of 16 or 81 ints, a sequence of rows, or text in which each
    digit is a cell and ``.`` or ``0`` a blank (any other character, e.g. spaces, ``|``,
    ``-`` and newlines, is ignored).

    Raises:
        ValueError: The grid does not have 16 or 81 cells, or a value is out of range.
    """
    if not isinstance(grid, str) and len(grid) > 0 and all(isinstance(row, str) for row in grid):
        grid = "\n".join(grid)  # a list of row strings
    if isinstance(grid, str):
        flat = tuple(EMPTY if ch == "." else int(ch) for ch in grid if ch in _GRID_CHARS)
    else:
        rows = list(grid)
        if rows and not isinstance(rows[0], (int, np.integer)):
            flat = tuple(int(v) for row in rows for v in row)
        else:
            flat = tuple(int(v) for v in rows)
    size = round(len(flat) ** 0.5)
    if size * size != len(flat) or size not in BOX_SHAPES:
        raise ValueError(f"a Sudoku grid has 16 (4x4) or 81 (9x9) cells, got {len(flat)}")
    bad = [v for v in flat if not 0 <= v <= size]
    if bad:
        raise ValueError(f"cell values of a {size}x{size} grid must be in 0-{size}, got {bad[0]}")
    return flat


def _search(
    grid: Sequence[int], size: int, limit: int, rng: np.random.Generator | None = None
) -> tuple[int, Grid | None]:
    """Count completions of ``grid`` up to ``limit``; also return the first one found.

    Backtracking over digit bitmasks with the minimum-remaining-values heuristic. With
    ``rng`` the digits of each branching cell are tried in a random order (used to draw
    random full grids). A grid whose filled cells already conflict has 0 completions.
    """
    units = _units(size)
    row_of, col_of, box_of, all_digits = units.row_of, units.col_of, units.box_of, units.all_digits
    rows, cols, boxes = [0] * size, [0] * size, [0] * size
    cells = list(grid)
    empties = []
    for i, value in enumerate(cells):
        if value == EMPTY:
            empties.append(i)
            continue
        bit = 1 << value
        r, c, b = row_of[i], col_of[i], box_of[i]
        if (rows[r] | cols[c] | boxes[b]) & bit:
            return 0, None
        rows[r] |= bit
        cols[c] |= bit
        boxes[b] |= bit
    total = len(empties)
    count = 0
    first: Grid | None = None

    def branch(k: int) -> bool:
        """Fill ``empties[k:]``; True once ``limit`` completions were found."""
        nonlocal count, first
        if k == total:
            count += 1
            if first is None:
                first = tuple(cells)
            return count >= limit
        best_j, best_mask, best_n = k, 0, size + 1
        for j in range(k, total):
            i = empties[j]
            mask = all_digits & ~(rows[row_of[i]] | cols[col_of[i]] | boxes[box_of[i]])
            n = mask.bit_count()
            if n < best_n:
                best_j, best_mask, best_n = j, mask, n
                if n <= 1:
                    break
        if best_n == 0:
            return False
        empties[k], empties[best_j] = empties[best_j], empties[k]
        i = empties[k]
        r, c, b = row_of[i], col_of[i], box_of[i]
        digits = [d for d in range(1, size + 1) if best_mask >> d & 1]
        if rng is not None and len(digits) > 1:
            digits = [digits[j] for j in rng.permutation(len(digits))]
        for d in digits:
            bit = 1 << d
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            cells[i] = d
            done = branch(k + 1)
            rows[r] ^= bit
            cols[c] ^= bit
            boxes[b] ^= bit
            cells[i] = EMPTY
            if done:
                return True
        return False

    branch(0)
    return count, first


def count_solutions(grid: str | Sequence[int] | Sequence[Sequence[int]], limit: int = 2) -> int:
    """Number of completions of ``grid`` (any form ``parse_grid`` reads), counted up to
    ``limit``: ``count_solutions(g) == 1`` means the solution is unique."""
    flat = parse_grid(grid)
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return _search(flat, _size_of(flat), limit)[0]


def find_solution(
    grid: str | Sequence[int] | Sequence[Sequence[int]], rng: np.random.Generator | None = None
) -> Grid | None:
    """One completion of ``grid`` (the first found; random digit order with ``rng``),
    or ``None`` if there is none. ``find_solution(empty grid, rng)`` draws a full grid."""
    flat = parse_grid(grid)
    return _search(flat, _size_of(flat), 1, rng)[1]


def _size_of(flat: Sequence[int]) -> int:
    return round(len(flat) ** 0.5)


@dataclass(frozen=True, eq=False)
class Board:
    """Immutable task data: the clues and the unique solution.

    Attributes:
        size: 4 or 9 (digits 1..size).
        box_rows, box_cols: Shape of a box (2x2 or 3x3).
        givens: The clues, row-major, ``EMPTY`` for the cells the player fills.
        solution: The unique completion of ``givens``.
        blanks: Indices of the cells the player fills (the non-given cells).
    """

    size: int
    box_rows: int
    box_cols: int
    givens: Grid
    solution: Grid
    blanks: tuple[int, ...]

    @classmethod
    def create(
        cls,
        givens: str | Sequence[int] | Sequence[Sequence[int]],
        solution: Sequence[int] | None = None,
    ) -> Board:
        """A board from its clues (any form ``parse_grid`` reads).

        Args:
            givens: The clues.
            solution: Their unique completion, if the caller already proved uniqueness
                (the level generator has); it is checked to be a full valid grid that
                agrees with the clues. Without it, the solver finds it and checks that it
                is unique.

        Raises:
            ValueError: The clues have no completion, several completions, or
                ``solution`` does not fit them.
        """
        flat = parse_grid(givens)
        size = _size_of(flat)
        if solution is None:
            count, found = _search(flat, size, limit=2)
            if count == 0:
                raise ValueError("these Sudoku clues have no solution")
            if count > 1:
                raise ValueError("these Sudoku clues have several solutions; a board needs exactly one")
            assert found is not None
            full = found
        else:
            full = parse_grid(solution)
            if len(full) != len(flat) or any(g not in (EMPTY, s) for g, s in zip(flat, full, strict=True)):
                raise ValueError("solution does not agree with the clues")
            if EMPTY in full or _search(full, size, limit=1)[0] != 1:
                raise ValueError("solution is not a complete, valid grid")
        box_rows, box_cols = BOX_SHAPES[size]
        blanks = tuple(i for i, value in enumerate(flat) if value == EMPTY)
        return cls(size, box_rows, box_cols, flat, full, blanks)


class Sudoku:
    """A partly filled grid on a ``Board``. Implements the ``envs.planning.puzzle.Puzzle``
    protocol; a move is a fill ``(row, col, digit)`` with 0-based ``row`` and ``col``."""

    __slots__ = ("board", "grid")

    def __init__(self, board: Board, grid: Grid | None = None) -> None:
        self.board = board
        self.grid: Grid = board.givens if grid is None else grid

    @classmethod
    def from_text(cls, givens: str | Sequence[int] | Sequence[Sequence[int]]) -> Sudoku:
        """The start state of the board with these clues (must have a unique solution)."""
        return cls(Board.create(givens))

    def copy(self) -> Sudoku:
        return Sudoku(self.board, self.grid)  # the grid is an immutable tuple: shared

    def __deepcopy__(self, memo: dict) -> Sudoku:  # env.clone(): share the board
        return self.copy()

    def __repr__(self) -> str:
        return f"Sudoku(size={self.board.size}, filled={self.filled_count()}/{len(self.grid)})"

    @property
    def size(self) -> int:
        return self.board.size

    def value(self, row: int, col: int) -> int:
        """The digit at (row, col), ``EMPTY`` (0) if blank."""
        return self.grid[row * self.board.size + col]

    def is_given(self, row: int, col: int) -> bool:
        return self.board.givens[row * self.board.size + col] != EMPTY

    def filled_count(self) -> int:
        return sum(1 for value in self.grid if value != EMPTY)

    # ------------------------------------------------------------------ rules
    def _used(self) -> tuple[list[int], list[int], list[int]]:
        """Bitmasks of the digits in each row, column and box of the current grid."""
        units = _units(self.board.size)
        rows, cols, boxes = [0] * units.size, [0] * units.size, [0] * units.size
        for i, value in enumerate(self.grid):
            if value != EMPTY:
                bit = 1 << value
                rows[units.row_of[i]] |= bit
                cols[units.col_of[i]] |= bit
                boxes[units.box_of[i]] |= bit
        return rows, cols, boxes

    def candidates(self) -> dict[tuple[int, int], list[int]]:
        """Every non-given cell (row-major) -> the digits it may hold now: those not in
        its row, column or box, ignoring the cell itself (a player fill may be
        overwritten, and writing the same digit again is a harmless no-op)."""
        units = _units(self.board.size)
        rows, cols, boxes = self._used()
        size = units.size
        result: dict[tuple[int, int], list[int]] = {}
        for i in self.board.blanks:
            r, c, b = units.row_of[i], units.col_of[i], units.box_of[i]
            used = rows[r] | cols[c] | boxes[b]
            current = self.grid[i]
            if current != EMPTY:
                used &= ~(1 << current)  # rows/cols/boxes hold this digit once: its own
            result[(r, c)] = [d for d in range(1, size + 1) if not used >> d & 1]
        return result

    def legal_moves(self) -> list[Move]:
        """Every fill ``(row, col, digit)`` of a non-given cell with a digit not already in
        its row, column or box, in row, column, digit order."""
        return [(r, c, d) for (r, c), digits in self.candidates().items() for d in digits]

    def apply(self, move: Any) -> str | None:
        """Write a digit into a cell; return ``None`` if done, else why it is illegal (the
        state is then unchanged). Reasons are 1-based, like the grammar."""
        try:
            r, c, d = (operator.index(x) for x in move)
        except (TypeError, ValueError):
            return f"{move!r} is not a fill (row, column, digit)"
        size = self.board.size
        if not 0 <= r < size:
            return f"row {r + 1} is outside the grid (rows 1-{size})"
        if not 0 <= c < size:
            return f"column {c + 1} is outside the grid (columns 1-{size})"
        if not 1 <= d <= size:
            return f"digit {d} is not allowed (digits 1-{size})"
        index = r * size + c
        given = self.board.givens[index]
        if given != EMPTY:
            return f"r{r + 1}c{c + 1} is a given clue ({given}) and cannot be changed"
        conflicts = self.conflicts(r, c, d)
        if conflicts:
            listed = ", ".join(conflicts[:-1]) + " and " if len(conflicts) > 1 else ""
            return f"digit {d} is already in {listed}{conflicts[-1]}"
        grid = self.grid
        self.grid = grid[:index] + (d,) + grid[index + 1 :]
        return None

    def conflicts(self, row: int, col: int, digit: int) -> list[str]:
        """The units of (row, col) that already hold ``digit`` elsewhere, named 1-based
        with the clashing cell, e.g. ``"row 2 (at r2c4)"``; empty if none."""
        size, grid = self.board.size, self.grid
        found = []
        for cc in range(size):
            if cc != col and grid[row * size + cc] == digit:
                found.append(f"row {row + 1} (at r{row + 1}c{cc + 1})")
                break
        for rr in range(size):
            if rr != row and grid[rr * size + col] == digit:
                found.append(f"column {col + 1} (at r{rr + 1}c{col + 1})")
                break
        box_rows, box_cols = self.board.box_rows, self.board.box_cols
        top, left = row - row % box_rows, col - col % box_cols
        for rr in range(top, top + box_rows):
            for cc in range(left, left + box_cols):
                if (rr, cc) != (row, col) and grid[rr * size + cc] == digit:
                    found.append(
                        f"the box of rows {top + 1}-{top + box_rows}, columns "
                        f"{left + 1}-{left + box_cols} (at r{rr + 1}c{cc + 1})"
                    )
                    break
            else:
                continue
            break
        return found

    def is_solved(self) -> bool:
        """The grid is complete and no row, column or box repeats a digit."""
        if EMPTY in self.grid:
            return False
        units = _units(self.board.size)
        rows, cols, boxes = self._used()
        return all(mask == units.all_digits for mask in (*rows, *cols, *boxes))

    def potential(self) -> float:
        """Share of the non-given cells that hold the solution's digit.

        In [0, 1]; exactly 1.0 iff solved: the solution is unique, so a complete valid grid
        is the solution, and a grid agreeing with the solution everywhere is solved.
        """
        blanks = self.board.blanks
        if not blanks:
            return 1.0
        grid, solution = self.grid, self.board.solution
        return sum(1 for i in blanks if grid[i] == solution[i]) / len(blanks)

    def key(self) -> Hashable:
        return self.grid

    def render(self) -> str:
        """The grid with 1-based row and column numbers, ``.`` for an empty cell, ``|``
        between boxes side by side and ``-`` lines between boxes stacked."""
        size, box_rows, box_cols = self.board.size, self.board.box_rows, self.board.box_cols
        stacks = size // box_cols
        header = "    " + "   ".join(
            " ".join(str(c + 1) for c in range(s * box_cols, (s + 1) * box_cols)) for s in range(stacks)
        )
        rule = "  +" + "+".join("-" * (2 * box_cols + 1) for _ in range(stacks)) + "+"
        lines = [header, rule]
        for r in range(size):
            chunks = []
            for s in range(stacks):
                values = self.grid[r * size + s * box_cols : r * size + (s + 1) * box_cols]
                chunks.append(" ".join(str(v) if v != EMPTY else "." for v in values))
            lines.append(f"{r + 1:>1} | " + " | ".join(chunks) + " |")
            if (r + 1) % box_rows == 0:
                lines.append(rule)
        return "\n".join(lines)


def solve(puzzle: Sudoku) -> list[Move] | None:
    """The fills of the remaining empty cells (row-major) that complete ``puzzle``, or
    ``None`` if its current grid has no completion (e.g. after a wrong fill: the solution
    is unique, so a digit that differs from it can never be part of a full grid)."""
    found = _search(puzzle.grid, puzzle.board.size, limit=1)[1]
    if found is None:
        return None
    size = puzzle.board.size
    empty = [i for i, value in enumerate(puzzle.grid) if value == EMPTY]
    return [(i // size, i % size, found[i]) for i in empty]
