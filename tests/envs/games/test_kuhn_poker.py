"""Kuhn poker: rules, the Nash table and exact exploitability, forced moves, the env contract."""

from __future__ import annotations

import numpy as np
import pytest

import envs
from envs.games.kuhn_poker import game
from envs.games.kuhn_poker.env import KuhnPokerEnv
from envs.splits import split_seeds
from tests.envs.conftest import play_oracle


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_every_nash_table_is_unexploitable_and_worth_minus_one_eighteenth(alpha):
    nash = game.nash_table(alpha)
    assert game.exploitability(nash) < 1e-3
    assert game.hand_value(nash, nash) == pytest.approx(-1 / 18)
    # A best response cannot do better than the game value in either position.
    assert game.best_response_value(nash, 0) == pytest.approx(-1 / 18)
    assert game.best_response_value(nash, 1) == pytest.approx(1 / 18)


def test_the_known_anchors():
    always_bet = dict.fromkeys(game.INFOSETS, 1.0)
    uniform = dict.fromkeys(game.INFOSETS, 0.5)
    assert game.exploitability(always_bet) == pytest.approx(1 / 3)
    assert game.exploitability(uniform) == pytest.approx(11 / 24)  # 0.458
    assert game.seat_averaged_value(always_bet, game.nash_table()) == pytest.approx(-1 / 9)
    assert len(game.INFOSETS) == 12 and len(game.DEALS) == 6


def test_exploitability_is_never_negative_and_zero_only_near_nash():
    rng = np.random.default_rng(0)
    for _ in range(20):
        table = dict(zip(game.INFOSETS, rng.random(len(game.INFOSETS)), strict=True))
        assert game.exploitability(table) > 1e-3
    with pytest.raises(ValueError, match="lacks"):
        game.exploitability({"J": 0.5})
    with pytest.raises(ValueError, match="probabilities"):
        game.exploitability(dict.fromkeys(game.INFOSETS, 2.0))


def test_payoffs_of_every_ending():
    assert game.opener_chips(("K", "J"), "pp") == 1 and game.opener_chips(("J", "K"), "pp") == -1
    assert game.opener_chips(("J", "K"), "bp") == 1  # a successful bluff
    assert game.opener_chips(("K", "J"), "pbp") == -1  # the opener folded
    assert game.opener_chips(("Q", "K"), "bb") == -2 and game.opener_chips(("K", "Q"), "pbb") == 2


def _env(**kwargs) -> KuhnPokerEnv:
    env = envs.make("kuhn_poker", **kwargs)
    env.reset(seed=split_seeds("train", 1)[0])
    return env


def test_a_hand_record_replays_to_the_seat_outcomes():
    env = _env(hands=2)
    env.deals = (("Q", "K"), ("K", "J"))
    for move in ("check", "bet", "call"):  # hand 1: check, bet, call: K beats Q for 2
        env.step(f"<answer>{move}</answer>")
    assert env.infos["first_0"]["reward_terms"] == {"seat/outcome": -2.0}
    assert env.infos["second_0"]["reward_terms"] == {"seat/outcome": 2.0}
    # Three actions: the second seat is to act, so it opens hand 2.
    assert env.hand == 1 and env.opener == "second_0" == env.agent_selection
    assert "Showdown: your Q against K; you lost 2 chips." in env.observe("first_0")["prompt"]
    env.step("<answer>bet</answer>")  # J bets...
    env.step("<answer>fold</answer>")  # ...K folds
    assert all(env.terminations.values()) and env.success
    assert env.chips == {"first_0": -3, "second_0": 3}


def test_an_invalid_reply_passes_for_the_seat_with_the_penalty():
    env = _env(hands=1)
    env.step("<answer>bet</answer>")
    assert env.infos["second_0"]["legal_moves"] == ["call", "fold"]
    env.step("<answer>check</answer>")  # illegal facing a bet: folds for the seat
    terms = env.infos["second_0"]["reward_terms"]
    assert terms["local/invalid"] == -0.1 and terms["seat/outcome"] == -1.0
    assert (
        "cannot check" in env.infos["second_0"]["feedback"]
        and "Played fold" in env.infos["second_0"]["feedback"]
    )
    assert all(env.terminations.values())


def test_a_forced_move_that_is_illegal_is_the_envs_bug():
    class Broken(KuhnPokerEnv):
        def _forced_move(self, agent):
            return "raise"

    env = Broken()
    env.reset(seed=split_seeds("train", 1)[0])
    with pytest.raises(ValueError, match="not a legal move"):
        env.step("gibberish")


def test_the_nash_reward_is_zero_for_the_nash_move_and_negative_for_a_mistake():
    env = _env(hands=1, nash_reward=True)
    env.deals = (("K", "Q"),)
    env.step("<answer>check</answer>")  # K checks (Nash bets with 3 * 1/3 = 1: a mistake)
    assert env.infos["first_0"]["reward_terms"]["local/nash"] < 0
    env.step("<answer>bet</answer>")  # Q bets after a check (Nash never does)
    assert env.infos["second_0"]["reward_terms"]["local/nash"] < 0
    env.step("<answer>call</answer>")  # K calls: what Nash always does
    assert env.infos["first_0"]["reward_terms"]["local/nash"] == pytest.approx(0.0)


def test_the_oracle_earns_the_game_value_against_itself():
    chips = []
    for seed in split_seeds("train", 600):
        env = play_oracle(envs.make("kuhn_poker", hands=1), seed)
        assert env.success
        chips.append(env.chips["first_0"])
    mean, se = np.mean(chips), np.std(chips) / np.sqrt(len(chips))
    assert abs(mean - (-1 / 18)) < 3 * se, (mean, se)


def test_deal_sequences_are_split_and_hands_is_checked():
    found = {}
    for split in ("train", "test"):
        env = envs.make("kuhn_poker", split=split)
        found[split] = set()
        for seed in split_seeds(split, 200):
            env.reset(seed=seed)
            found[split].add(env.task_fingerprint())
    assert not found["train"] & found["test"] and len(found["train"]) > 50
    for bad in (0, 21, 2.0, True):
        with pytest.raises(ValueError, match="hands"):
            envs.make("kuhn_poker", hands=bad)
    assert envs.make("kuhn_poker", hands=5).max_cycles == 8  # 15 actions at most


def test_registered_in_the_games_suite():
    spec = envs.spec("kuhn_poker")
    assert spec.id == "kuhn_poker-v0" and spec.teams == {"mas": ("first", "second")}
    assert type(envs.make("kuhn_poker")).metadata["suite"] == "games"
