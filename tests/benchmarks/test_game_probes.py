"""``benchmarks.game_probes``: a team's Kuhn policy table read at the 12 information sets."""

from __future__ import annotations

import pytest

import envs
from agents.base import SamplingParams
from agents.scripted import OraclePolicy, RandomPolicy
from agents.team import Team
from benchmarks.game_probes import GAME_PROBES, kuhn_policy_table
from envs.games.kuhn_poker import game
from envs.splits import split_seeds


def _env():
    return envs.make("kuhn_poker", split="test")


def test_the_nash_oracle_averaged_over_tasks_reads_back_as_nash():
    env = _env()
    team = Team.shared(env, OraclePolicy())
    table, invalid = kuhn_policy_table(team, env, split_seeds("test", 300), None, 1)
    nash = game.nash_table()
    assert invalid == 0.0
    assert all(table[k] == pytest.approx(nash[k], abs=0.08) for k in game.INFOSETS), table
    assert game.exploitability(table) < 0.05


def test_random_replies_read_back_as_the_uniform_table():
    env = _env()
    team = Team.shared(env, RandomPolicy(seed=0))
    table, _ = kuhn_policy_table(team, env, split_seeds("test", 2), SamplingParams(seed=3), 200)
    assert all(0.4 < p < 0.6 for p in table.values()), table


def test_invalid_replies_count_as_the_pass_they_force():
    class Mute:  # a policy that never answers in the grammar
        name = "mute"

        def generate(self, prompts, *, num_samples=1, sampling=None, adapter=None):
            from agents.scripted import _scripted_generation

            return [[_scripted_generation("hmm") for _ in range(num_samples)] for _ in prompts]

    env = _env()
    metrics = GAME_PROBES["kuhn_poker_v0"](Team.shared(env, Mute()), env, split_seeds("test", 1), None, 2)
    assert metrics["probe_invalid_rate"] == 1.0
    assert metrics["exploitability"] == pytest.approx(1.0)  # always pass: a best response always bets
    assert metrics["chips_vs_nash"] == pytest.approx(
        game.seat_averaged_value(dict.fromkeys(game.INFOSETS, 0.0), game.nash_table())
    )
