"""A sequential public goods game in the style of MAC-SPGG ("Everyone Contributes").

``N`` players move in a fixed order; each sees its predecessors' contributions and puts
``c`` of its ``E`` coins into the pot. Player ``i``'s payoff (``Rules.payoff``)::

    (E - c_i)                                   coins kept
    + share * C                                 equal share of the multiplied pot (share = r / N)
    + bonus * c_i * m_i                         cooperation bonus, m_i = mean fraction of E
                                                its predecessors gave (the first player: 0)
    - penalty * [C < threshold]                 collective penalty below the threshold

with ``C`` the total. A plain public goods game (bonus 0, no threshold, share < 1) has
free-riding as its only equilibrium. The bonus rewards following cooperation and the
threshold punishes breaking it, so that with ``Rules`` drawn by ``random_rules`` full
contribution is the unique subgame-perfect equilibrium (SPNE): ``spne_outcomes`` solves the
game by backward induction over the integer grid (following every tie) and ``random_rules``
keeps only rules whose one SPNE outcome is everyone giving ``E`` (309 of the grid's 2,560).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Rules",
    "spne_outcomes",
    "spne",
    "spne_values",
    "best_reply",
    "full_contribution_is_the_unique_spne",
    "random_rules",
]


@dataclass(frozen=True)
class Rules:
    """The coefficients of one task (see the module docstring)."""

    players: int
    endowment: int
    share: float
    bonus: float
    threshold: int
    penalty: float

    def payoff(self, contributions: tuple[int, ...], player: int) -> float:
        """Player ``player``'s payoff (0-based) once every player contributed."""
        mine = contributions[player]
        total = sum(contributions)
        before = contributions[:player]
        mean_before = sum(before) / (len(before) * self.endowment) if before else 0.0
        value = (self.endowment - mine) + self.share * total + self.bonus * mine * mean_before
        return value - (self.penalty if total < self.threshold else 0.0)

    def payoffs(self, contributions: tuple[int, ...]) -> tuple[float, ...]:
        return tuple(self.payoff(contributions, i) for i in range(self.players))

    def describe(self) -> str:
        """The payoff rule in words, for prompts."""
        return (
            f"Your payoff = coins you keep + {self.share:g} x total contributed + {self.bonus:g} x your "
            f"contribution x (average share of their {self.endowment} coins the players before you "
            f"contributed; 0 for the first player) - {self.penalty:g} to everyone if the total is below "
            f"{self.threshold}."
        )


@functools.lru_cache(maxsize=65536)
def spne_outcomes(rules: Rules, history: tuple[int, ...] = ()) -> frozenset[tuple[int, ...]]:
    """Every outcome (all contributions) some subgame-perfect equilibrium reaches from
    ``history``: backward induction over the integer grid following every tie, since a tie
    off the path can change what a predecessor prefers."""
    history = tuple(history)
    if len(history) == rules.players:
        return frozenset({history})
    mover = len(history)
    reachable = [o for c in range(rules.endowment + 1) for o in spne_outcomes(rules, (*history, c))]
    best = max(rules.payoff(o, mover) for o in reachable)
    return frozenset(o for o in reachable if abs(rules.payoff(o, mover) - best) < 1e-9)


def spne(rules: Rules, history: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The SPNE play from ``history`` on (every contribution, ``history`` included); where
    several equilibria remain (only off the path of the rules ``random_rules`` draws), the one
    with the highest welfare, then the larger contributions."""
    return max(spne_outcomes(rules, tuple(history)), key=lambda o: (sum(rules.payoffs(o)), o))


def spne_values(rules: Rules, history: tuple[int, ...]) -> tuple[float, ...]:
    """Every player's payoff when play continues by ``spne`` from ``history``."""
    return rules.payoffs(spne(rules, history))


def best_reply(rules: Rules, history: tuple[int, ...]) -> int:
    """The contribution ``spne`` plays for the player to move after ``history``."""
    return spne(rules, history)[len(history)]


def full_contribution_is_the_unique_spne(rules: Rules) -> bool:
    return spne_outcomes(rules, ()) == {(rules.endowment,) * rules.players}


def random_rules(rng: np.random.Generator, players: int = 3) -> Rules:
    """Coefficients drawn from a grid, kept only where full contribution is the unique SPNE
    (and a plain share below 1, so contributing is a social dilemma without the bonus)."""
    while True:
        endowment = int(rng.integers(3, 7))
        full = players * endowment
        rules = Rules(
            players=players,
            endowment=endowment,
            share=float(rng.choice([0.4, 0.5, 0.6, 0.7, 0.8])),
            bonus=float(rng.choice([0.5, 1.0, 1.5, 2.0])),
            threshold=int(rng.integers(full // 2, full + 1)),
            penalty=float(rng.choice([2.0, 4.0, 6.0, 8.0])),
        )
        if full_contribution_is_the_unique_spne(rules):
            return rules
