"""Everyone Contributes: the SPNE proof by backward induction, payoffs, the env contract."""

from __future__ import annotations

import itertools

import pytest

import envs
from envs.games.everyone_contributes import game
from envs.splits import split_seeds
from tests.envs.conftest import play_oracle


def _spne_outcomes(rules: game.Rules, history: tuple[int, ...] = ()) -> set[tuple[int, ...]]:
    """Every outcome some SPNE reaches from ``history``: an independent backward induction
    over the integer grid that follows every tie (the game module breaks ties)."""
    if len(history) == rules.players:
        return {history}
    mover = len(history)
    options = {c: _spne_outcomes(rules, (*history, c)) for c in range(rules.endowment + 1)}
    # A continuation with several SPNE outcomes gives the mover several values; the mover's
    # optimal choices are those whose some continuation reaches the best value.
    best = max(rules.payoff(o, mover) for outs in options.values() for o in outs)
    return {o for outs in options.values() for o in outs if abs(rules.payoff(o, mover) - best) < 1e-9}


def _task_rules(split: str, n: int) -> list[game.Rules]:
    env = envs.make("everyone_contributes", split=split)
    found = []
    for seed in split_seeds(split, n):
        env.reset(seed=seed)
        found.append(env.rules)
    return found


@pytest.mark.parametrize("split", ["train", "test"])
def test_full_contribution_is_the_unique_spne_of_every_task(split):
    for rules in _task_rules(split, 40):
        full = (rules.endowment,) * rules.players
        assert _spne_outcomes(rules) == {full}, rules
        # and it is a dilemma: a lone free-rider in a plain public goods game would gain
        assert rules.share < 1


def test_a_unilateral_free_rider_loses():
    for rules in _task_rules("train", 20):
        full = (rules.endowment,) * rules.players
        for player in range(rules.players):
            for less in range(rules.endowment):
                deviation = game.spne(rules, (rules.endowment,) * player + (less,))
                assert rules.payoff(deviation, player) < rules.payoff(full, player), (rules, player, less)


def test_payoff_terms_by_hand():
    rules = game.Rules(players=3, endowment=4, share=0.5, bonus=1.0, threshold=9, penalty=4.0)
    # first gives 4, second 2, third 0: total 6 < 9.
    assert rules.payoff((4, 2, 0), 0) == pytest.approx(0 + 3 - 4)  # kept 0, share 3, no bonus
    assert rules.payoff((4, 2, 0), 1) == pytest.approx(2 + 3 + 1.0 * 2 * 1.0 - 4)
    assert rules.payoff((4, 2, 0), 2) == pytest.approx(4 + 3 + 0 - 4)
    assert rules.payoffs((4, 4, 4)) == pytest.approx((6.0, 10.0, 10.0))
    # without the bonus and threshold the same shares make free-riding the equilibrium
    plain = game.Rules(players=3, endowment=4, share=0.5, bonus=0.0, threshold=0, penalty=0.0)
    assert _spne_outcomes(plain) == {(0, 0, 0)}


def test_a_played_game_pays_welfare_to_the_team_and_payoffs_to_seats():
    env = envs.make("everyone_contributes", spne_reward=True)
    env.reset(seed=split_seeds("train", 1)[0])
    top = env.rules.endowment
    env.step(f"<answer>{top}</answer>")
    assert env.infos["first_0"]["reward_terms"] == {"local/spne": 0.0}  # the SPNE move
    env.step("<answer>0</answer>")  # second free-rides
    assert env.infos["second_0"]["reward_terms"]["local/spne"] < 0
    env.step("I refuse")  # invalid: contributes 0 for third, with the penalty
    assert all(env.terminations.values()) and not env.success
    payoffs = env.rules.payoffs((top, 0, 0))
    for agent, payoff in zip(env.possible_agents, payoffs, strict=True):
        terms = env.infos[agent]["reward_terms"]
        assert terms["team/welfare"] == pytest.approx(sum(payoffs))
        assert terms["seat/payoff"] == pytest.approx(payoff)
    assert env.infos["third_0"]["reward_terms"]["local/invalid"] == -0.1
    assert "Played 0 for you" in env.infos["third_0"]["feedback"]


def test_the_oracle_contributes_everything_and_tasks_are_split():
    for seed in split_seeds("test", 10):
        env = play_oracle(envs.make("everyone_contributes", split="test"), seed)
        assert env.success and env.contributions == (env.rules.endowment,) * 3
    train = {repr(r) for r in _task_rules("train", 150)}
    test = {repr(r) for r in _task_rules("test", 150)}
    assert not train & test and len(train) > 40


def test_prompt_states_the_rule_and_the_history():
    env = envs.make("everyone_contributes")
    env.reset(seed=split_seeds("train", 1)[0])
    env.step("<answer>1</answer>")
    prompt = env.observe("second_0")["prompt"]
    assert "You are the second player" in prompt and "first gave 1" in prompt
    assert f"below {env.rules.threshold}" in prompt and env.infos["second_0"]["legal_moves"][-1] == str(
        env.rules.endowment
    )


def test_the_grid_holds_enough_rule_sets():
    count = sum(
        game.full_contribution_is_the_unique_spne(game.Rules(3, e, s, b, t, p))
        for e in range(3, 7)
        for s, b, p in itertools.product(
            [0.4, 0.5, 0.6, 0.7, 0.8], [0.5, 1.0, 1.5, 2.0], [2.0, 4.0, 6.0, 8.0]
        )
        for t in range(3 * e // 2, 3 * e + 1)
    )
    assert count == 309
