"""Seeded Sokoban level generation at any size, solvable by construction.

1. *Room*: a border wall around the ``(height - 2) x (width - 2)`` interior; interior
   cells become walls at random (about ``wall_density`` of them) as long as the floor
   stays connected.
2. *Reverse play*: ``num_boxes`` targets are drawn from the floor and a box starts on
   each; the player starts on a random free cell and makes ``reverse_steps`` pulls: it
   walks (without pushing) to a random cell next to a box and steps away from it,
   dragging the box one cell. With probability ``straight_pull_probability`` it keeps
   pulling the same box in the same line instead. Every pull undoes a push and every
   walk undoes a walk, so each state on the way can be pushed back to the solved one:
   the level is solvable by construction. The state of the walk whose boxes are furthest
   from the targets (sum of push distances) becomes the start, with the player on a
   random cell of its region.
3. *Check*: the exact solver (``game.solve``) gives ``optimal_moves``; levels already
   solved, with fewer than ``min_moves`` or more than ``max_moves`` moves, or needing
   more than ``SEARCH_LIMIT`` solver expansions (only ever seen in the largest custom
   rooms) are thrown away and a new room is drawn.

All randomness comes from the ``rng`` passed in.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from envs.planning.puzzle import PlanningLevel
from envs.planning.sokoban.game import DELTAS, Board, Cell, SearchLimitExceeded, Sokoban, solve

__all__ = ["SokobanParams", "PRESETS", "generate_level", "MAX_SIDE", "MAX_BOXES", "SEARCH_LIMIT"]

MIN_SIDE, MAX_SIDE = 5, 12  # outer size; the exact solver gets slow beyond a 10x10 interior
MAX_BOXES = 4
# States the exact solver may expand per candidate level before the level is skipped. The
# presets never come near it (hard: ~3000 at most); it bounds generation time for the
# largest custom rooms, where a rare level would otherwise take minutes to solve.
SEARCH_LIMIT = 20_000


@dataclass(frozen=True)
class SokobanParams:
    """Level size and generation knobs.

    Attributes:
        height: Rows, counting the border wall (``MIN_SIDE``..``MAX_SIDE``).
        width: Columns, counting the border wall (``MIN_SIDE``..``MAX_SIDE``).
        num_boxes: Boxes (= targets), 1..``MAX_BOXES`` and at most a quarter of the
            interior cells.
        wall_density: Fraction of interior cells turned into walls, in [0, 0.5).
        reverse_steps: Pulls made by reverse play, in [1, 10000].
        straight_pull_probability: Chance that a pull continues the previous one (same
            box, same direction) when it can, in [0, 1].
        min_moves: Fewest moves of an accepted level's optimal solution, >= 1.
        max_moves: Most moves of an accepted level's optimal solution, >= min_moves (keep
            it within ``max_cycles * max_moves_per_turn`` so the level fits an episode).
    """

    height: int
    width: int
    num_boxes: int
    wall_density: float = 0.15
    reverse_steps: int = 40
    straight_pull_probability: float = 0.7
    min_moves: int = 4
    max_moves: int = 80

    def __post_init__(self) -> None:
        for name in ("height", "width"):
            value = getattr(self, name)
            if not MIN_SIDE <= value <= MAX_SIDE:
                raise ValueError(
                    f"Sokoban {name} (outer size, with the border wall) must be in "
                    f"[{MIN_SIDE}, {MAX_SIDE}], got {value}"
                )
        interior = (self.height - 2) * (self.width - 2)
        most = min(MAX_BOXES, interior // 4)
        if not 1 <= self.num_boxes <= most:
            raise ValueError(
                f"Sokoban num_boxes must be in [1, {most}] for a {self.height}x{self.width} room, "
                f"got {self.num_boxes}"
            )
        if not 0.0 <= self.wall_density < 0.5:
            raise ValueError(f"Sokoban wall_density must be in [0, 0.5), got {self.wall_density}")
        if not 1 <= self.reverse_steps <= 10_000:
            raise ValueError(f"Sokoban reverse_steps must be in [1, 10000], got {self.reverse_steps}")
        if not 0.0 <= self.straight_pull_probability <= 1.0:
            raise ValueError(
                f"Sokoban straight_pull_probability must be in [0, 1], got {self.straight_pull_probability}"
            )
        if self.min_moves < 1:
            raise ValueError(f"Sokoban min_moves must be >= 1, got {self.min_moves}")
        if self.max_moves < self.min_moves:
            raise ValueError(
                f"Sokoban max_moves must be >= min_moves = {self.min_moves}, got {self.max_moves}"
            )


PRESETS: dict[str, SokobanParams] = {
    "easy": SokobanParams(height=6, width=6, num_boxes=1, min_moves=6, max_moves=30),
    "medium": SokobanParams(height=7, width=7, num_boxes=2, min_moves=12, max_moves=50),
    "hard": SokobanParams(height=8, width=8, num_boxes=3, min_moves=18, max_moves=80),
}


def min_moves(params: SokobanParams) -> int:
    """Fewest moves any level of ``params`` needs: the accepted levels' lower bound (``min_moves``)."""
    return params.min_moves


