"""Kuhn poker rules, the Nash policy table and exact exploitability.

A hand: three cards J < Q < K, one to each player, both ante 1 chip. The *opener* (the
player to act first) passes or bets 1; after a pass the *responder* passes (showdown for
1) or bets; facing a bet a player calls (showdown for 2) or folds (loses the ante). So a
hand's history is a string of ``p`` (pass: check or fold) and ``b`` (bet: bet or call),
one of ``pp``, ``bp``, ``bb``, ``pbp``, ``pbb`` at its end, with the players alternating.

An *information set* is what the player to act knows: its card and the history, e.g.
``"Qpb"`` (holding Q, it passed and the other bet). There are 12: ``J Q K Jpb Qpb Kpb``
for the opener, ``Jp Qp Kp Jb Qb Kb`` for the responder. A *policy table* maps each to
the probability of ``b``; both positions' entries live in one table, so a table is a whole
strategy (what the player does as opener and as responder).

The exact values (``hand_value``, ``best_response_value``, ``exploitability``) enumerate
the 6 deals and, for best responses, the 64 pure strategies of a position; both positions
have 6 information sets with 2 actions. Enumeration is exact and small enough to be clearer
than a counterfactual tree walk.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

__all__ = [
    "CARDS",
    "DEALS",
    "INFOSETS",
    "OPENER_INFOSETS",
    "RESPONDER_INFOSETS",
    "TERMINAL",
    "hand_over",
    "to_move",
    "opener_chips",
    "nash_table",
    "hand_value",
    "seat_averaged_value",
    "best_response_value",
    "exploitability",
    "state_value",
]

CARDS = ("J", "Q", "K")
RANK = {card: rank for rank, card in enumerate(CARDS)}
DEALS: tuple[tuple[str, str], ...] = tuple(itertools.permutations(CARDS, 2))  # (opener, responder)
TERMINAL = frozenset({"pp", "bp", "bb", "pbp", "pbb"})
OPENER_INFOSETS = tuple(c + h for h in ("", "pb") for c in CARDS)
RESPONDER_INFOSETS = tuple(c + h for h in ("p", "b") for c in CARDS)
INFOSETS = OPENER_INFOSETS + RESPONDER_INFOSETS

PolicyTable = Mapping[str, float]
"""Information set -> probability of ``b`` (bet or call)."""


def hand_over(history: str) -> bool:
    return history in TERMINAL


def to_move(history: str) -> int:
    """0: the opener is to act, 1: the responder."""
    return len(history) % 2


def opener_chips(cards: tuple[str, str], history: str) -> int:
    """Chips the opener wins (negative: loses) at the end of a hand."""
    if history == "bp":
        return 1  # the responder folded to the bet
    if history == "pbp":
        return -1  # the opener folded to the bet
    stake = 1 if history == "pp" else 2
    return stake if RANK[cards[0]] > RANK[cards[1]] else -stake


def nash_table(alpha: float = 1 / 3) -> dict[str, float]:
    """A Nash equilibrium of Kuhn poker (Kuhn 1950): the opener's family is indexed by its J
    bluffing rate ``alpha`` in [0, 1/3]; the responder's part is the same for every alpha.
    The opener's game value is -1/18 chip per hand."""
    if not 0 <= alpha <= 1 / 3 + 1e-12:
        raise ValueError(f"alpha is the opener's J bluffing rate, in [0, 1/3]; got {alpha!r}")
    return {
        "J": alpha,
        "Q": 0.0,
        "K": 3 * alpha,  # fmt: skip
        "Jpb": 0.0,
        "Qpb": alpha + 1 / 3,
        "Kpb": 1.0,
        "Jp": 1 / 3,
        "Qp": 0.0,
        "Kp": 1.0,
        "Jb": 0.0,
        "Qb": 1 / 3,
        "Kb": 1.0,
    }


def _histories(opener: PolicyTable, responder: PolicyTable, cards: tuple[str, str]):
    """(terminal history, probability) pairs of one deal."""
    out, stack = [], [("", 1.0)]
    while stack:
        history, prob = stack.pop()
        if hand_over(history):
            out.append((history, prob))
            continue
        mover = to_move(history)
        table = opener if mover == 0 else responder
        bet = float(table[cards[mover] + history])
        stack.append((history + "b", prob * bet))
        stack.append((history + "p", prob * (1 - bet)))
    return out


def hand_value(opener: PolicyTable, responder: PolicyTable) -> float:
    """The opener's expected chips per hand when ``opener``'s table plays the opener and
    ``responder``'s table plays the responder (uniform deals)."""
    total = 0.0
    for cards in DEALS:
        total += sum(prob * opener_chips(cards, h) for h, prob in _histories(opener, responder, cards))
    return total / len(DEALS)


def seat_averaged_value(policy: PolicyTable, opponent: PolicyTable) -> float:
    """``policy``'s expected chips per hand against ``opponent``, half the hands as opener."""
    return (hand_value(policy, opponent) - hand_value(opponent, policy)) / 2


def _pure_tables(infosets: tuple[str, ...]):
    for bets in itertools.product((0.0, 1.0), repeat=len(infosets)):
        yield dict(zip(infosets, bets, strict=True))


def best_response_value(policy: PolicyTable, position: int) -> float:
    """The most a best response in ``position`` (0 opener, 1 responder) wins per hand
    against ``policy`` playing the other position."""
    if position == 0:
        return max(hand_value({**policy, **pure}, policy) for pure in _pure_tables(OPENER_INFOSETS))
    return max(-hand_value(policy, {**policy, **pure}) for pure in _pure_tables(RESPONDER_INFOSETS))


def exploitability(policy: PolicyTable) -> float:
    """How much a best response wins per hand against ``policy``, averaged over the two
    positions (OpenSpiel's NashConv / 2 for a two-player zero-sum game): 0 exactly at a Nash
    equilibrium; always-bet 1/3, uniform random 0.458."""
    missing = [infoset for infoset in INFOSETS if infoset not in policy]
    if missing:
        raise ValueError(f"the policy table lacks information sets {missing}")
    bad = {k: v for k, v in policy.items() if not 0 <= float(v) <= 1}
    if bad:
        raise ValueError(f"policy table entries are probabilities of 'b', in [0, 1]; got {bad}")
    return (best_response_value(policy, 0) + best_response_value(policy, 1)) / 2


def state_value(cards: tuple[str, str], history: str, table: PolicyTable) -> float:
    """The opener's expected chips from a hand's state (both cards known) when both players
    follow ``table`` from here on."""
    if hand_over(history):
        return float(opener_chips(cards, history))
    bet = float(table[cards[to_move(history)] + history])
    return bet * state_value(cards, history + "b", table) + (1 - bet) * state_value(
        cards, history + "p", table
    )
