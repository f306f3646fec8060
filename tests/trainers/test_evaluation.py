"""Held-out evaluation: test-split tasks only, repeatable; metric helpers; pass@k; split hygiene."""

from __future__ import annotations

import math

import numpy as np
import pytest

import envs
from agents.base import SamplingParams
from agents.hf import HFPolicy
from agents.scripted import OraclePolicy
from agents.team import Team
from trainers.evaluation import (
    benchmark_metrics,
    check_eval_tasks,
    episode_metrics,
    evaluate,
    evaluate_tasks,
    held_out_line,
    heldout_tasks,
    node_zero_variance,
    pass_at_k,
    pass_at_k_values,
    sample_metrics,
    task_success_se,
    test_tasks,
)
from trainers.records import Episode, TaskKey, Turn


def turn(role, reward, invalid=False, tokens=(1, 2), cycle=0):
    return Turn(
        task=TaskKey("x-v0", "train", 0), episode=0, agent=f"{role}_0", role=role, policy="p", turn=cycle,
        step=0,
        prompt="", response="", prompt_token_ids=(), token_ids=tokens, logprobs=(0.0,) * len(tokens),
        reward=reward, reward_terms={}, invalid=invalid, state_key=0,
    )  # fmt: skip


def test_metric_helpers():
    samples = [turn("planner", 1.0), turn("planner", 0.0, invalid=True), turn("executor", -0.5, tokens=(1,))]
    metrics = sample_metrics(samples)
    assert metrics["invalid_rate"] == pytest.approx(1 / 3)
    assert metrics["reward/planner"] == 0.5 and metrics["reward/executor"] == -0.5
    assert metrics["response_tokens"] == pytest.approx(5 / 3)
    key = TaskKey("x-v0", "test", 1)
    episodes = [
        Episode(key, 0, tuple(samples), True, {"planner_0": 1.0, "executor_0": -0.5}, False),
        Episode(key, 1, (), False, {"planner_0": 0.0, "executor_0": 0.5}, True),
    ]
    metrics = episode_metrics(episodes)
    assert metrics["success"] == 0.5 and metrics["truncated"] == 0.5
    assert metrics["return/planner"] == 0.5 and metrics["return/executor"] == 0.0
    assert sample_metrics([]) == {} and episode_metrics([]) == {}


def test_evaluate_plays_each_test_task_once():
    env = envs.make("plan_path")
    result = evaluate(Team(env, {r: OraclePolicy() for r in env.roles}), "plan_path", num_tasks=5,
                      sampling=SamplingParams(temperature=0.0))  # fmt: skip
    assert [e.task for e in result.episodes] == heldout_tasks("plan_path", 5)
    assert result.episodes[0].task.seed == envs.TEST_SEED_START + envs.HELDOUT_TEST_START
    assert all(e.task.split == "test" for e in result.episodes)
    assert result.metrics["success"] == 1.0 and result.metrics["invalid_rate"] == 0.0


def test_evaluation_of_a_model_is_repeatable():
    env = envs.make("plan_path")
    team = Team.per_role(env, HFPolicy("tiny-test", adapters=env.roles), response_prefix="<answer>")
    sampling = SamplingParams(temperature=1.0, max_new_tokens=4)  # sampled, yet seeded
    first, second = (
        evaluate(team, "plan_path", num_tasks=3, sampling=sampling, env_kwargs={"max_cycles": 1})
        for _ in range(2)
    )
    assert [t.response for e in first.episodes for t in e.turns] == [
        t.response for e in second.episodes for t in e.turns
    ]


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 0, 1, 0.0),
        (5, 5, 3, 1.0),
        (5, 1, 1, 0.2),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (4, 1, 4, 1.0),  # fewer failures than draws: a success is always drawn
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (1, 1, 1, 1.0),
        (1, 0, 1, 0.0),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_the_binomial_formula_everywhere():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12), (n, c, k)
            assert pass_at_k(n, c, 1) == pytest.approx(c / n)  # pass@1 is the success rate


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 4), (3, 1, 0), (0, 0, 1), (3, -1, 1)])
def test_pass_at_k_refuses_impossible_counts(n, c, k):
    with pytest.raises(ValueError, match="0 <= c <= n and 1 <= k <= n"):
        pass_at_k(n, c, k)


