"""TextAECEnv machinery, answer parsing and split helpers."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from envs.core import role_of, to_ascii
from envs.parsing import extract_answer, split_items
from envs.splits import (
    TEST_SEED_START,
    check_seed,
    fingerprint_split,
    generate_in_split,
    split_of,
    split_seeds,
)


def test_to_ascii_replaces_outside_printable_and_caps():
    assert to_ascii("abc\n\t") == "abc\n\t"
    assert to_ascii("é東\x00\x1b") == "????"
    assert to_ascii("x" * 10, max_chars=4) == "xxxx...[cut]"


def test_role_of():
    assert role_of("planner_0") == "planner" and role_of("player_12") == "player"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<answer>U R</answer>", "U R"),
        ("< ANSWER >  d l \n</ Answer >", "d l"),
        ("first <answer>a</answer> then <answer>b</answer>", "b"),
        ("cut off <answer> R R", "R R"),
        ("no tags", None),
        ("", None),
        ("</answer>", None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_split_items():
    assert split_items("U, R;D | L -> R=>U\nD") == ["U", "R", "D", "L", "R", "U", "D"]
    assert split_items("  ") == []


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


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"team": "trio"}, "team='trio' is unknown"),
        ({"invalid_action": "ignore"}, "invalid_action='ignore'"),
        ({"max_cycles": 0}, "max_cycles must be a positive int"),
        ({"invalid_penalty": -1}, "invalid_penalty"),
        ({"render_mode": "rgb_array"}, "render_mode='rgb_array'"),
        ({"split": "dev"}, "split must be one of"),
    ],
)
def test_constructor_errors_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        envs.make("plan_path", **kwargs)


def test_render_modes():
    env = envs.make("plan_path")
    with pytest.raises(RuntimeError, match="reset"):
        env.render()
    env.reset(seed=0)
    assert "A" in env.render()  # no render_mode: text is returned anyway
    ansi = envs.make("plan_path", render_mode="ansi")
    ansi.reset(seed=0)
    assert ansi.render() == env.render()


def test_human_render_prints(capsys):
    env = envs.make("plan_path", render_mode="human")
    env.reset(seed=0)
    assert env.render() is None
    assert "G" in capsys.readouterr().out


def test_overlong_action_is_cut_before_parsing():
    env = envs.make("plan_path", max_action_chars=12)
    env.reset(seed=0)
    env.step("<answer>L U L</answer>")
    assert env.transcript[-1] == ("planner_0", "<answer>L U ")  # what the env read
    assert "first 2 move(s)" in env.infos["planner_0"]["feedback"]  # L U: 2 moves, not 3


def test_spaces_are_per_instance_and_stable():
    a, b = envs.make("plan_path"), envs.make("plan_path")
    assert a.action_space("planner_0") is a.action_space("planner_0")
    assert a.action_space("planner_0") is not b.action_space("planner_0")
    with pytest.raises(KeyError, match="not an agent"):
        a.observation_space("coder_0")


def test_dead_agents_must_step_none():
    env = envs.make("plan_path", max_cycles=1)
    env.reset(seed=0)
    env.step("")
    env.step("")
    assert all(env.truncations.values())
    with pytest.raises(ValueError, match="only valid action is None"):
        env.step("<answer>U</answer>")
