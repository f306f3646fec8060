"""Referential game: objects, the scripted speaker and listener, rewards and the env contract."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from envs.games.referential import game
from envs.splits import split_seeds
from tests.envs.conftest import play_oracle


def test_scripted_speaker_names_the_fewest_values_only_the_target_has():
    objects = [
        ("big", "red", "plain", "circle"),
        ("small", "red", "plain", "square"),
        ("big", "blue", "plain", "circle"),
    ]
    assert game.distinguishing_message(objects, 1) == "square"  # tried in order color, shape, pattern, size
    assert game.distinguishing_message(objects, 2) == "blue"
    assert game.distinguishing_message(objects, 0) == "red circle"  # no single value is unique
    for target in range(3):
        assert game.listener_pick(objects, game.distinguishing_message(objects, target)) == target


def test_the_scripted_listener_filters_by_the_messages_attribute_words():
    objects = [("big", "red", "plain", "circle"), ("small", "blue", "dotted", "star")]
    assert game.listener_pick(objects, "The BLUE one, dotted!") == 1
    assert game.listener_pick(objects, "it is the one on the left") == 0  # no attribute word: first
    assert game.listener_pick(objects, "green") == 0  # nothing matches: first
    assert game.message_words("a Red-striped heart") == {"red", "striped", "heart"}


def test_random_objects_are_distinct_and_scripted_partners_always_agree():
    rng = np.random.default_rng(0)
    for _ in range(300):
        objects = game.random_objects(rng, 8)
        assert len(set(objects)) == 8
        target = int(rng.integers(8))
        message = game.distinguishing_message(objects, target)
        assert game.listener_pick(objects, message) == target


def _speak_and_pick(env, message: str, pick: int | str) -> None:
    env.step(f"<answer>{message}</answer>")
    env.step(f"<answer>{pick}</answer>")


def test_a_correct_pick_rewards_both_and_a_wrong_one_neither():
    env = envs.make("referential", oracle_reward=True)
    env.reset(seed=split_seeds("train", 1)[0])
    clone = env.clone()
    _speak_and_pick(env, "anything", env.listener_target + 1)
    assert env.success and env.infos["listener_0"]["reward_terms"] == {"team/correct": 1.0}
    assert env._cumulative_rewards["speaker_0"] >= 1.0  # the team reward reaches the speaker too
    wrong = (clone.listener_target + 1) % clone.num_objects + 1
    _speak_and_pick(clone, "anything", wrong)
    assert not clone.success and clone.infos["listener_0"]["reward_terms"] == {"team/correct": 0.0}
    assert "Wrong: the target was" in clone.infos["listener_0"]["feedback"]


def test_the_oracle_reward_scores_the_message_before_the_listener_acts():
    env = envs.make("referential", oracle_reward=True)
    env.reset(seed=split_seeds("train", 1)[0])
    good = game.distinguishing_message(env.objects, env.target)
    clone = env.clone()
    env.step(f"<answer>{good}</answer>")
    assert env.infos["speaker_0"]["reward_terms"] == {"local/understood": 1.0}
    clone.step(
        "<answer>the one I like</answer>"
    )  # no attribute word: the scripted listener guesses the first
    assert clone.infos["speaker_0"]["reward_terms"]["local/understood"] == float(clone.listener_target == 0)
    plain = envs.make("referential")
    plain.reset(seed=split_seeds("train", 1)[0])
    plain.step(f"<answer>{good}</answer>")
    assert plain.infos["speaker_0"]["reward_terms"] == {}  # off by default


def test_prompts_show_each_role_what_it_may_see():
    env = envs.make("referential")
    env.reset(seed=split_seeds("train", 1)[0])
    speaker = env.observe("speaker_0")["prompt"]
    assert "<- target" in speaker and speaker.count("\n- ") == env.num_objects
    env.step("<answer>the red one</answer>")
    listener = env.observe("listener_0")["prompt"]
    assert "<- target" not in listener and 'The speaker says: "the red one"' in listener
    assert env.infos["listener_0"]["legal_moves"] == ["1", "2", "3", "4"]


@pytest.mark.parametrize("bad", ["", "no tags", "<answer></answer>", "<answer>   </answer>"])
def test_an_empty_message_is_invalid_and_passes_nothing(bad):
    env = envs.make("referential")
    env.reset(seed=split_seeds("train", 1)[0])
    env.step(bad)
    assert env.infos["speaker_0"]["invalid_action"] and env.message is None


@pytest.mark.parametrize("bad", ["<answer>0</answer>", "<answer>9</answer>", "<answer>two</answer>", "7"])
def test_a_pick_outside_the_objects_is_invalid(bad):
    env = envs.make("referential")
    env.reset(seed=split_seeds("train", 1)[0])
    env.step("<answer>red</answer>")
    env.step(bad)
    assert env.infos["listener_0"]["invalid_action"] and not env.success


def test_long_and_hostile_messages_reach_the_listener_cut_and_printable():
    env = envs.make("referential", max_message_chars=20)
    env.reset(seed=split_seeds("train", 1)[0])
    env.step("<answer>" + "r\u00e9d " * 50 + "</answer>")
    assert len(env.message) == 20 and env.message.isascii()


@pytest.mark.parametrize("split", ["train", "test"])
def test_two_oracles_always_win(split):
    env = envs.make("referential", split=split, num_objects=8)
    for seed in split_seeds(split, 50):
        assert play_oracle(env, seed).success


def test_options_are_checked_and_registered_in_the_games_suite():
    with pytest.raises(ValueError, match="num_objects"):
        envs.make("referential", num_objects=1)
    with pytest.raises(ValueError, match="max_message_chars"):
        envs.make("referential", max_message_chars=0)
    assert envs.spec("referential").teams == {"mas": ("speaker", "listener")}
    assert type(envs.make("referential")).metadata["suite"] == "games"
