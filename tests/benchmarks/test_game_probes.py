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
    metrics = GAME_PROBES["kuhn_poker"](Team.shared(env, Mute()), env, split_seeds("test", 1), None, 2)
    assert metrics["probe_invalid_rate"] == 1.0
    assert metrics["exploitability"] == pytest.approx(1.0)  # always pass: a best response always bets
    assert metrics["chips_vs_nash"] == pytest.approx(
        game.seat_averaged_value(dict.fromkeys(game.INFOSETS, 0.0), game.nash_table())
    )


def test_public_goods_metrics_replay_the_episodes():
    from benchmarks.game_probes import public_goods_metrics
    from trainers.evaluation import evaluate_tasks, test_tasks

    env = envs.make("everyone_contributes", split="test")
    tasks = test_tasks("everyone_contributes-v0", 20)
    oracle = evaluate_tasks(Team.shared(env, OraclePolicy()), tasks, sampling=SamplingParams()).episodes
    metrics = public_goods_metrics(None, env, [], None, 1, oracle)
    assert metrics["contribution_rate"] == 1.0 and metrics["welfare_ratio"] == pytest.approx(1.0)
    assert metrics["free_rider_gain"] < 0  # full contribution is the unique SPNE of every task
    team = Team(env, {"first": OraclePolicy(), "second": RandomPolicy(seed=0), "third": OraclePolicy()})
    mixed = public_goods_metrics(
        None, env, [], None, 1, evaluate_tasks(team, tasks, sampling=SamplingParams(seed=1)).episodes
    )
    assert 1 / 3 < mixed["contribution_rate"] < 1.0 and mixed["welfare_ratio"] < 1.0


@pytest.mark.spiel
def test_hanabi_metrics_replay_the_episodes():
    from agents.scripted import HeuristicPolicy
    from benchmarks.game_probes import hanabi_metrics
    from trainers.evaluation import evaluate_tasks, test_tasks

    env = envs.make("mini_hanabi", split="test")
    tasks = test_tasks("mini_hanabi-v0", 12)
    cautious = evaluate_tasks(Team.shared(env, HeuristicPolicy()), tasks, sampling=SamplingParams()).episodes
    metrics = hanabi_metrics(None, env, [], None, 1, cautious)
    assert metrics["bomb_rate"] == 0.0 and 0 < metrics["hanabi_score"] <= 1
    random = Team.shared(env, RandomPolicy(seed=0))
    reckless = hanabi_metrics(
        None, env, [], None, 1, evaluate_tasks(random, tasks, sampling=SamplingParams(seed=2)).episodes
    )
    assert reckless["bomb_rate"] > 0.5 and reckless["hanabi_score"] < metrics["hanabi_score"]


def test_alfworld_metrics_break_success_down_by_task_type():
    from benchmarks.game_probes import ALFWORLD_TYPE_NAMES, alfworld_metrics
    from trainers.evaluation import evaluate_tasks, test_tasks

    env = envs.make("alfworld", split="test")
    tasks = test_tasks("alfworld-v0", 24)
    oracle = evaluate_tasks(Team.shared(env, OraclePolicy()), tasks, sampling=SamplingParams()).episodes
    metrics = alfworld_metrics(None, env, [], None, 1, oracle)
    types = {k for k in metrics if k.startswith("success/")}
    assert len(types) >= 4 and types <= {f"success/{n}" for n in ALFWORLD_TYPE_NAMES.values()}
    assert all(metrics[k] == 1.0 for k in types) and metrics["invalid_command_rate"] == 0.0
    assert 3 <= metrics["steps_to_success"] <= 12  # the expert's walkthroughs: 4-9 commands on average
    team = Team(env, {"planner": OraclePolicy(), "actor": RandomPolicy(seed=0)})
    random = alfworld_metrics(
        None, env, [], None, 1, evaluate_tasks(team, tasks, sampling=SamplingParams()).episodes
    )
    assert all(random[k] < 1.0 for k in types if k in random)


def test_a_greedy_model_is_asked_each_distinct_information_set_once():
    from agents.hf import HFPolicy
    from agents.models import TINY_TEST_MODEL

    class Counting(HFPolicy):  # the real model; counts the prompts it is asked
        asked = 0

        def generate(self, prompts, **kwargs):
            Counting.asked += len(prompts)
            return super().generate(prompts, **kwargs)

    env, seeds = _env(), split_seeds("test", 3)
    team = Team.shared(env, Counting(TINY_TEST_MODEL))
    greedy = SamplingParams(temperature=0.0, max_new_tokens=4)
    table, invalid = kuhn_policy_table(team, env, seeds, greedy, 1)
    assert Counting.asked == len(game.INFOSETS)
    # the same table as asking every task's prompt: one task's greedy replies, repeated
    per_task = [kuhn_policy_table(team, env, [seed], greedy, 1) for seed in seeds]
    assert all(result == (table, invalid) for result in per_task)
    Counting.asked = 0
    kuhn_policy_table(team, env, seeds, SamplingParams(temperature=1.0, max_new_tokens=4, seed=0), 1)
    assert Counting.asked == len(game.INFOSETS) * len(seeds)  # samples are drawn per task
