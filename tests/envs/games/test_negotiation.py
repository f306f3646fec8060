"""Negotiation: trades, the relative and own-gain rewards, forced moves, the fair trader."""

from __future__ import annotations

import pytest

import envs
from agents.base import Prompt, SamplingParams
from agents.scripted import HeuristicPolicy, RandomPolicy
from agents.team import Team
from envs.splits import split_seeds
from trainers.evaluation import evaluate_tasks, test_tasks


def _env(**kwargs):
    env = envs.make("negotiation", **kwargs)
    env.reset(seed=split_seeds("train", 1)[0])
    env.start = {"first_0": (3, 3, 3), "second_0": (3, 3, 3)}
    env.inventory = {a: list(inv) for a, inv in env.start.items()}
    env.value_of = {"first_0": (1, 5, 9), "second_0": (9, 5, 1)}  # opposite rankings
    return env


def test_an_accepted_trade_moves_goods_and_the_larger_gain_wins():
    env = _env(turns=4)
    env.step("<answer>offer 2 wheat for 1 ore</answer>")  # first gives low-valued wheat for ore
    assert env.infos["second_0"]["legal_moves"] == ["accept", "deny"]
    env.step("<answer>accept</answer>")
    assert env.inventory == {"first_0": [1, 3, 4], "second_0": [5, 3, 2]}
    assert env.gain("first_0") == -2 + 9 and env.gain("second_0") == 18 - 1
    env.step("<answer>pass</answer>")
    env.step("<answer>pass</answer>")
    assert all(env.terminations.values()) and env.success
    assert env.infos["first_0"]["reward_terms"] == {"seat/outcome": -1.0}  # 7 < 17
    assert env.infos["second_0"]["reward_terms"] == {"seat/outcome": 1.0}


def test_own_gain_pays_each_seat_its_gain():
    env = _env(turns=2, reward="own_gain")
    env.step("<answer>offer 1 wheat for 1 ore</answer>")
    env.step("<answer>accept</answer>")
    assert env.infos["first_0"]["reward_terms"] == {"seat/gain": 8.0}
    assert env.infos["second_0"]["reward_terms"] == {"seat/gain": 8.0}


def test_impossible_offers_and_answers_out_of_turn_are_invalid():
    env = _env()
    env.step("<answer>offer 4 wheat for 1 ore</answer>")  # holds only 3 wheat
    assert env.infos["first_0"]["invalid_action"] and "not possible" in env.infos["first_0"]["feedback"]
    env.step("<answer>accept</answer>")  # nothing to accept: passes for second
    assert env.infos["second_0"]["invalid_action"] and "no offer" in env.infos["second_0"]["feedback"]
    env.step("<answer>offer 1 gold for 1 ore</answer>")
    assert "Resources are" in env.infos["first_0"]["feedback"]
    env.step("<answer>offer 1 ore for 1 wheat</answer>")
    env.step("<answer>offer 1 wood for 1 ore</answer>")  # must answer the open offer: it is denied
    assert env.infos["first_0"]["invalid_action"] and env.pending is None
    assert "Played deny" in env.infos["first_0"]["feedback"]


def test_options_are_checked():
    for bad in ({"turns": 3}, {"turns": 0}, {"turns": True}, {"reward": "money"}):
        with pytest.raises(ValueError):
            envs.make("negotiation", **bad)
    assert envs.make("negotiation", turns=6).max_cycles == 3


def test_valuations_rank_resources_oppositely_in_every_task():
    env = envs.make("negotiation")
    for seed in split_seeds("train", 50):
        env.reset(seed=seed)
        first, second = env.value_of.values()
        order = sorted(range(3), key=lambda i: first[i])
        assert sorted(range(3), key=lambda i: -second[i]) == order


def test_the_fair_trader_never_loses_value():
    env = _env()
    policy = HeuristicPolicy()
    answer = policy.generate([Prompt("", env=env, agent="first_0")])[0][0].text
    assert answer == "<answer>offer 1 wheat for 1 ore</answer>"  # +8 for it, +8 for the other
    tasks = test_tasks("negotiation-v0", 30)
    own_gain = {"reward": "own_gain"}
    for second in (policy, RandomPolicy(seed=1)):
        team = Team(envs.make("negotiation", split="test"), {"first": policy, "second": second})
        episodes = evaluate_tasks(team, tasks, sampling=SamplingParams(), env_kwargs=own_gain).episodes
        assert len(episodes) == 30 and all(e.success for e in episodes)
        # It accepts only offers that raise its value and offers only such trades.
        assert all(e.returns["first_0"] >= 0 for e in episodes)
        if second is policy:  # two fair traders trade only to mutual gain, and do trade
            assert all(e.returns["second_0"] >= 0 for e in episodes)
            assert sum(e.returns["first_0"] > 0 for e in episodes) > 20