def _connected(floor: set[Cell]) -> bool:
    start = next(iter(floor))
    seen = {start}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in DELTAS.values():
            cell = (r + dr, c + dc)
            if cell in floor and cell not in seen:
                seen.add(cell)
                queue.append(cell)
    return len(seen) == len(floor)


def _room(params: SokobanParams, rng: np.random.Generator) -> tuple[frozenset[Cell], list[Cell]]:
    """Walls (border + random interior walls) and the connected floor, row by row."""
    h, w = params.height, params.width
    interior = [(r, c) for r in range(1, h - 1) for c in range(1, w - 1)]
    floor = set(interior)
    wanted = int(round(params.wall_density * len(interior)))
    # Keep enough floor for the boxes and room to move them.
    wanted = min(wanted, len(interior) - 3 * params.num_boxes - 2)
    for i in rng.permutation(len(interior)):
        if wanted <= 0:
            break
        cell = interior[int(i)]
        floor.discard(cell)
        if _connected(floor):
            wanted -= 1
        else:
            floor.add(cell)
    walls = frozenset((r, c) for r in range(h) for c in range(w) if (r, c) not in floor)
    return walls, sorted(floor)


def _region(board: Board, player: Cell, boxes: set[Cell]) -> list[Cell]:
    """Cells the player can walk to without pushing, in BFS order from ``player``."""
    seen = {player}
    order = [player]
    queue = deque(order)
    while queue:
        r, c = queue.popleft()
        for dr, dc in DELTAS.values():
            cell = (r + dr, c + dc)
            if cell not in seen and not board.is_wall(cell) and cell not in boxes:
                seen.add(cell)
                order.append(cell)
                queue.append(cell)
    return order


def _reverse_play(
    board: Board, floor: list[Cell], params: SokobanParams, rng: np.random.Generator
) -> Sokoban:
    """Start solved and pull boxes backwards; return the hardest-looking state seen.

    Each reverse step walks the player to a random cell of its region next to a box and
    pulls that box one cell (the walk itself needs no pull, so it is not simulated).
    "Hardest-looking" is the largest sum of push distances of the boxes.
    """
    boxes = set(board.targets)
    free = [cell for cell in floor if cell not in boxes]
    player = free[int(rng.integers(len(free)))]
    best_score, best = 0, (player, frozenset(boxes))
    distance = board.push_distance
    last = None  # (box cell, direction) of the previous pull: keep pulling it in a line
    for _ in range(params.reverse_steps):
        region = set(_region(board, player, boxes))
        pulls = []  # (box, d): player at box+d steps to box+2d, the box follows to box+d
        for box in sorted(boxes):
            for dr, dc in DELTAS.values():
                stand = (box[0] + dr, box[1] + dc)
                to = (stand[0] + dr, stand[1] + dc)
                if stand in region and not board.is_wall(to) and to not in boxes:
                    pulls.append((box, (dr, dc)))
        if not pulls:
            break
        if last in pulls and rng.random() < params.straight_pull_probability:
            box, (dr, dc) = last
        else:
            box, (dr, dc) = pulls[int(rng.integers(len(pulls)))]
        stand = (box[0] + dr, box[1] + dc)
        boxes.remove(box)
        boxes.add(stand)
        player = (stand[0] + dr, stand[1] + dc)
        last = (stand, (dr, dc))
        score = sum(distance[b] for b in boxes)  # pulled boxes are never on dead squares
        if score > best_score:
            cells = _region(board, player, boxes)
            best_score, best = score, (cells[int(rng.integers(len(cells)))], frozenset(boxes))
    return Sokoban(board, best[0], best[1], check=False)


def generate_level(params: SokobanParams, rng: np.random.Generator, max_tries: int = 500) -> PlanningLevel:
    """A solvable level with ``min_moves <= optimal_moves <= max_moves``."""
    for _ in range(max_tries):
        walls, floor = _room(params, rng)
        picks = rng.choice(len(floor), size=params.num_boxes, replace=False)
        targets = [floor[int(i)] for i in sorted(picks)]
        board = Board.create(params.height, params.width, walls, targets)
        puzzle = _reverse_play(board, floor, params, rng)
        if puzzle.is_solved():
            continue
        try:
            solution = solve(puzzle, max_expansions=SEARCH_LIMIT)
        except SearchLimitExceeded:
            continue
        if solution is None:  # pragma: no cover - reverse play is solvable by construction
            raise AssertionError(f"reverse play produced an unsolvable level:\n{puzzle.render()}")
        if not params.min_moves <= len(solution) <= params.max_moves:
            continue
        fingerprint = f"sokoban|{params}|" + puzzle.render()
        return PlanningLevel(puzzle=puzzle, optimal_moves=len(solution), fingerprint=fingerprint)
    raise RuntimeError(
        f"No Sokoban level with {params.min_moves} <= optimal moves <= {params.max_moves} in "
        f"{max_tries} rooms of {params.height}x{params.width} with {params.num_boxes} box(es): "
        "widen that range, raise reverse_steps or lower wall_density."
    )
