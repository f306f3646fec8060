"""Plan-Path rules: walk from the start to the goal on a grid with walls. Pure, no text.

The board (walls, goal, distance map) is immutable and shared by every copy of a state;
a state is just the walker's position, so ``copy()`` is O(1).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import networkx as nx

__all__ = ["Board", "PlanPath", "MOVES", "DELTAS", "build_graph"]

WALL, FREE = "#", "."
# Move name -> (d_row, d_col). Order is the canonical order of legal-move lists.
DELTAS: dict[str, tuple[int, int]] = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
MOVES = tuple(DELTAS)

Cell = tuple[int, int]


def build_graph(rows: tuple[str, ...]) -> nx.Graph:
    """Undirected 4-neighbour graph over the free cells of ``rows``."""
    graph = nx.Graph()
    height, width = len(rows), len(rows[0])
    for r in range(height):
        for c in range(width):
            if rows[r][c] == WALL:
                continue
            graph.add_node((r, c))
            for dr, dc in ((1, 0), (0, 1)):
                rr, cc = r + dr, c + dc
                if rr < height and cc < width and rows[rr][cc] != WALL:
                    graph.add_edge((r, c), (rr, cc))
    return graph


@dataclass(frozen=True, eq=False)
class Board:
    """Immutable task data: wall layout, start, goal and each cell's distance to the goal."""

    rows: tuple[str, ...]  # "#" wall, "." free
    start: Cell
    goal: Cell
    distance: dict[Cell, int]  # shortest-path length to the goal, reachable cells only

    @classmethod
    def create(cls, rows: tuple[str, ...], start: Cell, goal: Cell) -> Board:
        distance = dict(nx.single_source_shortest_path_length(build_graph(rows), goal))
        if start not in distance:
            raise ValueError(f"goal {goal} is not reachable from start {start}")
        return cls(rows=rows, start=start, goal=goal, distance=distance)

    @property
    def height(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return len(self.rows[0])

    @property
    def max_distance(self) -> int:
        return max(self.distance.values())

    def is_free(self, cell: Cell) -> bool:
        r, c = cell
        return 0 <= r < self.height and 0 <= c < self.width and self.rows[r][c] != WALL


class PlanPath:
    """A walker on a ``Board``. Implements the ``envs.planning.puzzle.Puzzle`` protocol."""

    __slots__ = ("board", "position")

    def __init__(self, board: Board, position: Cell | None = None) -> None:
        self.board = board
        self.position = board.start if position is None else position

    def copy(self) -> PlanPath:
        return PlanPath(self.board, self.position)

    def __deepcopy__(self, memo: dict) -> PlanPath:  # env.clone(): share the board
        return self.copy()

    def target(self, move: str) -> Cell:
        dr, dc = DELTAS[move]
        return self.position[0] + dr, self.position[1] + dc

    def legal_moves(self) -> list[str]:
        return [move for move in MOVES if self.board.is_free(self.target(move))]

    def apply(self, move: str) -> str | None:
        if move not in DELTAS:
            return f"unknown move {move!r}"
        target = self.target(move)
        if not self.board.is_free(target):
            return "that cell is a wall" if self._inside(target) else "that leaves the grid"
        self.position = target
        return None

    def _inside(self, cell: Cell) -> bool:
        return 0 <= cell[0] < self.board.height and 0 <= cell[1] < self.board.width

    def is_solved(self) -> bool:
        return self.position == self.board.goal

    def distance_to_goal(self) -> int:
        return self.board.distance[self.position]

    def potential(self) -> float:
        """1 - distance/max distance over reachable cells: 1 iff at the goal."""
        return 1.0 - self.distance_to_goal() / max(1, self.board.max_distance)

    def key(self) -> Hashable:
        return self.position

    def render(self) -> str:
        """Grid with row/column numbers: ``A`` walker, ``G`` goal, ``#`` wall, ``.`` free."""
        header = "   " + "".join(str(c % 10) for c in range(self.board.width))
        lines = [header]
        for r, row in enumerate(self.board.rows):
            cells = list(row)
            gr, gc = self.board.goal
            if r == gr:
                cells[gc] = "G"
            if r == self.position[0]:
                cells[self.position[1]] = "A"
            lines.append(f"{r:>2} " + "".join(cells))
        return "\n".join(lines)


def solve(puzzle: PlanPath) -> list[str]:
    """A shortest move list from the walker's position to the goal (networkx)."""
    graph = build_graph(puzzle.board.rows)
    path = nx.shortest_path(graph, puzzle.position, puzzle.board.goal)
    names = {delta: name for name, delta in DELTAS.items()}
    return [names[(b[0] - a[0], b[1] - a[1])] for a, b in zip(path, path[1:], strict=False)]
