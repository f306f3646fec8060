"""Disjoint train/test task spaces: seed ranges and content-hash assignment."""

from __future__ import annotations

import numpy as np
import pytest

from envs.splits import (
    TEST_SEED_START,
    check_seed,
    fingerprint_split,
    generate_in_split,
    split_of,
    split_seeds,
)


def test_split_seed_ranges():
    assert split_of(0) == "train" and split_of(TEST_SEED_START - 1) == "train"
    assert split_of(TEST_SEED_START) == "test"
    assert split_seeds("test", 3) == [TEST_SEED_START, TEST_SEED_START + 1, TEST_SEED_START + 2]
    assert split_seeds("train", 2, start=10) == [10, 11]
    with pytest.raises(ValueError, match="outside every split"):
        split_of(-1)
    with pytest.raises(ValueError, match="split must be one of"):
        split_seeds("valid", 1)


def test_check_seed_errors_name_the_fix():
    assert check_seed(np.int64(4), "train") == 4
    with pytest.raises(TypeError, match="seed must be an int"):
        check_seed(1.5, "train")
    with pytest.raises(TypeError):
        check_seed(True, "train")
    with pytest.raises(ValueError, match="Make the env with split='test'"):
        check_seed(TEST_SEED_START, "train")


def test_generate_in_split_lands_in_the_seed_split_and_is_deterministic():
    def generate(rng):
        return int(rng.integers(0, 1000))

    for seed in [0, 1, 2, TEST_SEED_START, TEST_SEED_START + 1]:
        level = generate_in_split(seed, generate, str)
        assert fingerprint_split(str(level)) == split_of(seed)
        assert generate_in_split(seed, generate, str) == level


def test_generate_in_split_reports_a_too_small_level_space():
    # One possible level: it can only live in one split, the other must fail clearly.
    only = "the only level"
    wrong_split = "test" if fingerprint_split(only) == "train" else "train"
    seed = split_seeds(wrong_split, 1)[0]
    with pytest.raises(RuntimeError, match="too small to split"):
        generate_in_split(seed, lambda rng: only, str, max_attempts=5)
