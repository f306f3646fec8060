"""Disjoint train/test task spaces.

Two guarantees, both tested:

1. *Seeds*: training tasks use seeds in ``[0, TEST_SEED_START)``, test tasks use seeds in
   ``[TEST_SEED_START, TEST_SEED_START + TEST_SEED_COUNT)``. An env made for one split
   refuses the other split's seeds, so a training run can never reset into a test task.
   Inside the train split, the last ``VALIDATION_SEED_COUNT`` seeds are the *validation
   slice*: trainers never draw them as training tasks, so hyperparameters and warm-start
   validation losses can be measured on train-split tasks no update has seen, without
   touching the test split.
2. *Content*: a level belongs to the split chosen by a hash of its canonical text (its
   "fingerprint"). The generator retries with a new stream until the level lands in the
   seed's split, so no puzzle can appear in both splits even when the level space is
   small (4x4 Sudoku, small Sokoban rooms). The reference AT-GRPO code evaluated on its
   first training puzzles; this makes that impossible.

The held-out protocol (docs/evaluation.md, "Held-out protocol") adds a third rule, about *which* test
tasks a reported number uses. Test tasks ``0 .. HELDOUT_TEST_START - 1`` (by index in the
test split) were played throughout development before the protocol: recipes, prompts and
learning rates were chosen with the first few hundred in view, and numbers on them did not
carry over to other test tasks (0.47 on tasks 0-63 against 0.23 on tasks 320-511 for the
same checkpoint). Every evaluation the project reports starts at ``HELDOUT_TEST_START``;
choices are made on the validation slice. ``heldout_seeds(n)`` gives that block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

import numpy as np

__all__ = [
    "SPLITS",
    "TEST_SEED_START",
    "TEST_SEED_COUNT",
    "VALIDATION_SEED_START",
    "VALIDATION_SEED_COUNT",
    "HELDOUT_TEST_START",
    "HEADLINE_TEST_TASKS",
    "heldout_seeds",
    "is_validation_seed",
    "validation_seeds",
    "split_of",
    "split_range",
    "split_seeds",
    "check_seed",
    "fingerprint_split",
    "generate_in_split",
]

SPLITS = ("train", "test")
TEST_SEED_START = 1_000_000_000
TEST_SEED_COUNT = 1_000_000_000
VALIDATION_SEED_COUNT = 1_000_000
VALIDATION_SEED_START = TEST_SEED_START - VALIDATION_SEED_COUNT
HELDOUT_TEST_START = 1_000_000
"""Index (in the test split) of the first task of every reported evaluation: the tasks
below it were looked at while the recipes were developed (module docstring). If a choice
is ever made by looking at this block, move the start past every task used so far and say
so in the held-out protocol (docs/evaluation.md)."""
HEADLINE_TEST_TASKS = 256
"""Test tasks behind a headline number: a task-level standard error <= 0.031 at any success
rate (sqrt(0.25 / 256))."""
_SPLIT_RANGES = {
    "train": range(0, TEST_SEED_START),
    "test": range(TEST_SEED_START, TEST_SEED_START + TEST_SEED_COUNT),
}

Level = TypeVar("Level")


def _check_split(split: str) -> str:
    if split not in _SPLIT_RANGES:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def split_of(seed: int) -> str:
    """Which split a task seed belongs to."""
    for split, seeds in _SPLIT_RANGES.items():
        if seed in seeds:
            return split
    raise ValueError(
        f"Task seed {seed!r} is outside every split: train seeds are 0..{TEST_SEED_START - 1}, "
        f"test seeds are {TEST_SEED_START}..{TEST_SEED_START + TEST_SEED_COUNT - 1}."
    )


def split_range(split: str) -> range:
    """All task seeds of a split."""
    return _SPLIT_RANGES[_check_split(split)]


def split_seeds(split: str, n: int, start: int = 0) -> list[int]:
    """The ``n`` task seeds ``start, start+1, ...`` of a split (e.g. the first 100 test tasks)."""
    seeds = _SPLIT_RANGES[_check_split(split)]
    if start < 0 or start + n > len(seeds):
        raise ValueError(f"split {split!r} has {len(seeds)} seeds; asked for [{start}, {start + n})")
    return list(seeds[start : start + n])


def heldout_seeds(n: int, start: int = 0) -> list[int]:
    """Seeds of the protocol's held-out test tasks ``HELDOUT_TEST_START + start .. + n - 1``:
    what every reported evaluation plays (module docstring)."""
    return split_seeds("test", n, start=HELDOUT_TEST_START + start)


def validation_seeds(n: int, start: int = 0) -> list[int]:
    """Seeds ``start .. start + n - 1`` of the validation slice (train-split seeds that
    trainers never train on; module docstring)."""
    if start < 0 or start + n > VALIDATION_SEED_COUNT:
        raise ValueError(
            f"the validation slice has {VALIDATION_SEED_COUNT} seeds; asked for [{start}, {start + n})"
        )
    return list(range(VALIDATION_SEED_START + start, VALIDATION_SEED_START + start + n))


def is_validation_seed(seed: int) -> bool:
    """Whether a train-split seed lies in the validation slice."""
    return VALIDATION_SEED_START <= seed < TEST_SEED_START


def check_seed(seed: object, split: str) -> int:
    """Validate a task seed for an env made for ``split``; returns it as ``int``.

    Raises:
        TypeError: seed is not an integer.
        ValueError: seed belongs to the other split (names the fix).
    """
    _check_split(split)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    actual = split_of(seed)
    if actual != split:
        raise ValueError(
            f"seed {seed} is a {actual!r} seed but this env was made with split={split!r}. "
            f"Make the env with split={actual!r}, or use envs.split_seeds({split!r}, n) "
            f"to get {split} seeds ({split} seeds start at {_SPLIT_RANGES[split].start})."
        )
    return seed


def fingerprint_split(fingerprint: str) -> str:
    """The split a level's canonical text belongs to (stable across runs and platforms)."""
    digest = hashlib.blake2b(fingerprint.encode("utf-8"), digest_size=8).digest()
    return SPLITS[digest[0] & 1]


def generate_in_split(
    seed: int,
    generate: Callable[[np.random.Generator], Level],
    fingerprint: Callable[[Level], str],
    max_attempts: int = 64,
) -> Level:
    """Generate the level of task ``seed`` so that its content lies in the seed's split.

    ``generate`` receives a fresh ``np.random.Generator`` per attempt, derived only from
    ``(seed, attempt)``: the same seed always yields the same level.

    Raises:
        RuntimeError: If ``max_attempts`` levels all fell in the other split (the level
            space for these parameters is too small to split; ask for a larger size).
    """
    split = split_of(seed)
    for attempt in range(max_attempts):
        level = generate(np.random.default_rng([seed, attempt]))
        if fingerprint_split(fingerprint(level)) == split:
            return level
    raise RuntimeError(
        f"Could not generate a {split!r} level for seed {seed} in {max_attempts} attempts: "
        "the level space for these parameters is too small to split into train and test. "
        "Ask for a larger size or difficulty."
    )
