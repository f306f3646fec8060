"""Sokoban rules: push every box onto a target. Pure, no text parsing.

The board (walls, targets, each cell's push distance to the nearest target) is immutable
and shared by every copy of a state; a state is just the player's cell and a frozenset of
box cells, so ``copy()`` is O(1).

Cells are ``(row, column)`` pairs, row 0 at the top. Cells outside the grid count as
walls, so a board without a border wall is still safe to play on.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

__all__ = ["Board", "Cell", "Sokoban", "MOVES", "DELTAS", "SYMBOLS", "SearchLimitExceeded", "solve"]

# Move name -> (d_row, d_col). Order is the canonical order of legal-move lists.
DELTAS: dict[str, tuple[int, int]] = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
MOVES = tuple(DELTAS)

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#_.$*@+"
# Symbol -> (is wall, is target, has box, has player). ``render`` writes the first seven;
# ``from_rows`` also reads the usual floor spellings ' ' and '-' of hand-written levels.
SYMBOLS: dict[str, tuple[bool, bool, bool, bool]] = {
    WALL: (True, False, False, False),
    FLOOR: (False, False, False, False),
    TARGET: (False, True, False, False),
    BOX: (False, False, True, False),
    BOX_ON_TARGET: (False, True, True, False),
    PLAYER: (False, False, False, True),
    PLAYER_ON_TARGET: (False, True, False, True),
    " ": (False, False, False, False),
    "-": (False, False, False, False),
}

Cell = tuple[int, int]


class SearchLimitExceeded(RuntimeError):
    """``solve`` gave up at its ``max_expansions`` limit (the answer is unknown)."""


def _step(cell: Cell, move: str) -> Cell:
    dr, dc = DELTAS[move]
    return cell[0] + dr, cell[1] + dc


def _pull_distances(
    height: int, width: int, walls: frozenset[Cell], targets: Iterable[Cell]
) -> dict[Cell, int]:
    """Fewest pushes from each floor cell to the nearest target (no other boxes in the way).

    A push moves a box from ``b`` to ``b+d`` with the player at ``b-d``. Reversed, a box at
    ``x`` came from ``c = x-d`` with the player at ``c-d``; both must be floor. Multi-source
    BFS of such pulls from the targets; unreached floor cells are dead squares.
    """

    def is_wall(cell: Cell) -> bool:
        return not (0 <= cell[0] < height and 0 <= cell[1] < width) or cell in walls

    distance = dict.fromkeys(targets, 0)
    queue = deque(sorted(targets))
    while queue:
        x = queue.popleft()
        for dr, dc in DELTAS.values():
            c = (x[0] - dr, x[1] - dc)
            if c in distance or is_wall(c) or is_wall((c[0] - dr, c[1] - dc)):
                continue
            distance[c] = distance[x] + 1
            queue.append(c)
    return distance


@dataclass(frozen=True, eq=False)
class Board:
    """Immutable task data: the grid size, walls, targets and push distances.

    ``push_distance[cell]`` is the fewest pushes that bring a box from ``cell`` to some
    target when no other box is in the way and the player can reach any side of the box
    (a reverse BFS of pulls from the targets). Floor cells missing from it are *dead
    squares*: a box there can never reach a target (non-target corners, for example).
    """

    height: int
    width: int
    walls: frozenset[Cell]
    targets: frozenset[Cell]
    push_distance: dict[Cell, int] = field(repr=False)
    max_push_distance: int = field(repr=False)
    # Per target, in sorted target order: the same distance to that one target.
    target_push_distance: tuple[dict[Cell, int], ...] = field(repr=False)

    @classmethod
    def create(cls, height: int, width: int, walls: Iterable[Cell], targets: Iterable[Cell]) -> Board:
        walls, targets = frozenset(walls), frozenset(targets)
        if height < 1 or width < 1:
            raise ValueError(f"Sokoban board must be at least 1x1, got {height}x{width}")
        if not targets:
            raise ValueError("Sokoban board needs at least one target")
        for cell in walls | targets:
            if not (0 <= cell[0] < height and 0 <= cell[1] < width):
                raise ValueError(f"cell {cell} is outside the {height}x{width} board")
        if walls & targets:
            raise ValueError(f"targets on walls: {sorted(walls & targets)}")
        distance = _pull_distances(height, width, walls, targets)
        per_target = tuple(_pull_distances(height, width, walls, {t}) for t in sorted(targets))
        return cls(height, width, walls, targets, distance, max(distance.values()), per_target)

    def is_wall(self, cell: Cell) -> bool:
        r, c = cell
        return not (0 <= r < self.height and 0 <= c < self.width) or cell in self.walls

    def floor_cells(self) -> list[Cell]:
        """Every non-wall cell, row by row."""
        return [(r, c) for r in range(self.height) for c in range(self.width) if (r, c) not in self.walls]

    def is_dead(self, cell: Cell) -> bool:
        """A box on this floor cell can never be pushed onto a target."""
        return cell not in self.push_distance


class Sokoban:
    """A player and boxes on a ``Board``. Implements the ``envs.planning.puzzle.Puzzle``
    protocol. Moves are ``"U" "D" "L" "R"``; walking into a box pushes it one cell."""

    __slots__ = ("board", "player", "boxes")

    def __init__(self, board: Board, player: Cell, boxes: Iterable[Cell], *, check: bool = True) -> None:
        self.board = board
        self.player = player
        self.boxes = frozenset(boxes)
        if check:
            self._check()

    def _check(self) -> None:
        board = self.board
        if board.is_wall(self.player):
            raise ValueError(f"the player {self.player} is on a wall or off the board")
        if self.player in self.boxes:
            raise ValueError(f"the player {self.player} is on a box")
        bad = sorted(box for box in self.boxes if board.is_wall(box))
        if bad:
            raise ValueError(f"boxes on walls or off the board: {bad}")
        if len(self.boxes) != len(board.targets):
            raise ValueError(f"{len(self.boxes)} boxes but {len(board.targets)} targets; they must match")

    @classmethod
    def from_rows(cls, rows: Iterable[str]) -> Sokoban:
        """A state from rows of symbols (see ``SYMBOLS``), e.g. ``["#####", "#@$.#", "#####"]``."""
        rows = list(rows)
        if not rows or any(len(row) != len(rows[0]) for row in rows) or not rows[0]:
            raise ValueError("rows must be a non-empty rectangle of symbols")
        walls, targets, boxes, players = [], [], [], []
        for r, row in enumerate(rows):
            for c, symbol in enumerate(row):
                if symbol not in SYMBOLS:
                    raise ValueError(f"unknown symbol {symbol!r} at ({r}, {c})")
                is_wall, is_target, has_box, has_player = SYMBOLS[symbol]
                for flag, cells in (
                    (is_wall, walls),
                    (is_target, targets),
                    (has_box, boxes),
                    (has_player, players),
                ):
                    if flag:
                        cells.append((r, c))
        if len(players) != 1:
            raise ValueError(f"need exactly one player ('@' or '+'), found {len(players)}")
        board = Board.create(len(rows), len(rows[0]), walls, targets)
        return cls(board, players[0], boxes)

    def copy(self) -> Sokoban:
        return Sokoban(self.board, self.player, self.boxes, check=False)

    def __deepcopy__(self, memo: dict) -> Sokoban:  # env.clone(): share the board
        return self.copy()

    def blocked(self, move: str) -> str | None:
        """Why ``move`` is illegal now, or ``None`` if it is legal."""
        if move not in DELTAS:
            return f"unknown move {move!r}"
        target = _step(self.player, move)
        if self.board.is_wall(target):
            return "the player would walk into a wall"
        if target in self.boxes:
            beyond = _step(target, move)
            if self.board.is_wall(beyond):
                return "the box would be pushed into a wall"
            if beyond in self.boxes:
                return "the box would be pushed into another box"
        return None

    def legal_moves(self) -> list[str]:
        return [move for move in MOVES if self.blocked(move) is None]

    def apply(self, move: str) -> str | None:
        reason = self.blocked(move)
        if reason is not None:
            return reason
        target = _step(self.player, move)
        if target in self.boxes:
            self.boxes = self.boxes.difference((target,)).union((_step(target, move),))
        self.player = target
        return None

    def is_solved(self) -> bool:
        return self.boxes <= self.board.targets

    def boxes_on_targets(self) -> int:
        return len(self.boxes & self.board.targets)

    def potential(self) -> float:
        """Progress in [0, 1], exactly 1.0 iff solved.

        ``(on + 1 - cost / (n * D)) / (n + 1)`` with ``n`` boxes, ``on`` of them on
        targets, ``cost`` the sum over boxes of their push distance to the nearest target
        (``Board.push_distance``; a box on a dead square counts as ``D``) and ``D`` one
        more than the largest push distance on the board. Unsolved states stay at most
        ``n / (n + 1)``; pushing a box into a dead square lowers it.
        """
        board = self.board
        n = len(self.boxes)
        if n == 0:
            return 1.0
        dead = board.max_push_distance + 1
        cost = sum(board.push_distance.get(box, dead) for box in self.boxes)
        return (self.boxes_on_targets() + 1 - cost / (n * dead)) / (n + 1)

    def key(self) -> Hashable:
        return self.player, tuple(sorted(self.boxes))

    def __repr__(self) -> str:
        return f"Sokoban(player={self.player}, boxes={sorted(self.boxes)})"

    def render(self) -> str:
        """Grid with row/column numbers: ``#`` wall, ``_`` floor, ``.`` target, ``$`` box,
        ``*`` box on target, ``@`` player, ``+`` player on target."""
        board = self.board
        header = "   " + "".join(str(c % 10) for c in range(board.width))
        lines = [header]
        for r in range(board.height):
            cells = []
            for c in range(board.width):
                cell = (r, c)
                if cell in board.walls:
                    cells.append(WALL)
                elif cell == self.player:
                    cells.append(PLAYER_ON_TARGET if cell in board.targets else PLAYER)
                elif cell in self.boxes:
                    cells.append(BOX_ON_TARGET if cell in board.targets else BOX)
                else:
                    cells.append(TARGET if cell in board.targets else FLOOR)
            lines.append(f"{r:>2} " + "".join(cells))
        return "\n".join(lines)


def solve(puzzle: Sokoban, max_expansions: int | None = None) -> list[str] | None:
    """A solution with the fewest moves (player steps, pushes included), or ``None`` if
    the state cannot be solved.

    A* over push states: a state is the boxes and the player's cell right after a push
    (or at the start). An edge is a shortest walk (BFS, not touching boxes) to a cell next
    to a box plus the push, costing the walk length + 1, so the search is exact in
    moves. The heuristic is the cheapest assignment of boxes to distinct targets, summing
    each box's push distance to its target: a push moves one box one cell, so it is
    admissible and consistent and the first solved state popped is optimal. Pruned, since
    they can never be solved: a box on a dead square, boxes that cannot all reach
    distinct targets, and freeze deadlocks (a pushed box that can never move again,
    leaning on walls or on boxes that cannot move either, with some box of that group off
    its target). Ties are broken deterministically.

    Raises:
        SearchLimitExceeded: ``max_expansions`` states were expanded without an answer
            (no limit by default; the level generator sets one to skip huge searches).
    """
    board = puzzle.board
    # Padded index grid: one ring of walls around the board, so no bounds checks.
    stride = board.width + 2
    size = (board.height + 2) * stride

    def index(cell: Cell) -> int:
        return (cell[0] + 1) * stride + cell[1] + 1

    is_open = [False] * size
    is_target = [False] * size
    distance = [-1] * size  # -1: wall or dead square
    for cell in board.floor_cells():
        is_open[index(cell)] = True
    for cell in board.targets:
        is_target[index(cell)] = True
    for cell, d in board.push_distance.items():
        distance[index(cell)] = d
    per_target = []
    for target_distance in board.target_push_distance:
        table = [-1] * size
        for cell, d in target_distance.items():
            table[index(cell)] = d
        per_target.append(table)
    assignments = list(itertools.permutations(range(len(per_target)), len(puzzle.boxes)))
    offsets = [(move, dr * stride + dc) for move, (dr, dc) in DELTAS.items()]

    matching: dict[frozenset[int], int | None] = {}

    def box_cost(boxes: frozenset[int]) -> int | None:
        """Cheapest assignment of boxes to distinct targets (``None``: impossible)."""
        if boxes in matching:
            return matching[boxes]
        rows = [[table[box] for table in per_target] for box in sorted(boxes)]
        best_cost = None
        for assignment in assignments:
            cost = 0
            for row, t in zip(rows, assignment, strict=True):
                d = row[t]
                if d < 0:
                    break
                cost += d
            else:
                if best_cost is None or cost < best_cost:
                    best_cost = cost
        matching[boxes] = best_cost
        return best_cost

    def frozen(box: int, boxes: frozenset[int], leaning: set[int]) -> bool | None:
        """``None`` if ``box`` may still move; else whether the group of immovable boxes
        it leans on (itself included) has a box off its target. Boxes in ``leaning`` (the
        callers) are assumed immovable: a group in which each box is blocked, given the
        others are, can never make a first move."""
        leaning.add(box)
        result = None
        across = blocked(box, 1, boxes, leaning)
        if across is not None:
            along = blocked(box, stride, boxes, leaning)
            if along is not None:
                result = across or along or not is_target[box]
        leaning.discard(box)
        return result

    def blocked(box: int, step: int, boxes: frozenset[int], leaning: set[int]) -> bool | None:
        """``None`` if ``box`` may move along this axis; else as ``frozen``."""
        before, after = box - step, box + step
        if not is_open[before] or not is_open[after]:
            return False  # a wall on one side: no push along this axis
        if distance[before] < 0 and distance[after] < 0:
            return False  # either push would put it on a dead square
        for side in (before, after):
            if side in leaning:
                return False
            if side in boxes:
                group = frozen(side, boxes, leaning)
                if group is not None:
                    return group
        return None

    neighbours = [
        [cell + offset for _, offset in offsets if is_open[cell + offset]] if is_open[cell] else []
        for cell in range(size)
    ]

    def walk(player: int, boxes: frozenset[int]) -> dict[int, int]:
        """BFS over cells the player reaches without pushing: cell -> steps, in BFS order."""
        steps = {player: 0}
        frontier = [player]
        depth = 0
        while frontier:
            depth += 1
            next_frontier = []
            for cell in frontier:
                for nxt in neighbours[cell]:
                    if nxt not in steps and nxt not in boxes:
                        steps[nxt] = depth
                        next_frontier.append(nxt)
            frontier = next_frontier
        return steps

    player = index(puzzle.player)
    boxes = frozenset(index(box) for box in puzzle.boxes)
    h0 = box_cost(boxes)
    if h0 is None:
        return None
    start = (player, boxes)
    best = {start: 0}
    parent: dict[tuple[int, frozenset[int]], tuple[tuple[int, frozenset[int]], str, int]] = {}
    counter = expansions = 0
    # (f, h, order, player, boxes): lower h first among equal f goes deeper, then FIFO.
    heap = [(h0, h0, counter, player, boxes)]
    while heap:
        f, h, _, player, boxes = heapq.heappop(heap)
        state = (player, boxes)
        g = best[state]
        if f - h > g:
            continue  # stale entry: reached more cheaply since
        if h == 0:
            return _moves(state, parent, walk, offsets)
        expansions += 1
        if max_expansions is not None and expansions > max_expansions:
            raise SearchLimitExceeded(f"no answer after expanding {max_expansions} states")
        steps = walk(player, boxes)
        for box in sorted(boxes):
            for move, offset in offsets:
                stand, beyond = box - offset, box + offset
                if stand not in steps or distance[beyond] < 0 or beyond in boxes:
                    continue  # unreachable, or into a wall, dead square or another box
                new_boxes = boxes.difference((box,)).union((beyond,))
                if frozen(beyond, new_boxes, set()):
                    continue
                new_h = box_cost(new_boxes)
                if new_h is None:
                    continue
                new_g = g + steps[stand] + 1
                new_state = (box, new_boxes)
                old = best.get(new_state)
                if old is not None and old <= new_g:
                    continue
                best[new_state] = new_g
                parent[new_state] = (state, move, offset)
                counter += 1
                heapq.heappush(heap, (new_g + new_h, new_h, counter, box, new_boxes))
    return None


def _moves(state, parent, walk, offsets) -> list[str]:
    """Rebuild the move list of ``solve``: each push preceded by a shortest walk, found by
    stepping back from the push cell to a neighbour one step closer (canonical order)."""
    moves: list[str] = []
    while state in parent:
        previous, push, offset = parent[state]
        player, boxes = previous
        steps = walk(player, boxes)
        cell = state[0] - offset  # the player pushed from here
        moves.append(push)
        while cell != player:
            for move, step in offsets:
                if steps.get(cell - step) == steps[cell] - 1:
                    moves.append(move)
                    cell -= step
                    break
        state = previous
    return moves[::-1]
