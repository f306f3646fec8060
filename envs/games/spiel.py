"""OpenSpiel games as teamgym envs: ``spiel-v0`` (any two-player OpenSpiel game by name) and
the adapter behind ``mini_hanabi-v0``. Optional: ``pip install 'teamgym[spiel]'`` (open-spiel
2.0.2, Python >= 3.11); ``pyspiel`` is imported only when such an env is built, and a
missing install is one ImportError naming the extra.

Roles and seats
    ``first_0`` is OpenSpiel's player 0, ``second_0`` player 1. Two-player games whose players
    alternate (tic_tac_toe, kuhn_poker, hanabi, connect_four, ...): the base class's turn
    order is strict, so a game that lets a player move twice in a row raises a clear error.
Task
    The seed drives every chance node (the deal, a card drawn later) through the env's own
    generator, so a task is reproducible and a clone continues it identically. The state
    after the opening chance nodes (the deal) and ``opening_moves`` random legal moves
    (default 0) is the task's content, split between train and test
    (``envs.splits.generate_in_split``). A game without chance played from its start is a
    single task, shared by both splits: pass ``opening_moves=2`` for held-out openings.
Observation
    ``INTRO`` (the rules in a few lines: OpenSpiel has no prose), OpenSpiel's observation
    string for the seat, the numbered legal moves (``action_to_string``), the feedback.
Action
    A legal move's text (``<answer>(Play 0)</answer>``, case, spaces and brackets ignored)
    or its number in the list (``<answer>1</answer>``). ``info["legal_moves"]`` lists the texts.
Rewards
    OpenSpiel's per-step rewards: identical-utility (cooperative) games pay ``team/score``,
    zero-sum games ``seat/outcome`` to each seat (its sign is the win/draw/loss), others
    ``seat/payoff``.
Invalid actions
    ``local/invalid``; under ``"penalize"`` an OpenSpiel game has no "skip", so the reply
    plays ``_forced_move`` (the first legal move, or a game's safer choice).
Success
    The game reached its end (``MiniHanabiEnv``: with a positive score, no bomb).

Versions: v0, this page.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Hashable
from typing import Any, ClassVar

import numpy as np

from envs.core import StepOutcome, TextAECEnv, TrainingPreset
from envs.parsing import extract_answer
from envs.splits import generate_in_split

__all__ = ["SpielEnv", "import_pyspiel", "spiel_available", "SPIEL_EXTRA"]

SPIEL_EXTRA = "pip install 'teamgym[spiel]'  (open-spiel 2.0.2; needs Python >= 3.11)"
_NORMAL = re.compile(r"[\s()\[\]]+")


def import_pyspiel() -> Any:
    """``pyspiel``, or an ImportError that names the extra to install."""
    try:
        import pyspiel
    except ImportError:
        raise ImportError(f"OpenSpiel games need the optional extra: {SPIEL_EXTRA}") from None
    return pyspiel


def spiel_available() -> bool:
    """Whether OpenSpiel is installed (without importing it)."""
    return importlib.util.find_spec("pyspiel") is not None


def _normal(text: str) -> str:
    return _NORMAL.sub("", text).lower()


class SpielEnv(TextAECEnv):
    """A two-player OpenSpiel game (see the module docstring).

    Args:
        game: OpenSpiel short name (``pyspiel.registered_names()``); default ``GAME``.
        game_params: OpenSpiel game parameters, merged over ``PARAMS``.
        opening_moves: Random legal moves played from the task seed before the first reply.
        **kwargs: ``TextAECEnv`` arguments.
    """

    # "requires": the optional extra an env of this class needs (envs.spec(id).metadata reads it).
    metadata: ClassVar[dict] = {
        **TextAECEnv.metadata,
        "name": "spiel_v0",
        "suite": "games",
        "requires": "spiel",
    }
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("first", "second")}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 50
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=16, max_cycles=None, policy="shared", algo="spiral"
    )
    APPEND_FEEDBACK: ClassVar[bool] = False
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec", "game")
    GAME: ClassVar[str] = "liars_dice"  # the default of spiel-v0: alternating, dice rolls to split
    PARAMS: ClassVar[dict[str, Any]] = {}
    INTRO: ClassVar[str] = ""

    def __init__(
        self, *, game: str | None = None, game_params: dict | None = None, opening_moves: int = 0, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(opening_moves, bool) or not isinstance(opening_moves, int) or opening_moves < 0:
            raise ValueError(
                f"{type(self).__name__}: opening_moves must be an int >= 0, got {opening_moves!r}"
            )
        self.opening_moves = opening_moves
        pyspiel = import_pyspiel()
        self.game_name = game or self.GAME
        self.game_params = {**self.PARAMS, **(game_params or {})}
        try:
            self.game = pyspiel.load_game(self.game_name, self.game_params)
        except pyspiel.SpielError as err:
            raise ValueError(
                f"{type(self).__name__}: OpenSpiel cannot load {self.game_name!r}: {err}"
            ) from None
        kind = self.game.get_type()
        if (
            self.game.num_players() != len(self.roles)
            or kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL
        ):
            raise ValueError(
                f"{type(self).__name__}: {self.game_name!r} has {self.game.num_players()} players with "
                f"{kind.dynamics} dynamics; the adapter plays two-player sequential games"
            )
        utility = pyspiel.GameType.Utility
        self.pays = (
            "team"
            if kind.utility == utility.IDENTICAL
            else "outcome"
            if kind.utility == utility.ZERO_SUM
            else "payoff"
        )

    # ------------------------------------------------------------------ chance and tasks
    def _resolve_chance(self, state: Any, rng: np.random.Generator) -> None:
        while state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(actions[int(rng.choice(len(actions), p=np.asarray(probs) / sum(probs)))]))

    def _deal(self, rng: np.random.Generator) -> tuple[Any, np.random.Generator]:
        """The opening: chance nodes, then ``opening_moves`` random legal moves (never ending the game)."""
        while True:
            state = self.game.new_initial_state()
            self._resolve_chance(state, rng)
            for _ in range(self.opening_moves):
                if state.is_terminal():
                    break
                state.apply_action(int(rng.choice(state.legal_actions())))
                self._resolve_chance(state, rng)
            if not state.is_terminal():
                return state, rng

    def _start_task(self, task_seed: int) -> None:
        if self.opening_moves == 0 and not self.game.new_initial_state().is_chance_node():
            # No chance and no random opening: one task, which both splits share.
            self.state, self.rng = self.game.new_initial_state(), np.random.default_rng(task_seed)
        else:
            self.state, self.rng = generate_in_split(task_seed, self._deal, lambda dealt: str(dealt[0]))
        self.opening = str(self.state)

    def task_fingerprint(self) -> str:
        return self.opening

    # ------------------------------------------------------------------ views
    def _player(self, agent: str) -> int:
        return self.possible_agents.index(agent)

    def _actions(self, agent: str) -> list[int]:
        if self.state.is_terminal() or self.state.current_player() != self._player(agent):
            return []
        return list(self.state.legal_actions())

    def _legal_moves(self, agent: str) -> list[str]:
        player = self._player(agent)
        return [self.state.action_to_string(player, a) for a in self._actions(agent)]

    def _observation(self, agent: str) -> str:
        """OpenSpiel's text of what ``agent`` sees (subclasses may rewrite it)."""
        player = self._player(agent)
        if self.game.get_type().provides_observation_string:
            return self.state.observation_string(player)
        return self.state.information_state_string(player)

    def _prompt(self, agent: str) -> str:
        lines = [self.INTRO or f"OpenSpiel game {self.game_name}.", f"You are player {self._player(agent)}."]
        lines.append(self._observation(agent))
        moves = self._legal_moves(agent)
        lines.append("Legal moves: " + "  ".join(f"{i}. {m}" for i, m in enumerate(moves, 1)))
        if feedback := self.feedback_line(agent):
            lines.append(feedback)
        lines.append("Answer with a move's number or text, e.g. <answer>1</answer>.")
        return "\n".join(lines)

    def _state_key(self) -> Hashable:
        return str(self.state)

    def _render_text(self) -> str:
        return str(self.state)

    # ------------------------------------------------------------------ acting
    def _forced_move(self, agent: str) -> str | None:
        moves = self._legal_moves(agent)
        return moves[0] if moves else None

    def _parse(self, agent: str, answer: str) -> int | None:
        actions, moves = self._actions(agent), self._legal_moves(agent)
        text = answer.strip()
        if text.isdigit() and 1 <= int(text) <= len(moves):
            return actions[int(text) - 1]
        wanted = _normal(text)
        return next((a for a, m in zip(actions, moves, strict=True) if _normal(m) == wanted), None)

    def _act(self, agent: str, text: str) -> StepOutcome:
        if self.state.is_terminal() or self.state.current_player() != self._player(agent):
            raise RuntimeError(
                f"{type(self).__name__}: {self.game_name!r} did not alternate players (player "
                f"{self.state.current_player()} is to move, not {agent}); the adapter plays alternating games"
            )
        answer = extract_answer(text)
        action = self._parse(agent, answer) if answer is not None and len(answer) <= 64 else None
        if action is None:
            moves = self._legal_moves(agent)
            return StepOutcome(
                invalid=True, feedback=f"No legal move found; answer a number from 1 to {len(moves)}."
            )
        played = self.state.action_to_string(self._player(agent), action)
        self.state.apply_action(action)
        self._resolve_chance(self.state, self.rng)
        rewards = list(self.state.rewards())
        done = self.state.is_terminal()
        outcome = StepOutcome(feedback=f"You played {played}.", terminated=done, success=done)
        if self.pays == "team":
            outcome.team = {"score": float(rewards[0])}
        elif done or any(rewards):  # a draw pays 0 to each seat, still an outcome
            outcome.seats = {
                a: {self.pays: float(r)} for a, r in zip(self.possible_agents, rewards, strict=True)
            }
        return outcome
