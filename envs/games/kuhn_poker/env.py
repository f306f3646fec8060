"""Kuhn poker (``kuhn_poker-v0``): competitive, imperfect information, chance.

Roles and seats
    ``first_0`` and ``second_0``, one role per seat as in tic-tac-toe: self-play is one
    policy in both (``--policy shared``), a fixed opponent a scripted policy in one
    (``--roles second=oracle``: the Nash policy).
Rules
    ``hands`` hands per episode (default 3). A hand: three cards J < Q < K, one to each
    seat, both ante 1 chip. The *opener* checks or bets 1; after a check the other checks
    (showdown for 1) or bets; facing a bet a seat calls (showdown for 2) or folds (loses its
    ante). ``first_0`` opens the first hand; each later hand is opened by the seat whose
    turn it is (the one that did not end the last hand), as the turn order alternates
    strictly. The rules and their exact values are in ``game.py``.
Task
    The seed deals every hand. With ``hands >= 3`` each deal sequence (6^hands of them)
    belongs to one split (``envs.splits.generate_in_split``), so no held-out deal sequence
    is trained on; a single hand has only 6 deals, which train and test share (the seeds
    still differ).
Action
    One legal move inside ``<answer>...</answer>``: ``check`` or ``bet``, or facing a bet
    ``call`` or ``fold`` (``pass`` is read as check/fold). ``info["legal_moves"]`` lists them.
Observation
    The rules in two lines, the hand number, the seat's card, the betting so far, the chips
    won so far, the previous hand's showdown, the legal moves, the feedback on the seat's
    last answer, the instruction with both answers written out.
Rewards
    ``seat/outcome`` at the end of each hand: the chips each seat won (+-1 or +-2; zero-sum),
    so a seat's return is its chips over the episode, and a win is ending ahead. With
    ``nash_reward=True`` every move also earns ``local/nash``: the change of the mover's
    expected chips (both cards known, Nash play afterwards, ``game.state_value``) made by
    its move, against the Nash mixture at that point, so the K candidates of an AT-GRPO turn
    differ in reward mid-hand (on in the training preset).
Invalid actions
    ``local/invalid`` (the penalty). Under ``"penalize"`` a betting turn cannot be skipped
    (the other seat cannot act on a history where this one was to move), so the invalid
    reply also passes for the seat (checks, or folds to a bet: ``_forced_move``); under
    ``"terminate"`` the game ends for both.
Oracle
    The Nash policy (``game.nash_table``, opener's bluffing rate 1/3), mixed with a draw
    that is fixed per (task, step), so the oracle plays the same in a clone. It never loses
    in expectation; a hand it can lose.
Scripted opponents
    ``oracle`` (Nash), ``heuristic`` (``heuristic_response``: bet/call with K, check/call
    with Q, check/fold with J) and ``random``.
Success
    ``info["success"]``: every hand was played to its end.
Horizon
    ``ceil(3 * hands / 2)`` cycles, the longest possible game (every hand check, bet, call).

Versions: v0, this page.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from envs.core import StepOutcome, TrainingPreset
from envs.games.kuhn_poker import game
from envs.games.two_seats import TwoSeatGame
from envs.parsing import extract_answer
from envs.splits import generate_in_split

__all__ = ["KuhnPokerEnv"]

_MOVE = re.compile(r"^\s*(check|bet|call|fold|pass)\s*[.!]?\s*$", re.IGNORECASE)
_LETTER = {"check": "p", "fold": "p", "pass": "p", "bet": "b", "call": "b"}
MAX_HANDS = 20


class KuhnPokerEnv(TwoSeatGame):
    """Kuhn poker for two seats (see the module docstring).

    Args:
        hands: Hands per episode, 1-20.
        nash_reward: Add ``local/nash`` (the change of the mover's Nash expected chips).
        **kwargs: ``TextAECEnv`` arguments (``split``, ``invalid_action``, ...).
    """

    metadata: ClassVar[dict] = {**TwoSeatGame.metadata, "name": "kuhn_poker_v0"}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 5  # 3 hands; __init__ sizes it to `hands`
    # Self-play with SPIRAL's per-seat baseline; the Nash term adds a reward on every betting
    # turn (and gives the K candidates of an AT-GRPO turn, --algo at_grpo, different rewards).
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(
        max_new_tokens=8, max_cycles=None, policy="shared", algo="spiral", env_kwargs={"nash_reward": True}
    )

    def __init__(self, *, hands: int = 3, nash_reward: bool = False, **kwargs) -> None:
        if isinstance(hands, bool) or not isinstance(hands, int) or not 1 <= hands <= MAX_HANDS:
            raise ValueError(f"KuhnPokerEnv: hands must be an int in 1..{MAX_HANDS}, got {hands!r}")
        if kwargs.get("max_cycles") is None:
            kwargs["max_cycles"] = -(-3 * hands // 2)  # every hand check, bet, call
        super().__init__(**kwargs)
        self.hands = hands
        self.nash_reward = bool(nash_reward)
        self.nash = game.nash_table()

    # ------------------------------------------------------------------ task
    def _deal(self, rng: np.random.Generator) -> tuple[tuple[str, str], ...]:
        """(first seat's card, second seat's card) of every hand."""
        return tuple(game.DEALS[int(rng.integers(len(game.DEALS)))] for _ in range(self.hands))

    def _start_task(self, task_seed: int) -> None:
        if self.hands >= 3:
            self.deals = generate_in_split(task_seed, self._deal, self._deals_text)
        else:  # too few deal sequences to split
            self.deals = self._deal(np.random.default_rng(task_seed))
        self.hand = 0
        self.opener = self.possible_agents[0]
        self.history = ""
        self.last_move_letter = ""  # the last move played, "p" or "b" (the history restarts each hand)
        self.chips = dict.fromkeys(self.possible_agents, 0)
        self.last_hand: tuple[str, dict[str, str], dict[str, int]] | None = None  # history, cards, chips

    @staticmethod
    def _deals_text(deals: tuple[tuple[str, str], ...]) -> str:
        return " ".join(a + b for a, b in deals)

    def task_fingerprint(self) -> str:
        return self._deals_text(self.deals)

    # ------------------------------------------------------------------ state
    def card(self, agent: str) -> str:
        """``agent``'s card in the current hand."""
        return self.deals[self.hand][self.possible_agents.index(agent)]

    def _hand_cards(self) -> tuple[str, str]:
        """(opener's card, responder's card) of the current hand."""
        return self.card(self.opener), self.card(self.other(self.opener))

    def information_set(self, agent: str) -> str:
        """What ``agent`` knows of the current hand, as ``game.INFOSETS`` names it (``"Qpb"``)."""
        return self.card(agent) + self.history

    def set_information_set(self, agent: str, infoset: str) -> None:
        """Put the env in the first hand at ``infoset`` (``game.INFOSETS``, e.g. ``"Qpb"``) with
        ``agent`` to act: its card and the betting so far (the other card is one the
        information set allows, unseen by ``agent``). For probing a policy's action
        probabilities (``benchmarks.game_probes``), not for play."""
        if infoset not in game.INFOSETS:
            raise ValueError(f"unknown information set {infoset!r}; they are {game.INFOSETS}")
        self._check_agent(agent)
        card, history = infoset[0], infoset[1:]
        other_card = next(c for c in game.CARDS if c != card)
        first = agent == self.possible_agents[0]
        self.deals = ((card, other_card) if first else (other_card, card), *self.deals[1:])
        self.hand, self.history = 0, history
        mover_opens = game.to_move(history) == 0
        self.opener = agent if mover_opens else self.other(agent)
        self.agent_selection = agent
        self.num_steps = self.possible_agents.index(agent)  # so the turn order continues from agent
        self.infos[agent] = self._info(agent, {})

    def _facing_bet(self) -> bool:
        return self.history.endswith("b")

    def _words(self, history: str, agent: str) -> list[str]:
        """The betting so far, from ``agent``'s view."""
        lines, bet = [], False
        for i, letter in enumerate(history):
            who = (
                "You"
                if (self.opener if i % 2 == 0 else self.other(self.opener)) == agent
                else "The other player"
            )
            verb = ("called" if bet else "bet 1") if letter == "b" else ("folded" if bet else "checked")
            bet = bet or letter == "b"
            lines.append(f"{who} {verb}.")
        return lines

    # ------------------------------------------------------------------ views
    def _prompt(self, agent: str) -> str:
        lines = [
            "Kuhn poker. The deck is J < Q < K; each player antes 1 chip and gets one card. "
            "Check or bet 1; facing a bet, call or fold. The higher card wins at showdown.",
            f"Hand {self.hand + 1} of {self.hands}. Your card: {self.card(agent)}."
            + (" You act first." if agent == self.opener and not self.history else ""),
        ]
        lines += self._words(self.history, agent)
        lines.append(f"Your chips so far: {self.chips[agent]:+d}.")
        if self.last_hand is not None:
            lines.append(self._last_hand_line(agent))
        lines.append("Legal moves: " + ", ".join(self._legal_moves(agent)))
        if feedback := self.feedback_line(agent):
            lines.append(feedback)
        # Both answers spelled out: the default 135M model answers "Answer <answer>check</answer> or
        # <answer>bet</answer>." with a move, but "as <answer>MOVE</answer>." with prompt text.
        lines.append(
            "Answer " + " or ".join(f"<answer>{move}</answer>" for move in self._legal_moves(agent)) + "."
        )
        return "\n".join(line for line in lines if line)

    def _legal_moves(self, agent: str) -> list[str]:
        return ["call", "fold"] if self._facing_bet() else ["check", "bet"]

    def _state_key(self) -> Hashable:
        return (self.hand, self.deals[self.hand], self.opener, self.history)

    def _render_text(self) -> str:
        first, second = self.possible_agents
        return (
            f"hand {self.hand + 1}/{self.hands}: {first} {self.card(first)}, {second} {self.card(second)}, "
            f"opener {self.opener}, history {self.history or '-'}; chips {first} {self.chips[first]:+d}"
        )

    def _last_hand_line(self, agent: str) -> str:
        """How the previous hand ended, from ``agent``'s view."""
        history, cards, won = self.last_hand
        other = self.other(agent)
        if history.endswith("bp"):
            how = "You folded" if won[agent] < 0 else "The other player folded"
        else:
            how = f"Showdown: your {cards[agent]} against {cards[other]}"
        result = "you won" if won[agent] > 0 else "you lost"
        return f"Last hand: {how}; {result} {abs(won[agent])} chip{'s' if abs(won[agent]) > 1 else ''}."

    # ------------------------------------------------------------------ acting
    def _forced_move(self, agent: str) -> str:
        return "fold" if self._facing_bet() else "check"

    def _mover_value(self, history: str, mover: int) -> float:
        value = game.state_value(self._hand_cards(), history, self.nash)
        return value if mover == 0 else -value

    def _act(self, agent: str, text: str) -> StepOutcome:
        answer = extract_answer(text)
        match = _MOVE.match(answer) if answer is not None and len(answer) <= 16 else None
        legal = self._legal_moves(agent)
        if match is None:
            return StepOutcome(
                invalid=True, feedback=f"No legal move found; answer one of {', '.join(legal)}."
            )
        word = match.group(1).lower()
        if word != "pass" and word not in legal:
            return StepOutcome(
                invalid=True, feedback=f"You cannot {word} now; legal moves: {', '.join(legal)}."
            )
        letter = _LETTER[word]
        before, mover = self.history, game.to_move(self.history)
        self.history += letter
        self.last_move_letter = letter
        local = {}
        if self.nash_reward:  # the move's value minus the Nash mixture's at this point
            bet = self.nash[self._hand_cards()[mover] + before]
            mixture = bet * self._mover_value(before + "b", mover) + (1 - bet) * self._mover_value(
                before + "p", mover
            )
            local["nash"] = self._mover_value(self.history, mover) - mixture
        said = self._words(self.history, agent)[-1]
        if not game.hand_over(self.history):
            return StepOutcome(local=local, feedback=said)
        return self._end_hand(agent, local, said)

    def _end_hand(self, agent: str, local: dict[str, float], said: str) -> StepOutcome:
        opener, responder = self.opener, self.other(self.opener)
        won = game.opener_chips(self._hand_cards(), self.history)
        self.chips[opener] += won
        self.chips[responder] -= won
        self.last_hand = (
            self.history,
            {a: self.card(a) for a in (opener, responder)},
            {opener: won, responder: -won},
        )
        showdown = self._last_hand_line(agent)
        seats = {opener: {"outcome": float(won)}, responder: {"outcome": float(-won)}}
        last = self.hand + 1 == self.hands
        if not last:
            self.hand += 1
            self.history = ""
            self.opener = self.other(agent)  # the seat whose turn comes next
        return StepOutcome(
            local=local,
            seats=seats,
            terminated=last,
            success=last,
            feedback=f"{said} {showdown}",
        )

    # ------------------------------------------------------------------ scripted play
    def heuristic_response(self, agent: str) -> str:
        """A rule of thumb (the ladder's middle rung): bet and call with K, check and call with
        Q, check and fold with J. Exploitable (it never bluffs), unlike the Nash oracle."""
        card = self.card(agent)
        if self._facing_bet():
            return f"<answer>{'fold' if card == 'J' else 'call'}</answer>"
        return f"<answer>{'bet' if card == 'K' else 'check'}</answer>"

    def oracle_response(self, agent: str) -> str:
        """The Nash policy's move, mixed by a draw fixed per (task, step)."""
        bet = self.nash[self.information_set(agent)]
        draw = np.random.default_rng([self.task_seed, self.num_steps]).random()
        letter = "b" if draw < bet else "p"
        word = {"b": "call", "p": "fold"} if self._facing_bet() else {"b": "bet", "p": "check"}
        return f"<answer>{word[letter]}</answer>"
