"""Referential game rules: generated objects, the exact scripted speaker and listener.

An object is one value per attribute (size, color, pattern, shape), e.g. ``("big", "red",
"striped", "circle")``; 2 x 6 x 3 x 5 = 180 objects. The scripted speaker names the fewest
attribute values that single out the target; the scripted listener keeps the objects whose
attributes include every attribute word of the message and picks the first of them. So the
two scripted partners always agree, and a model's message is "understood" exactly when it
names values that only the target has.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

__all__ = [
    "ATTRIBUTES",
    "VOCABULARY",
    "Obj",
    "describe",
    "random_objects",
    "distinguishing_message",
    "message_words",
    "consistent",
    "listener_pick",
]

ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "size": ("small", "big"),
    "color": ("red", "green", "blue", "yellow", "purple", "orange"),
    "pattern": ("plain", "striped", "dotted"),
    "shape": ("circle", "square", "triangle", "star", "heart"),
}
VOCABULARY = frozenset(value for values in ATTRIBUTES.values() for value in values)
_WORD = re.compile(r"[a-z]+")

Obj = tuple[str, ...]
"""One value per attribute, in ``ATTRIBUTES`` order."""


def describe(obj: Obj) -> str:
    """``("big", "red", "striped", "circle")`` -> ``"big red striped circle"``."""
    return " ".join(obj)


def random_objects(rng: np.random.Generator, count: int) -> list[Obj]:
    """``count`` distinct random objects."""
    objects: list[Obj] = []
    while len(objects) < count:
        obj = tuple(values[int(rng.integers(len(values)))] for values in ATTRIBUTES.values())
        if obj not in objects:
            objects.append(obj)
    return objects


def distinguishing_message(objects: list[Obj], target: int) -> str:
    """The fewest attribute values (in attribute order, then color before shape...) that only
    ``objects[target]`` has, as words, e.g. ``"red"`` or ``"big circle"``."""
    chosen = objects[target]
    others = [obj for i, obj in enumerate(objects) if i != target]
    for size in range(1, len(chosen) + 1):
        for positions in itertools.combinations((1, 3, 2, 0), size):  # color, shape, pattern, size
            if all(any(other[p] != chosen[p] for p in positions) for other in others):
                return " ".join(chosen[p] for p in sorted(positions))
    raise ValueError("objects are not distinct")  # random_objects never makes such a set


def message_words(message: str) -> set[str]:
    """The attribute words a message mentions (case-insensitive, other words ignored)."""
    return {word for word in _WORD.findall(message.lower()) if word in VOCABULARY}


def consistent(obj: Obj, words: set[str]) -> bool:
    """``obj`` has every attribute word of the message."""
    return words <= set(obj)


def listener_pick(objects: list[Obj], message: str) -> int:
    """The scripted listener's choice: the first object that has every attribute word of the
    message (the first object when none has)."""
    words = message_words(message)
    return next((i for i, obj in enumerate(objects) if consistent(obj, words)), 0)