def test_pass_at_k_values():
    assert pass_at_k_values(1) == [1]
    assert pass_at_k_values(4) == [1, 2, 4]
    assert pass_at_k_values(6) == [1, 2, 4, 6]


def test_benchmark_metrics_by_hand():
    a, b = TaskKey("x-v0", "test", 1_000_000_000), TaskKey("x-v0", "test", 1_000_000_001)
    solved = (turn("planner", 0.1, tokens=(1, 2, 3)), turn("executor", 1.0, tokens=(4,), cycle=1))
    failed = (turn("planner", -0.1, invalid=True, tokens=(5, 6)), turn("executor", 0.0, tokens=(7, 8)))
    episodes = [
        Episode(a, 0, solved, True, {"planner_0": 1.1, "executor_0": 1.0}, False),
        Episode(a, 1, failed, False, {"planner_0": -0.1, "executor_0": 0.0}, True),
        Episode(b, 0, failed, False, {"planner_0": -0.1, "executor_0": 0.0}, True),
        Episode(b, 1, failed, False, {"planner_0": -0.1, "executor_0": 0.0}, True),
    ]
    m = benchmark_metrics(episodes)
    assert m["success"] == m["avg@2"] == m["pass@1"] == 0.25
    assert m["pass@2"] == 0.5  # task a: 1 of 2 samples, drawn both -> 1; task b: 0
    assert m["invalid_rate"] == 3 / 8
    assert m["turns_to_success"] == 2.0  # solved on the executor turn of cycle 1
    assert m["tokens_per_episode"] == (4 + 4 + 4 + 4) / 4
    assert m["return/planner"] == pytest.approx((1.1 - 0.3) / 4) and m["truncated"] == 0.75
    unsolved = benchmark_metrics(episodes[2:])
    assert math.isnan(unsolved["turns_to_success"]) and unsolved["success"] == 0.0
    with pytest.raises(ValueError, match="same number of episodes"):
        benchmark_metrics(episodes[:3])
    with pytest.raises(ValueError, match="at least one episode"):
        benchmark_metrics([])


@pytest.mark.parametrize(
    "task",
    [
        TaskKey("plan_path-v0", "train", 5),  # a training task
        TaskKey("plan_path-v0", "test", 5),  # labelled test, but a training seed
        TaskKey("plan_path-v0", "train", 1_000_000_000),  # a test seed labelled train
        TaskKey("plan_path-v0", "test", -1),
    ],
)
def test_evaluation_refuses_training_tasks(task):
    with pytest.raises(ValueError, match="evaluation never plays training tasks"):
        check_eval_tasks([TaskKey("plan_path-v0", "test", 1_000_000_000), task])
    env = envs.make("plan_path")
    with pytest.raises(ValueError, match="evaluation never plays training tasks"):
        evaluate_tasks(Team(env, {r: OraclePolicy() for r in env.roles}), [task], sampling=SamplingParams())


def test_test_tasks_blocks_are_disjoint_test_seeds():
    first, second = test_tasks("sokoban", 4), test_tasks("sokoban", 4, start=4)
    assert not {t.seed for t in first} & {t.seed for t in second}
    check_eval_tasks(first + second)
    assert all(envs.split_of(t.seed) == "test" for t in first + second)


def test_evaluate_tasks_plays_k_episodes_per_task_with_scripted_teams():
    env = envs.make("sokoban")
    tasks = test_tasks("sokoban", 3)
    batch = evaluate_tasks(Team(env, {r: OraclePolicy() for r in env.roles}), tasks, episodes_per_task=2,
                           sampling=SamplingParams())  # fmt: skip
    assert sorted(e.task for e in batch.episodes) == sorted(tasks * 2)
    metrics = benchmark_metrics(batch.episodes)
    assert metrics["success"] == metrics["pass@2"] == 1.0 and metrics["tokens_per_episode"] == 0.0


