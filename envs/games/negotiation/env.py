"""Negotiation (``negotiation-v0``): mixed motive, private valuations, offer/accept/deny.

Roles and seats
    ``first_0`` and ``second_0`` (one role per seat; self-play is ``--policy shared``).
Rules
    Each seat holds 1-5 units of each of three resources (wheat, wood, ore) and values
    each unit privately at 1-9 coins; the two seats' valuations rank the resources in
    opposite orders, so trades that raise both values exist. Seats act in turn for
    ``turns`` actions in all (default 10). With no offer to answer, a seat offers a trade
    (``offer 2 wheat for 1 ore``: it gives 2 wheat and receives 1 ore) or passes; facing an
    offer, it accepts (the goods change hands) or denies. An offer both seats cannot
    afford is invalid. The rules are pure functions in ``game.py``.
Task
    The seed draws both inventories and valuations; each draw belongs to one split
    (``envs.splits.generate_in_split``).
Action
    ``offer N RESOURCE for M RESOURCE``, ``pass``, ``accept`` or ``deny`` inside
    ``<answer>...</answer>``. ``info["legal_moves"]`` lists every legal one.
Observation
    The rules, the seat's inventory and private values, the other's inventory (values
    hidden), the trades so far, the offer to answer, the feedback, the instruction.
Rewards
    At the end, each seat's *gain*: the value of its final inventory minus its initial one,
    by its own valuation. ``reward="relative"`` (default, zero-sum, SPIRAL's): ``seat/outcome``
    +1 to the seat with the larger gain, -1 to the other, 0 both on a tie.
    ``reward="own_gain"`` (general-sum): ``seat/gain``, the seat's own gain in coins.
Invalid actions
    ``local/invalid`` (the penalty); under ``"penalize"`` the reply also passes, or denies
    the offer it had to answer (``_forced_move``): a turn cannot be skipped with an offer open.
Scripted players
    ``heuristic`` (a fair trader: accepts an offer iff it raises its own value; otherwise
    offers the one-for-one swap that raises its value most while raising the other's too,
    which it can see as a scripted player, or passes) and ``random``. There is no exact
    oracle (no optimal play to compute against an unknown opponent).
Success
    ``info["success"]``: the game was played to its end.
Horizon
    ``ceil(turns / 2)`` cycles.

Versions: v0, this page.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from envs.core import StepOutcome, TrainingPreset
from envs.games.negotiation.game import (
    RESOURCES,
    Offer,
    affordable,
    draw_task,
    offer_text,
    possible_offers,
    trade,
    worth,
)
from envs.games.two_seats import TwoSeatGame
from envs.parsing import extract_answer
from envs.splits import generate_in_split

__all__ = ["NegotiationEnv", "RESOURCES"]

REWARDS = ("relative", "own_gain")
_OFFER = re.compile(
    r"^\s*offer\s+(\d{1,2})\s+([a-z]+)\s+for\s+(\d{1,2})\s+([a-z]+)\s*[.!]?\s*$", re.IGNORECASE
)
_WORD = re.compile(r"^\s*(pass|accept|deny)\s*[.!]?\s*$", re.IGNORECASE)


class NegotiationEnv(TwoSeatGame):
    """Two seats trade resources they value differently (see the module docstring).

    Args:
        turns: Actions in the game, 2-30 (even: both seats act equally often).
        reward: ``"relative"`` (zero-sum win/loss) or ``"own_gain"`` (each seat's gain).
        **kwargs: ``TextAECEnv`` arguments (``split``, ``invalid_action``, ...).
    """

    metadata: ClassVar[dict] = {**TwoSeatGame.metadata, "name": "negotiation_v0"}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 5  # 10 turns; __init__ sizes it to `turns`
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=16, max_cycles=None, policy="shared", algo="spiral"
    )

    def __init__(self, *, turns: int = 10, reward: str = "relative", **kwargs) -> None:
        if isinstance(turns, bool) or not isinstance(turns, int) or not 2 <= turns <= 30 or turns % 2:
            raise ValueError(f"NegotiationEnv: turns must be an even int in 2..30, got {turns!r}")
        if reward not in REWARDS:
            raise ValueError(f"NegotiationEnv: reward={reward!r}; choose one of {REWARDS}")
        if kwargs.get("max_cycles") is None:
            kwargs["max_cycles"] = turns // 2
        super().__init__(**kwargs)
        self.turns = turns
        self.reward_mode = reward

    # ------------------------------------------------------------------ task
    def _start_task(self, task_seed: int) -> None:
        inventories, self.values = generate_in_split(task_seed, draw_task, repr)
        self.start = {a: inv for a, inv in zip(self.possible_agents, inventories, strict=True)}
        self.inventory = {a: list(inv) for a, inv in self.start.items()}
        self.value_of = dict(zip(self.possible_agents, self.values, strict=True))
        self.pending: tuple[str, Offer] | None = None  # (offerer, offer) awaiting an answer
        self.trades: list[str] = []

    def task_fingerprint(self) -> str:
        return repr((tuple(self.start.values()), self.values))

    # ------------------------------------------------------------------ state
    def _worth(self, agent: str, inventory: list[int] | tuple[int, ...]) -> int:
        return worth(inventory, self.value_of[agent])

    def gain(self, agent: str) -> int:
        """``agent``'s value of its inventory now minus at the start, by its own valuation."""
        return self._worth(agent, self.inventory[agent]) - self._worth(agent, self.start[agent])

    def _after(self, offerer: str, offer: Offer) -> dict[str, list[int]]:
        responder = self.other(offerer)
        mine, theirs = trade(self.inventory[offerer], self.inventory[responder], offer)
        return {offerer: mine, responder: theirs}

    def _affordable(self, offerer: str, offer: Offer) -> bool:
        return affordable(self.inventory[offerer], self.inventory[self.other(offerer)], offer)

    def _facing_offer(self, agent: str) -> bool:
        return self.pending is not None and self.pending[0] != agent

    # ------------------------------------------------------------------ views
    def _stock(self, inventory: list[int]) -> str:
        return ", ".join(f"{n} {r}" for n, r in zip(inventory, RESOURCES, strict=True))

    def _prompt(self, agent: str) -> str:
        other = self.other(agent)
        left = self.turns - self.num_steps
        values = ", ".join(f"{r} {v}" for r, v in zip(RESOURCES, self.value_of[agent], strict=True))
        lines = [
            "Negotiation. Two players trade wheat, wood and ore; each values them privately. "
            "You win if your inventory's value rises more than the other player's.",
            f"Your inventory: {self._stock(self.inventory[agent])}. Your values per unit: {values} coins.",
            f"The other player's inventory: {self._stock(self.inventory[other])} (its values are hidden).",
            f"Your gain so far: {self.gain(agent):+d} coins. Actions left in the game: {left}.",
        ]
        if self.trades:
            lines.append("Trades so far: " + "; ".join(self.trades) + ".")
        if self._facing_offer(agent):
            offer = self.pending[1]
            lines.append(
                f"The other player offers {offer[0]} {offer[1]} for {offer[2]} {offer[3]} of yours. "
                "Answer <answer>accept</answer> or <answer>deny</answer>."
            )
        if feedback := self.feedback_line(agent):
            lines.append(feedback)
        if not self._facing_offer(agent):
            lines.append(
                "Make an offer such as <answer>offer 1 wheat for 2 ore</answer> (you give 1 wheat and get "
                "2 ore), or answer <answer>pass</answer>."
            )
        return "\n".join(lines)

    def _legal_moves(self, agent: str) -> list[str]:
        if self._facing_offer(agent):
            return ["accept", "deny"]
        mine, theirs = tuple(self.inventory[agent]), tuple(self.inventory[self.other(agent)])
        return ["pass", *possible_offers(mine, theirs)]

    def _state_key(self) -> Hashable:
        inventories = tuple(tuple(self.inventory[a]) for a in self.possible_agents)
        return (self.values, inventories, self.pending)

    def _render_text(self) -> str:
        parts = [
            f"{a}: {self._stock(self.inventory[a])} (values {self.value_of[a]})" for a in self.possible_agents
        ]
        pending = f"; open: {self.pending[0]} {offer_text(self.pending[1])}" if self.pending else ""
        return "; ".join(parts) + pending

    # ------------------------------------------------------------------ acting
    def _forced_move(self, agent: str) -> str:
        return "deny" if self._facing_offer(agent) else "pass"

    def _parse(self, agent: str, answer: str) -> tuple[str, Offer | None] | str:
        """(word, offer) or an error message."""
        facing = self._facing_offer(agent)
        if (word := _WORD.match(answer)) is not None:
            word = word.group(1).lower()
            if facing != (word in ("accept", "deny")):
                return "Answer the open offer: accept or deny." if facing else "There is no offer to answer."
            return word, None
        if (offer := _OFFER.match(answer)) is None:
            return "No move found."
        if facing:
            return "Answer the open offer first: accept or deny."
        give, given, get, got = int(offer[1]), offer[2].lower(), int(offer[3]), offer[4].lower()
        if given not in RESOURCES or got not in RESOURCES:
            return f"Resources are {', '.join(RESOURCES)}."
        parsed = (give, given, get, got)
        if not self._affordable(agent, parsed):
            return "That trade is not possible with the goods each player holds."
        return "offer", parsed

    def _act(self, agent: str, text: str) -> StepOutcome:
        answer = extract_answer(text)
        parsed = self._parse(agent, answer) if answer is not None and len(answer) <= 64 else "No move found."
        if isinstance(parsed, str):
            return StepOutcome(invalid=True, feedback=parsed)
        word, offer = parsed
        if word == "offer":
            self.pending = (agent, offer)
            said = f"You offered {offer[0]} {offer[1]} for {offer[2]} {offer[3]}."
        elif word == "accept":
            offerer, open_offer = self.pending
            self.inventory = self._after(offerer, open_offer)
            self.trades.append(f"{offerer.rsplit('_', 1)[0]} gave {open_offer[0]} {open_offer[1]} for "
                               f"{open_offer[2]} {open_offer[3]}")  # fmt: skip
            self.pending = None
            said = "You accepted the trade."
        elif word == "deny":
            self.pending = None
            said = "You denied the offer."
        else:
            said = "You passed."
        if self.num_steps + 1 < self.turns:
            return StepOutcome(feedback=said)
        return StepOutcome(
            seats=self._final_terms(), terminated=True, success=True, feedback=said + " Game over."
        )

    def _final_terms(self) -> dict[str, dict[str, float]]:
        gains = {a: self.gain(a) for a in self.possible_agents}
        if self.reward_mode == "own_gain":
            return {a: {"gain": float(g)} for a, g in gains.items()}
        first, second = self.possible_agents
        sign = float(np.sign(gains[first] - gains[second]))
        return {first: {"outcome": sign}, second: {"outcome": -sign}}

    # ------------------------------------------------------------------ scripted play
    def heuristic_response(self, agent: str) -> str:
        """A fair trader: accept iff the open offer raises its own value; else offer the
        one-for-one swap that raises its own value most while raising the other's too; else pass."""
        other = self.other(agent)
        if self._facing_offer(agent):
            after = self._after(*self.pending)
            better = self._worth(agent, after[agent]) > self._worth(agent, self.inventory[agent])
            return f"<answer>{'accept' if better else 'deny'}</answer>"
        best, best_gain = None, 0
        for given in RESOURCES:
            for got in RESOURCES:
                offer = (1, given, 1, got)
                if not self._affordable(agent, offer):
                    continue
                after = self._after(agent, offer)
                mine = self._worth(agent, after[agent]) - self._worth(agent, self.inventory[agent])
                theirs = self._worth(other, after[other]) - self._worth(other, self.inventory[other])
                if mine > best_gain and theirs > 0:
                    best, best_gain = offer, mine
        return f"<answer>{offer_text(best) if best else 'pass'}</answer>"
