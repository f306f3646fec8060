"""Plan-Path: a planner and an executor walk a grid from the start to the goal.

Roles (``team="mas"``): ``planner_0`` proposes the route, ``executor_0`` commits the
moves; ``team="single"``: ``solver_0`` does both. Protocol and reward terms:
``envs.planning.base``.

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

Version history: v0 - first release.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from envs.planning.base import PlanningEnv, PlanningLevel
from envs.planning.plan_path import game, prompts
from envs.planning.plan_path.levels import PRESETS, PlanPathParams, generate_level

__all__ = ["PlanPathEnv"]


class PlanPathEnv(PlanningEnv):
    """Grid path-finding for a planner/executor team (see module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {**PlanningEnv.metadata, "name": "plan_path_v0"}
    PUZZLE_NAME = "Plan-Path"
    PRESETS = PRESETS

    def __init__(
        self,
        *,
        difficulty: str = "easy",
        height: int | None = None,
        width: int | None = None,
        wall_density: float | None = None,
        min_distance: int | None = None,
        **kwargs: Any,
    ) -> None:
        if difficulty not in PRESETS:
            raise ValueError(f"PlanPathEnv: difficulty={difficulty!r}; choose one of {sorted(PRESETS)}")
        overrides = {
            name: value
            for name, value in dict(
                height=height, width=width, wall_density=wall_density, min_distance=min_distance
            ).items()
            if value is not None
        }
        self.params: PlanPathParams = dataclasses.replace(PRESETS[difficulty], **overrides)
        self.difficulty = difficulty
        super().__init__(**kwargs)

    def _generate_level(self, rng: np.random.Generator) -> PlanningLevel:
        return generate_level(self.params, rng)

    def _solve(self, puzzle: game.PlanPath) -> list[str]:
        return game.solve(puzzle)

    def _parse_moves(self, answer: str) -> tuple[list[str], str | None]:
        return prompts.parse_moves(answer)

    def _format_moves(self, moves: list[str]) -> str:
        return prompts.format_moves(moves)

    def _instructions(self, role: str) -> str:
        return prompts.instructions(role, self.max_moves_per_turn)
