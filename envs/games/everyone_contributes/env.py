"""Everyone Contributes (``everyone_contributes-v0``): a cooperative sequential public goods game.

Roles
    ``first_0``, ``second_0``, ``third_0`` move in that order, once each. Team variant:
    ``mas`` only. Self-play is one policy in every seat (the training preset); a scripted
    partner is ``--roles second=oracle`` (SPNE) or ``=random``.
Rules
    Each player has ``E`` coins and contributes 0..E to a pot after seeing its
    predecessors' contributions. Payoffs (``game.Rules.payoff``, MAC-SPGG style): coins
    kept, plus an equal share of the multiplied pot, plus a cooperation bonus for
    contributing after others did, minus a penalty for everyone if the total misses a
    threshold. The prompt states the rule with the task's numbers.
Task
    The seed draws the coefficients (endowment 3-6, share, bonus, threshold, penalty) from a
    grid, keeping only those where full contribution is the unique subgame-perfect
    equilibrium (``game.random_rules``; 309 such rule sets). Each rule set belongs to one
    split (``envs.splits.generate_in_split``).
Action
    An integer 0..E inside ``<answer>...</answer>``; ``info["legal_moves"]`` lists them.
Rewards
    At the end: ``team/welfare``, the sum of the payoffs (shared, scaled by ``alpha``), and
    ``seat/payoff``, each player's own payoff. With ``spne_reward=True`` every move also
    earns ``local/spne``: the mover's payoff if everyone then plays the SPNE, minus the same
    after its best reply (0 for the SPNE move, negative for less).
Invalid actions
    ``local/invalid`` (the penalty). Under ``"penalize"`` the reply contributes 0 for the
    player (``_forced_move``: a contribution cannot be skipped), under ``"terminate"`` the
    game ends.
Oracle
    The SPNE contribution from the current history (``game.spne``): full contribution on
    the equilibrium path.
Scripted partners
    ``oracle`` (SPNE), ``heuristic`` (a conditional cooperator: the predecessors' mean
    contribution, half the endowment first) and ``random``.
Success
    ``info["success"]``: every player contributed everything (the SPNE welfare).
Horizon
    One cycle.

Versions: v0, this page.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import ClassVar

from envs.core import StepOutcome, TextAECEnv, TrainingPreset
from envs.games.everyone_contributes import game
from envs.parsing import extract_answer
from envs.splits import generate_in_split

__all__ = ["EveryoneContributesEnv"]

_NUMBER = re.compile(r"^\s*(\d{1,2})\s*(?:coins?)?\s*[.!]?\s*$", re.IGNORECASE)


class EveryoneContributesEnv(TextAECEnv):
    """Three players contribute to a pot in turn (see the module docstring).

    Args:
        spne_reward: Add ``local/spne`` (the mover's SPNE payoff change by its move).
        **kwargs: ``TextAECEnv`` arguments (``split``, ``alpha``, ``invalid_action``, ...).
    """

    metadata: ClassVar[dict] = {**TextAECEnv.metadata, "name": "everyone_contributes_v0", "suite": "games"}
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("first", "second", "third")}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 1
    # Cooperative: shared weights, and the SPNE term gives every AT-GRPO turn group a spread.
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=8, max_cycles=None, policy="shared", env_kwargs={"spne_reward": True}
    )
    APPEND_FEEDBACK: ClassVar[bool] = False
    CLONE_SHARED_ATTRS: ClassVar[tuple[str, ...]] = ("spec", "rules")  # frozen: clones share it

    def __init__(self, *, spne_reward: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spne_reward = bool(spne_reward)

    # ------------------------------------------------------------------ task
    def _start_task(self, task_seed: int) -> None:
        players = len(self.possible_agents)
        self.rules = generate_in_split(task_seed, lambda rng: game.random_rules(rng, players), repr)
        self.contributions: tuple[int, ...] = ()

    def task_fingerprint(self) -> str:
        return repr(self.rules)

    # ------------------------------------------------------------------ views
    def _prompt(self, agent: str) -> str:
        position = self.possible_agents.index(agent)
        names = [a.rsplit("_", 1)[0] for a in self.possible_agents]
        lines = [
            f"Public goods game. {len(names)} players contribute in turn: {', '.join(names)}. "
            f"You are the {names[position]} player. Each player has {self.rules.endowment} coins and "
            f"puts 0 to {self.rules.endowment} of them into a shared pot.",
            self.rules.describe(),
            "The team's score is the sum of all payoffs.",
        ]
        given = [f"{names[i]} gave {c}" for i, c in enumerate(self.contributions)]
        lines.append("Contributions so far: " + ("; ".join(given) if given else "none") + ".")
        if feedback := self.feedback_line(agent):
            lines.append(feedback)
        lines.append(
            f"Answer with your contribution, a whole number from 0 to {self.rules.endowment}, "
            "as <answer>N</answer>."
        )
        return "\n".join(lines)

    def _legal_moves(self, agent: str) -> list[str]:
        return [str(c) for c in range(self.rules.endowment + 1)]

    def _state_key(self) -> Hashable:
        return (self.rules, self.contributions)

    def _render_text(self) -> str:
        return f"{self.rules}; contributions {list(self.contributions)}"

    # ------------------------------------------------------------------ acting
    def _forced_move(self, agent: str) -> str:
        return "0"

    def _act(self, agent: str, text: str) -> StepOutcome:
        answer = extract_answer(text)
        match = _NUMBER.match(answer) if answer is not None and len(answer) <= 16 else None
        top = self.rules.endowment
        if match is None or int(match.group(1)) > top:
            return StepOutcome(
                invalid=True, feedback=f"Answer a whole number from 0 to {top}, like <answer>{top}</answer>."
            )
        given = int(match.group(1))
        before = self.contributions
        self.contributions = (*before, given)
        mover = len(before)
        local = {}
        if self.spne_reward:  # the mover's SPNE payoff after this move, minus after its best move
            best = game.best_reply(self.rules, before)
            local["spne"] = (
                game.spne_values(self.rules, self.contributions)[mover]
                - game.spne_values(self.rules, (*before, best))[mover]
            )
        if len(self.contributions) < len(self.possible_agents):
            return StepOutcome(local=local, feedback=f"You gave {given}.")
        payoffs = self.rules.payoffs(self.contributions)
        full = all(c == top for c in self.contributions)
        return StepOutcome(
            team={"welfare": sum(payoffs)},
            local=local,
            seats={a: {"payoff": p} for a, p in zip(self.possible_agents, payoffs, strict=True)},
            terminated=True,
            success=full,
            feedback=f"You gave {given}. Total {sum(self.contributions)}; payoffs "
            + ", ".join(f"{p:g}" for p in payoffs)
            + ".",
        )

    # ------------------------------------------------------------------ scripted play
    def heuristic_response(self, agent: str) -> str:
        """A conditional cooperator: the predecessors' mean contribution (rounded half up), half
        the endowment (rounded down) as the first player."""
        given = self.contributions
        amount = int(sum(given) / len(given) + 0.5) if given else self.rules.endowment // 2
        return f"<answer>{amount}</answer>"

    def oracle_response(self, agent: str) -> str:
        """The SPNE contribution from the current history."""
        return f"<answer>{game.spne(self.rules, self.contributions)[len(self.contributions)]}</answer>"
