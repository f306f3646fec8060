"""Plan-Path: a planner and an executor walk a grid from the start to the goal.

Roles (``team="mas"``): ``planner_0`` proposes the route, ``executor_0`` commits the
moves; ``team="single"``: ``solver_0`` does both; ``team="tool"``: ``tool_0`` writes a
Python program that reads the grid from standard input, exactly as the prompt shows it
(a column-number line, then per row its number and its cells), and prints the moves on its
last line (e.g. ``R R D``); ``plan_0`` sees the program, its output and their simulation
and commits the moves (``tool_program.py``: a breadth-first search, the reference).
Protocol and reward terms: ``envs.planning.base``.

* Observation: rules, the grid (``A`` walker, ``G`` goal, ``#`` wall, ``.`` free, with
  row/column numbers), legal moves, the planner's message (executor), feedback.
* Action grammar: ``<answer>R R D</answer>``; moves ``U D L R`` (or up/down/left/right,
  north/south/west/east), any case, separated by spaces, commas or arrows.
* Progress potential: ``1 - d / d_max`` where ``d`` is the networkx shortest-path
  distance to the goal and ``d_max`` the largest such distance on the board.
* Optimality: the networkx shortest path length from the start.
* Sizes: ``difficulty`` preset (``easy`` 5x5, ``medium`` 8x8, ``hard`` 10x10) or explicit
  ``height``, ``width``, ``wall_density``, ``min_distance``.
* Invalid actions: no answer block, an unknown move, walking into a wall or off the grid.

Version history: v0 - first release; v1 - brief prompts (``prompt_style="brief"``),
about half the tokens, no example answer to copy. Rules and rewards unchanged. Both
versions gained ``team="tool"`` later; the other teams' prompts and rewards did not change.
v2 - v1 with ``no_program_penalty`` (0.5): a tool reply without a program costs more than
a program that fails (in v0/v1 it cost less, and RL learned to drop the code fence).
"""

from __future__ import annotations

from typing import Any, ClassVar

from envs.planning.base import PlanningEnv, PlanningGame
from envs.planning.plan_path import game, levels, prompts

__all__ = ["PlanPathEnv"]


class PlanPathEnv(PlanningEnv):
    """Grid path-finding for a planner/executor team (see module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {**PlanningEnv.metadata, "name": "plan_path_v0"}
    GAME = PlanningGame.from_modules(levels, game, prompts)
