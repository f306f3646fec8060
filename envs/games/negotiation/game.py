"""Negotiation rules as pure functions (no env state): what a task holds, what a trade does,
which offers are possible, what an inventory is worth.

A seat's inventory is a tuple of units per resource (``RESOURCES`` order); its values are the
coins per unit it privately assigns. An offer is ``(units given, resource given, units
received, resource received)`` from the offerer's side, written ``offer 2 wheat for 1 ore``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

__all__ = ["RESOURCES", "Offer", "offer_text", "possible_offers", "draw_task", "worth", "affordable", "trade"]

RESOURCES = ("wheat", "wood", "ore")

Offer = tuple[int, str, int, str]
"""(units given, resource given, units received, resource received), from the offerer's side."""

Inventory = Sequence[int]


def offer_text(offer: Offer) -> str:
    """``(2, "wheat", 1, "ore")`` -> ``"offer 2 wheat for 1 ore"`` (the action grammar)."""
    return f"offer {offer[0]} {offer[1]} for {offer[2]} {offer[3]}"


@functools.lru_cache(maxsize=4096)
def possible_offers(mine: tuple[int, ...], theirs: tuple[int, ...]) -> tuple[str, ...]:
    """Every affordable offer between two inventories (cached: the env rebuilds the list for
    every live agent after every step, and inventories change only when a trade is accepted)."""
    return tuple(
        offer_text((give, given, get, got))
        for i, given in enumerate(RESOURCES)
        for j, got in enumerate(RESOURCES)
        if i != j
        for give in range(1, mine[i] + 1)
        for get in range(1, theirs[j] + 1)
    )


def draw_task(rng: np.random.Generator) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """(inventories, values) of the two seats: 1-5 units of each resource, distinct values 1-9
    per unit, the two seats' values ranking the resources in opposite orders (so trades that
    raise both exist)."""
    inventories = tuple(tuple(int(x) for x in rng.integers(1, 6, size=3)) for _ in range(2))
    order = rng.permutation(3)
    low, mid, high = sorted(int(v) for v in rng.choice(np.arange(1, 10), size=3, replace=False))
    first = [0, 0, 0]
    for rank, resource in zip((low, mid, high), order, strict=True):
        first[resource] = rank
    low2, mid2, high2 = sorted(int(v) for v in rng.choice(np.arange(1, 10), size=3, replace=False))
    second = [0, 0, 0]
    for rank, resource in zip((high2, mid2, low2), order, strict=True):  # the opposite order
        second[resource] = rank
    return inventories, (tuple(first), tuple(second))


def worth(inventory: Inventory, values: Sequence[int]) -> int:
    """An inventory's value in coins under one seat's private values."""
    return sum(n * v for n, v in zip(inventory, values, strict=True))


def affordable(offerer: Inventory, responder: Inventory, offer: Offer) -> bool:
    """Whether both seats hold what ``offer`` moves (and it moves two different resources)."""
    give, given, get, got = offer
    return (
        given != got
        and give >= 1
        and get >= 1
        and offerer[RESOURCES.index(given)] >= give
        and responder[RESOURCES.index(got)] >= get
    )


def trade(offerer: Inventory, responder: Inventory, offer: Offer) -> tuple[list[int], list[int]]:
    """The two inventories after ``offer`` is accepted: (offerer's, responder's)."""
    give, given, get, got = offer
    i, j = RESOURCES.index(given), RESOURCES.index(got)
    mine, theirs = list(offerer), list(responder)
    mine[i] -= give
    mine[j] += get
    theirs[i] += give
    theirs[j] -= get
    return mine, theirs
