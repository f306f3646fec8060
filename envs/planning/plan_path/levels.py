"""Seeded Plan-Path level generation at any size.

Walls are placed at random with ``wall_density``; start and goal are two free cells of
the largest connected region at shortest-path distance >= ``min_distance`` (so every level
is solvable by construction, and its optimal length is the networkx shortest path).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from envs.planning.plan_path.game import FREE, WALL, Board, PlanPath, build_graph
from envs.planning.puzzle import PlanningLevel

__all__ = ["PlanPathParams", "PRESETS", "generate_level"]


@dataclass(frozen=True)
class PlanPathParams:
    height: int
    width: int
    wall_density: float
    min_distance: int

    def __post_init__(self) -> None:
        if self.height < 2 or self.width < 2:
            raise ValueError(f"Plan-Path grid must be at least 2x2, got {self.height}x{self.width}")
        if not 0.0 <= self.wall_density < 0.7:
            raise ValueError(f"wall_density must be in [0, 0.7), got {self.wall_density}")
        if not 1 <= self.min_distance <= self.height + self.width - 2:
            raise ValueError(
                f"min_distance must be in [1, height + width - 2 = {self.height + self.width - 2}], "
                f"got {self.min_distance}"
            )


PRESETS: dict[str, PlanPathParams] = {
    "easy": PlanPathParams(height=5, width=5, wall_density=0.2, min_distance=3),
    "medium": PlanPathParams(height=8, width=8, wall_density=0.25, min_distance=6),
    "hard": PlanPathParams(height=10, width=10, wall_density=0.3, min_distance=10),
}


def min_moves(params: PlanPathParams) -> int:
    """Fewest moves any level of ``params`` needs: the start is ``min_distance`` moves or more
    from the goal."""
    return params.min_distance


def generate_level(params: PlanPathParams, rng: np.random.Generator, max_tries: int = 200) -> PlanningLevel:
    """A solvable level; retries wall layouts until two cells are far enough apart."""
    for _ in range(max_tries):
        walls = rng.random((params.height, params.width)) < params.wall_density
        rows = tuple("".join(WALL if w else FREE for w in line) for line in walls)
        graph = build_graph(rows)
        if graph.number_of_nodes() < 2:
            continue
        region = sorted(max(nx.connected_components(graph), key=len))
        start = region[int(rng.integers(len(region)))]
        distance = nx.single_source_shortest_path_length(graph, start)
        far = sorted(cell for cell, d in distance.items() if d >= params.min_distance)
        if not far:
            continue
        goal = far[int(rng.integers(len(far)))]
        board = Board.create(rows, start, goal)
        puzzle = PlanPath(board)
        fingerprint = f"plan_path|{params}|" + puzzle.render()
        return PlanningLevel(puzzle=puzzle, optimal_moves=board.distance[start], fingerprint=fingerprint)
    raise RuntimeError(
        f"No Plan-Path level with min_distance={params.min_distance} in {max_tries} layouts of "
        f"{params.height}x{params.width} at wall_density={params.wall_density}: lower one of them."
    )