def test_games_report_win_draw_loss_per_seat_from_the_outcome_terms():
    from agents.scripted import RandomPolicy
    from envs.games.tictactoe import game
    from trainers.evaluation import episode_metrics, evaluate_tasks, seat_outcomes, test_tasks

    env = envs.make("tictactoe", split="test")
    team = Team(env, {"first": OraclePolicy(), "second": RandomPolicy(seed=3)})
    batch = evaluate_tasks(team, test_tasks("tictactoe", 24), sampling=SamplingParams(max_new_tokens=4))
    metrics = episode_metrics(batch.episodes)
    for seat in ("first", "second"):  # scripted moves are always legal: every game ends
        assert metrics[f"win/{seat}"] + metrics[f"draw/{seat}"] + metrics[f"loss/{seat}"] == pytest.approx(
            1.0
        )
    assert metrics["win/first"] == metrics["loss/second"] and metrics["draw/first"] == metrics["draw/second"]
    # minimax as X never does worse than each opening's value (its seat's outcome is what the return says)
    for episode in batch.episodes:
        outcome = seat_outcomes(episode)
        assert outcome["first_0"] == -outcome["second_0"] == episode.returns["first_0"]
        opening = envs.make("tictactoe", split="test")
        opening.reset(seed=episode.task.seed)
        assert outcome["first_0"] >= game.value(opening.board, "X")
    assert "win/speaker" not in episode_metrics(  # envs without seat outcomes report none
        evaluate_tasks(
            Team(envs.make("referential"), {"speaker": OraclePolicy(), "listener": OraclePolicy()}),
            test_tasks("referential", 2),
            sampling=SamplingParams(max_new_tokens=4),
        ).episodes
    )


def test_task_success_se_is_the_standard_error_over_tasks():
    def episode(seed, success):
        return Episode(TaskKey("x-v0", "test", seed), 0, (), success, {}, False)

    # one episode per task: sqrt(p (1 - p) / (n - 1)) with p = 1/4, n = 4
    four = [episode(s, s == 0) for s in range(4)]
    assert task_success_se(four) == pytest.approx(np.sqrt(0.25 * 0.75 / 3))
    # two episodes per task: the per-task rates (1.0, 0.0) are what varies
    assert task_success_se([episode(0, True), episode(0, True), episode(1, False), episode(1, False)]) == 0.5
    assert task_success_se(four[:1]) == 0.0 and task_success_se([]) == 0.0


def test_held_out_tasks_start_past_the_development_tasks_and_the_line_names_them():
    tasks = heldout_tasks("plan_path", 3, start=2)
    assert [t.seed for t in tasks] == [envs.TEST_SEED_START + envs.HELDOUT_TEST_START + i for i in (2, 3, 4)]
    check_eval_tasks(tasks)
    line = held_out_line(
        {"success": 0.25, "success_se": 0.05},
        {"success": 0.5, "success_se": 0.0625, "tasks": 64, "first_task_seed": tasks[0].seed - 2},
    )
    assert line == (
        "held-out test success 0.250 +- 0.050 -> 0.500 +- 0.062 (64 tasks from test index 1000000; "
        "+- s.e. over tasks)"
    )


def test_validation_slice_tasks_are_evaluated_only_when_asked():
    task = TaskKey("plan_path-v0", "train", envs.validation_seeds(1)[0])
    check_eval_tasks([task], validation=True)
    with pytest.raises(ValueError, match="evaluation never plays training tasks"):
        check_eval_tasks([task])
    with pytest.raises(ValueError, match="evaluation never plays training tasks"):
        check_eval_tasks([TaskKey("plan_path-v0", "train", 5)], validation=True)  # a trained-on seed


def test_node_zero_variance_is_the_share_of_a_role_s_tree_nodes_without_signal():
    from agents.scripted import RandomPolicy
    from trainers.rollout import plain_rollout, tree_rollout

    tasks = [TaskKey("plan_path-v0", "train", seed) for seed in range(4)]
    env, sampling = envs.make("plan_path"), SamplingParams()
    oracle = tree_rollout(tasks, Team.shared(env, OraclePolicy()), num_candidates=3, sampling=sampling)
    assert node_zero_variance(oracle.samples) == {"zero_variance/executor": 1.0, "zero_variance/planner": 1.0}
    random = tree_rollout(tasks, Team.shared(env, RandomPolicy()), num_candidates=4, sampling=sampling)
    shares = node_zero_variance(random.samples)
    assert set(shares) == {"zero_variance/executor", "zero_variance/planner"}
    assert all(0.0 <= share < 1.0 for share in shares.values())  # random moves earn different rewards
    plain = plain_rollout(tasks, Team.shared(env, RandomPolicy()), episodes_per_task=2, sampling=sampling)
    assert node_zero_variance(plain.samples) == {}
