"""The opponent ladder of a competitive two-seat game: the model against fixed opponents in
both seats, and Elo ratings over the ladder (``python -m benchmarks.evaluate --ladder``).

For every held-out task of a seed the model plays each ladder opponent (``random``,
``heuristic``, ``oracle``: ``agents.scripted``; ``base``: the untrained base model; ``pool``:
the snapshots of a run's opponent pool, ``pool@<step>``) twice, once in each seat, so every
opening and deal is played both ways and the seat's edge cancels. The opponents also play each
other the same way (a round robin). Metrics of the cell (per seed):

* ``vs/<opponent>/win``, ``/draw``, ``/loss``: the model's rates over both seats, from the
  sign of its summed ``seat/outcome`` (a game cut off before its end counts as none);
* ``elo/<player>``: Bradley-Terry ratings on the Elo scale (400 log10 of the strength
  ratio), ``random`` fixed at 0, from every pairing's score (a win 1, a draw 1/2); every
  pairing also gets one virtual draw, so a player that never loses (the minimax oracle)
  has a finite rating. ``elo/model`` is the model's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from itertools import combinations
from typing import Any

from agents.team import RoleBinding, Team
from trainers.evaluation import seat_outcomes
from trainers.records import Episode

__all__ = ["LADDER_OPPONENTS", "bradley_terry_elo", "ladder_metrics", "Play"]

LADDER_OPPONENTS = ("random", "heuristic", "oracle", "base", "pool")
"""Scripted players, the untrained base model, and ``pool``: every snapshot a run trained with
``--opponent-pool`` kept (``pool@<step>``, frozen)."""
ANCHOR = "random"  # rated 0

Play = Callable[[Team], Sequence[Episode]]
"""Plays the seed's tasks with a team (in the evaluation's settings) and returns the episodes."""


def _scores(episodes: Sequence[Episode], agent: str) -> list[float | None]:
    """``agent``'s result per episode: 1 win, 0.5 draw, 0 loss, None for a game cut off."""
    results = []
    for episode in episodes:
        outcome = seat_outcomes(episode).get(agent)
        results.append(None if outcome is None else (1.0 if outcome > 0 else 0.5 if outcome == 0 else 0.0))
    return results


def _both_seats(
    play: Play, roles: tuple[str, str], players: Mapping[str, RoleBinding], a: str, b: str, env: Any
) -> list[float | None]:
    """``a``'s results against ``b``: every task with ``a`` in each seat."""
    results: list[float | None] = []
    for seat, role in enumerate(roles):
        other = roles[1 - seat]
        team = Team(env, {role: players[a], other: players[b]})
        results += _scores(play(team), f"{role}_0")
    return results


def _is_snapshot(player: str) -> bool:
    """A run's own ``pool@<step>`` snapshot: a player of one run, not of the fixed ladder."""
    return player.startswith("pool")


def bradley_terry_elo(
    scores: Mapping[tuple[str, str], tuple[float, int]], anchor: str = ANCHOR, iterations: int = 2000
) -> dict[str, float]:
    """Elo-scale ratings from pairwise results: ``scores[(a, b)] = (a's points, games)``, a
    win 1 and a draw 1/2, each pair once. One virtual draw per pair keeps every rating
    finite. Minorise-maximise iterations (Hunter 2004); ``anchor`` is rated 0."""
    players = sorted({p for pair in scores for p in pair})
    points = dict.fromkeys(players, 0.0)
    games: dict[tuple[str, str], float] = {}
    for (a, b), (won, played) in scores.items():
        points[a] += won + 0.5
        points[b] += played - won + 0.5
        games[a, b] = games[b, a] = played + 1.0
    strength = dict.fromkeys(players, 1.0)
    for _ in range(iterations):
        new = {}
        for p in players:
            denominator = sum(n / (strength[p] + strength[q]) for (x, q), n in games.items() if x == p)
            new[p] = points[p] / denominator if denominator else strength[p]
        scale = new[anchor] if anchor in new else 1.0
        strength = {p: s / scale for p, s in new.items()}
    return {p: 400.0 * math.log10(s) for p, s in strength.items()}


def ladder_metrics(
    play: Play,
    env: Any,
    model: RoleBinding,
    opponents: Mapping[str, RoleBinding],
    *,
    fixed_pairs: MutableMapping[tuple[str, str], list[float | None]] | None = None,
) -> dict[str, float]:
    """The model's W/D/L against each opponent over both seats, and everyone's Elo.

    ``fixed_pairs``: the results of opponent-against-opponent pairings already played with the
    same ``play`` (tasks, sampler seed, settings), filled in as they are played. Two fixed
    players (the scripted ones, the base model; not a run's ``pool@`` snapshots) repeat their
    games exactly, so a caller that rates several models on one ladder plays them once (in
    ``benchmarks.selfplay``, random against base was a fifth of each evaluation)."""
    roles = tuple(env.roles)
    if len(roles) != 2:
        raise ValueError(f"a ladder needs a two-seat game; {type(env).__name__} has roles {list(roles)}")
    players = {"model": model, **opponents}
    metrics: dict[str, float] = {}
    pair_scores: dict[tuple[str, str], tuple[float, int]] = {}
    for a, b in combinations(players, 2):
        fixed = fixed_pairs is not None and not {a, b} & {"model"} and not _is_snapshot(a) | _is_snapshot(b)
        if fixed and (a, b) in fixed_pairs:
            played = fixed_pairs[a, b]
        else:
            played = _both_seats(play, roles, players, a, b, env)
            if fixed:
                fixed_pairs[a, b] = played
        results = [r for r in played if r is not None]
        pair_scores[a, b] = (sum(results), len(results))
        if a == "model":
            n = max(len(results), 1)
            metrics[f"vs/{b}/win"] = sum(r == 1.0 for r in results) / n
            metrics[f"vs/{b}/draw"] = sum(r == 0.5 for r in results) / n
            metrics[f"vs/{b}/loss"] = sum(r == 0.0 for r in results) / n
    anchor = ANCHOR if ANCHOR in players else next(iter(opponents))
    metrics.update({f"elo/{p}": r for p, r in bradley_terry_elo(pair_scores, anchor).items()})
    return metrics
