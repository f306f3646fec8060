"""Sokoban: a planner and an executor push every box onto a target.

Roles (``team="mas"``): ``planner_0`` proposes the moves, ``executor_0`` commits them;
``team="single"``: ``solver_0`` does both; ``team="tool"``: ``tool_0`` writes a Python
program that reads the grid from standard input, exactly as the prompt shows it (a
column-number line, then per row its number and its cells), and prints the moves on its
last line (e.g. ``U R R D``); ``plan_0`` sees the program, its output and their simulation
and commits the moves (``tool_program.py``: a breadth-first search over player and box
positions, the reference). Protocol and reward terms: ``envs.planning.base``
(``team/progress``, ``team/success``, ``team/optimality``, ``local/plan_progress``,
``local/plan_solves``, the tool team's ``local/tool_*`` and program penalties,
``local/invalid``).

* Observation: rules and legend, the grid with row/column numbers (``#`` wall, ``_``
  floor, ``.`` target, ``$`` box, ``*`` box on a target, ``@`` player, ``+`` player on a
  target), legal moves, the planner's message (executor), feedback on the last answer.
* Action grammar: ``<answer>U R R D</answer>``; moves ``U D L R`` (or up/down/left/right,
  north/south/west/east), any case, separated by spaces, commas or arrows; a run of move
  letters such as ``URRD`` is read letter by letter.
* Rules: a move steps the player one cell; stepping into a box pushes it one cell the
  same way if the cell beyond is free (no wall, no other box). Boxes cannot be pulled.
  Solved when every box is on a target. Every step counts as one move, pushes included.
* Progress potential: ``Phi = (on + 1 - cost / (n * D)) / (n + 1)`` with ``n`` boxes,
  ``on`` of them on targets, ``cost`` the sum of the boxes' push distances to the nearest
  target (fewest pushes with nothing else in the way) and ``D`` one more than the
  largest push distance on the board; a box on a dead square (from which no target can
  be reached, such as a non-target corner) counts ``D``. ``Phi`` is 1 iff solved and at
  most ``n / (n + 1)`` otherwise.
* Optimality: the fewest moves (player steps, pushes included) from the start, from an
  exact A* solver over pushes (edges: shortest walk + push; heuristic: cheapest
  box-to-target assignment of push distances; dead squares and frozen boxes pruned).
* Sizes: ``difficulty`` preset (``easy`` 6x6 with 1 box, ``medium`` 7x7 with 2 boxes,
  ``hard`` 8x8 with 3 boxes; sizes count the border wall) or explicit ``height``,
  ``width``, ``num_boxes``, ``wall_density``, ``reverse_steps``,
  ``straight_pull_probability``, ``min_moves``, ``max_moves``. Levels are made by reverse
  play (pulling boxes away from their targets), so every level is solvable.
* Invalid actions: no answer block, an unknown move, walking into a wall, pushing a box
  into a wall or another box (moves before the illegal one are applied).
* A level may become unsolvable (a box stuck in a corner); the episode then runs to
  truncation, and ``solution()`` returns ``None``.

Version history: v0 - first release; v1 - brief prompts (``prompt_style="brief"``),
about half the tokens, no example answer to copy. Rules and rewards unchanged. Both
versions gained ``team="tool"`` later; the other teams' prompts and rewards did not change.
v2 - v1 with ``no_program_penalty`` (0.5): a tool reply without a program costs more than
a program that fails (in v0/v1 it cost less, and RL learned to drop the code fence).
"""

from __future__ import annotations

from typing import Any, ClassVar

from envs.planning.base import PlanningEnv, PlanningGame
from envs.planning.sokoban import game, levels, prompts

__all__ = ["SokobanEnv"]


class SokobanEnv(PlanningEnv):
    """Box pushing for a planner/executor team (see module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {**PlanningEnv.metadata, "name": "sokoban_v0"}
    GAME = PlanningGame.from_modules(levels, game, prompts)
