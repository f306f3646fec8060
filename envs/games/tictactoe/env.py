"""Tic-tac-toe (``tictactoe-v0``): a competitive two-seat game with perfect information.

Roles and seats
    ``first_0`` plays X and moves first, ``second_0`` plays O. Each seat is its own role
    (``first``, ``second``), so a team says who sits where: **self-play** is one policy in
    both seats (``--policy shared``: the seats differ by prompt only); **a fixed opponent**
    is a scripted policy bound to a seat (``--roles second=oracle``: minimax). Team variant:
    ``mas`` only (a game has no single-agent form). (Not ``x``/``o``: PEFT mistakes an
    adapter named ``o``, a substring of its ``lora_`` prefix, when loading.)
Task
    The task seed picks an opening of ``opening_plies`` random plies (default 2: X's and
    O's first moves, 72 openings), after which X moves. Each opening belongs to one split
    (``envs.splits.generate_in_split`` on the board), so no held-out opening is trained
    on. (The empty board alone is a single position, which cannot be split.)
Action
    One free cell, numbered 1-9 row by row, inside ``<answer>...</answer>`` (``<answer>5``
    without the closing tag also counts). ``info["legal_moves"]`` lists the free cells.
Observation
    The rules in one line, the board with free cells numbered, the opponent's last move,
    the free cells, the feedback on the seat's last answer, then the instruction.
Rewards
    ``seat/outcome`` at the end of the game: +1 to the winner, -1 to the loser, 0 to both
    for a draw (zero-sum; no team reward, so ``alpha`` changes nothing). With
    ``minimax_reward=True`` every move also earns ``local/minimax``: the change of the
    mover's minimax value by that move (0 for an optimal move, -1 or -2 for a blunder), so
    the K candidates of an AT-GRPO turn differ in reward even mid-game.
Invalid actions
    No number, a number outside 1-9 or a taken cell: ``local/invalid`` (the penalty) and the
    seat's turn is lost (``"penalize"``), or the game ends for both (``"terminate"``).
Success
    ``info["success"]``: the game was played to its end (a win or a draw), as the oracle
    always does; who won is in the seat returns (``benchmarks.evaluate`` reports them).
Scripted opponents
    ``oracle`` (minimax), ``heuristic`` (win, else block, else centre, else a corner) and
    ``random`` (a random free cell), e.g. ``--roles second=heuristic``.
Horizon
    ``DEFAULT_MAX_CYCLES = 9`` (18 replies: a full game even with every other reply
    invalid); the training preset plays 5 cycles, enough for the 7 plies after an opening.

Versions: v0, this page.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from envs.core import StepOutcome, TrainingPreset, role_of
from envs.games.tictactoe import game
from envs.games.two_seats import TwoSeatGame
from envs.parsing import extract_answer
from envs.splits import generate_in_split

__all__ = ["TicTacToeEnv"]

MARKS = {"first": "X", "second": "O"}
_CELL = re.compile(r"^\s*(?:cell\s*)?([1-9])\s*[.!]?\s*$", re.IGNORECASE)


class TicTacToeEnv(TwoSeatGame):
    """Tic-tac-toe for two seats (see the module docstring).

    Args:
        opening_plies: Random plies played before the first reply (even, 2-6: X then O).
        minimax_reward: Add ``local/minimax`` (the change of the mover's minimax value).
        **kwargs: ``TextAECEnv`` arguments (``split``, ``invalid_action``, ...).
    """

    metadata: ClassVar[dict] = {**TwoSeatGame.metadata, "name": "tictactoe_v0"}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 9
    # Self-play by default: one policy (adapter) in both seats, SPIRAL's episode-level groups with
    # a per-seat baseline (a tree turn's one-step reward is 0 until the game ends).
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=8, max_cycles=5, policy="shared", algo="spiral"
    )

    def __init__(self, *, opening_plies: int = 2, minimax_reward: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        if (
            isinstance(opening_plies, bool)
            or not isinstance(opening_plies, int)
            or opening_plies not in (2, 4, 6)
        ):
            raise ValueError(
                f"TicTacToeEnv: opening_plies must be 2, 4 or 6 (even, so X moves first; at least 2, so "
                f"there are openings to split between train and test), got {opening_plies!r}"
            )
        self.opening_plies = opening_plies
        self.minimax_reward = bool(minimax_reward)

    # ------------------------------------------------------------------ task
    def _opening(self, rng: np.random.Generator) -> str:
        """``opening_plies`` random plies from the empty board, never ending the game."""
        while True:
            board, mark = game.EMPTY, "X"
            for _ in range(self.opening_plies):
                cells = game.legal_cells(board)
                board, mark = game.play(board, int(rng.choice(cells)), mark), game.other(mark)
            if not game.is_over(board):
                return board

    def _start_task(self, task_seed: int) -> None:
        self.board = generate_in_split(task_seed, self._opening, str)
        self.opening = self.board
        self.last_move: dict[str, int | None] = dict.fromkeys(self.possible_agents, None)

    def task_fingerprint(self) -> str:
        return self.opening

    # ------------------------------------------------------------------ views
    @staticmethod
    def _mark(agent: str) -> str:
        return MARKS[role_of(agent)]

    def _grid(self) -> str:
        cells = [mark if mark != "." else str(i + 1) for i, mark in enumerate(self.board)]
        rows = [" " + " | ".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
        return "\n---+---+---\n".join(rows)

    def _prompt(self, agent: str) -> str:
        mark = self._mark(agent)
        opponent = self.other(agent)
        lines = [
            f"Tic-tac-toe. You play {mark}, the other player {game.other(mark)}. "
            "Three of your marks in a row, column or diagonal win.",
            self._grid(),
        ]
        if (cell := self.last_move[opponent]) is not None:
            lines.append(f"{game.other(mark)} just took cell {cell}.")
        lines.append("Free cells: " + ", ".join(map(str, game.legal_cells(self.board))))
        if feedback := self.feedback_line(agent):
            lines.append(feedback)
        lines.append("Answer with one free cell number as <answer>N</answer>.")
        return "\n".join(lines)

    def _legal_moves(self, agent: str) -> list[str]:
        return [str(cell) for cell in game.legal_cells(self.board)]

    def _state_key(self) -> Hashable:
        return self.board

    def _render_text(self) -> str:
        return self._grid()

    # ------------------------------------------------------------------ acting
    def _act(self, agent: str, text: str) -> StepOutcome:
        mark = self._mark(agent)
        answer = extract_answer(text)
        match = _CELL.match(answer) if answer is not None and len(answer) <= 16 else None
        free = game.legal_cells(self.board)
        if match is None:
            return StepOutcome(
                invalid=True,
                feedback=f"No cell number found; answer like <answer>{free[0]}</answer>. Turn lost.",
            )
        cell = int(match.group(1))
        if cell not in free:
            return StepOutcome(
                invalid=True,
                feedback=f"Cell {cell} is taken; free cells: {', '.join(map(str, free))}. Turn lost.",
            )
        board, self.board = self.board, game.play(self.board, cell, mark)
        self.last_move[agent] = cell
        local = {}
        if self.minimax_reward:  # the mover's game value after its move, minus before it
            after = game.mover_value(self.board, game.other(mark), mark)
            local["minimax"] = float(after - game.mover_value(board, mark, mark))
        if not game.is_over(self.board):
            return StepOutcome(local=local, feedback=f"You took cell {cell}.")
        won = game.winner(self.board)
        result = 0.0 if won is None else (1.0 if won == mark else -1.0)
        seats = {agent: {"outcome": result}, self.other(agent): {"outcome": -result}}
        ending = "a draw" if won is None else f"{won} wins"
        return StepOutcome(
            local=local,
            seats=seats,
            terminated=True,
            success=True,
            feedback=f"You took cell {cell}: {ending}.",
        )

    # ------------------------------------------------------------------ scripted play
    def heuristic_response(self, agent: str) -> str:
        """A rule of thumb (the ladder's middle rung): complete a line, else block one of the
        opponent's, else take the centre, else the first free corner, else the first cell."""
        mark = self._mark(agent)
        free = game.legal_cells(self.board)
        for who in (mark, game.other(mark)):  # win first, then block
            for cell in free:
                if game.winner(game.play(self.board, cell, who)) == who:
                    return f"<answer>{cell}</answer>"
        for cell in (5, 1, 3, 7, 9):
            if cell in free:
                return f"<answer>{cell}</answer>"
        return f"<answer>{free[0] if free else 1}</answer>"

    def oracle_response(self, agent: str) -> str:
        """A minimax-optimal move for ``agent`` (the first of the best cells)."""
        best = game.best_cells(self.board, self._mark(agent))
        return f"<answer>{best[0] if best else 1}</answer>"
