"""Seeded Sudoku level generation for 4x4 and 9x9 grids.

A random full valid grid is drawn by randomized backtracking (the solver with a random
digit order), then cells are blanked in a random order, each removal kept only if the
clues still have a unique solution (``count_solutions(..., limit=2) == 1``), until
``num_blanks`` cells are blank. One pass over the cells is a greedy maximum: a removal
that breaks uniqueness keeps breaking it once more cells are blank. If a pass stops short,
a new grid and order are drawn. Every level thus has exactly ``num_blanks`` blanks and a
unique solution, and its optimal length is ``num_blanks`` fills.

Largest ``num_blanks`` (``MAX_BLANKS``), measured over many seeds: on 4x4 one greedy
pass reaches 12 blanks (4 clues, the fewest any 4x4 puzzle with a unique solution has)
about 70% of the time and 11 almost always, so every count up to 12 is reliable (the
"medium" preset's 10 always succeeds on the first pass). On 9x9 one pass reaches 54-60
blanks, at least 56 in about 85% of passes, so the limit is 56.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from envs.planning.puzzle import PlanningLevel
from envs.planning.sudoku.game import (
    BOX_SHAPES,
    EMPTY,
    Board,
    Sudoku,
    count_solutions,
    find_solution,
)

__all__ = ["SudokuParams", "PRESETS", "MAX_BLANKS", "generate_level", "random_full_grid"]

# Grid size -> the largest num_blanks the generator reaches reliably (see module docstring).
MAX_BLANKS: dict[int, int] = {4: 12, 9: 56}


@dataclass(frozen=True)
class SudokuParams:
    size: int
    num_blanks: int

    def __post_init__(self) -> None:
        if self.size not in BOX_SHAPES:
            raise ValueError(f"size must be one of {sorted(BOX_SHAPES)} (4x4 or 9x9), got {self.size!r}")
        limit = MAX_BLANKS[self.size]
        if isinstance(self.num_blanks, bool) or not isinstance(self.num_blanks, int):
            raise ValueError(f"num_blanks must be an int in [1, {limit}], got {self.num_blanks!r}")
        if not 1 <= self.num_blanks <= limit:
            raise ValueError(
                f"num_blanks must be in [1, {limit}] for size {self.size} "
                f"(a {self.size}x{self.size} grid with a unique solution), got {self.num_blanks}"
            )


PRESETS: dict[str, SudokuParams] = {
    "easy": SudokuParams(size=4, num_blanks=6),
    "medium": SudokuParams(size=4, num_blanks=10),
    "hard": SudokuParams(size=9, num_blanks=40),
}


def min_moves(params: SudokuParams) -> int:
    """Fewest moves any level of ``params`` needs: one fill per blank."""
    return params.num_blanks


def random_full_grid(size: int, rng: np.random.Generator) -> tuple[int, ...]:
    """A random complete valid grid drawn from ``rng`` (randomized backtracking)."""
    grid = find_solution((EMPTY,) * (size * size), rng)
    assert grid is not None  # an empty grid always has completions
    return grid


def generate_level(params: SudokuParams, rng: np.random.Generator, max_tries: int = 100) -> PlanningLevel:
    """A puzzle with exactly ``params.num_blanks`` blanks and a unique solution.

    Raises:
        RuntimeError: If ``max_tries`` grids and removal orders all got stuck before
            ``num_blanks`` blanks (only possible near ``MAX_BLANKS``).
    """
    cells = params.size * params.size
    for _ in range(max_tries):
        solution = random_full_grid(params.size, rng)
        grid = list(solution)
        blanks = 0
        for index in rng.permutation(cells):
            grid[index] = EMPTY
            if count_solutions(grid, limit=2) == 1:
                blanks += 1
                if blanks == params.num_blanks:
                    break
            else:
                grid[index] = solution[index]
        if blanks == params.num_blanks:
            puzzle = Sudoku(Board.create(tuple(grid), solution=solution))
            fingerprint = f"sudoku|{params}|" + puzzle.render()
            return PlanningLevel(puzzle=puzzle, optimal_moves=params.num_blanks, fingerprint=fingerprint)
    raise RuntimeError(
        f"Could not blank {params.num_blanks} cells of a {params.size}x{params.size} Sudoku "
        f"with a unique solution in {max_tries} tries: lower num_blanks."
    )
