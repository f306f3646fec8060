"""Sudoku: a planner and an executor fill a 4x4 or 9x9 Sudoku grid.

Roles (``team="mas"``): ``planner_0`` proposes fills with a short rationale,
``executor_0`` commits the fills; ``team="single"``: ``solver_0`` does both;
``team="tool"``: ``tool_0`` writes a Python program that reads the grid from standard
input, exactly as the prompt shows it (the number line, ``+--`` rules, and per row its
number and cells between ``|``), and prints the fills on its last line (e.g.
``r1c2=3, r4c4=1``); ``plan_0`` sees the program, its output and their simulation and
commits the fills (``tool_program.py``: backtracking, the reference). Protocol and reward
terms: ``envs.planning.base``.

* Observation: rules, the grid (1-based row/column numbers, ``.`` empty, ``|`` and ``-``
  between boxes), a compact line of each empty cell's allowed digits (and of the cells
  the team filled, which may be overwritten), the planner's message (executor),
  feedback. ``info["legal_moves"]`` still lists every legal fill as a string.
* Action grammar: ``<answer>r1c2=3, r4c4=1</answer>``: fills ``r<row>c<col>=<digit>``,
  1-based, any case, spaces allowed inside a fill (``R2 C3 = 4``), ``:`` for ``=``,
  separated by commas, semicolons, spaces or newlines. Up to ``max_moves_per_turn``
  fills per answer (default 81: a whole solution fits in one answer).
* Rules: a fill writes a digit into a non-given cell; it is illegal if the digit is
  already in the cell's row, column or box. Clues cannot be changed; the team's own fills
  can be overwritten. Solved when the grid is complete (then it is the unique solution).
* Progress potential: the share of non-given cells holding the solution's digit, in
  [0, 1] and 1 iff solved (the solution is unique). A wrong fill that breaks no rule
  gains nothing, and overwriting a right digit loses progress.
* Optimality: ``num_blanks`` fills (one per empty cell); overwrites cost extra moves.
* Sizes: ``difficulty`` preset (``easy`` 4x4 with 6 blanks, ``medium`` 4x4 with 10,
  ``hard`` 9x9 with 40) or explicit ``size`` (4 or 9) and ``num_blanks`` (at most 12 on
  4x4 and 56 on 9x9). Every level has a unique solution.
* Invalid actions: no answer block, an item that is not a fill, a row, column or digit
  out of range, changing a clue, or a digit already in the row, column or box (the fills
  before the illegal one still count).

Version history: v0 - first release (``team="tool"`` added later; the other teams'
prompts and rewards did not change).
v1 - ``no_program_penalty`` (0.5): a tool reply without a program costs more than a
program that fails (in v0 it cost less, and RL learned to drop the code fence).
"""

from __future__ import annotations

from typing import Any, ClassVar

from envs.core import TrainingPreset
from envs.planning.base import PlanningEnv, PlanningGame
from envs.planning.sudoku import game, levels, prompts

__all__ = ["SudokuEnv"]


class SudokuEnv(PlanningEnv):
    """Sudoku for a planner/executor team (see module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {**PlanningEnv.metadata, "name": "sudoku_v0"}
    GAME = PlanningGame.from_modules(levels, game, prompts)
    DEFAULT_MAX_MOVES_PER_TURN = 81  # a whole 9x9 solution fits in one answer
    DEFAULT_MAX_CYCLES = 6
    TRAINING = TrainingPreset(  # 6 fills; a tool agent's program ~340 tokens
        max_new_tokens=48, role_max_new_tokens={"tool": 384}, env_kwargs={"difficulty": "easy"}
    )

    def _legal_moves_text(self, agent: str) -> str:
        """Compact form of the legal fills: each empty cell with its allowed digits, e.g.
        ``r1c2: 3/4``, then the team's own fills (which may be overwritten)."""
        empty, filled = [], []
        for (row, col), digits in self.puzzle.candidates().items():
            allowed = "/".join(map(str, digits)) if digits else "none"
            value = self.puzzle.value(row, col)
            if value == game.EMPTY:
                empty.append(f"r{row + 1}c{col + 1}: {allowed}")
            else:
                filled.append(f"r{row + 1}c{col + 1} (now {value}): {allowed}")
        lines = ["Empty cells and allowed digits: " + (", ".join(empty) if empty else "(none)")]
        if filled:
            lines.append("Cells you filled (may be overwritten): " + ", ".join(filled))
        return "\n".join(lines)
