"""trees/train_step_<N>.jsonl: the recorded AT-GRPO trees of real tree rollouts (scripted
random players on Plan-Path: no model needed for the bookkeeping)."""

from __future__ import annotations

import numpy as np

import envs
from agents.base import SamplingParams
from agents.scripted import RandomPolicy
from agents.team import Team
from trainers.records import TaskKey
from trainers.rollout import plain_rollout, tree_rollout
from trainers.run.trees import drop_trees_after, read_trees, tree_records, write_trees

K = 3


def _rollout(tree=True, n_tasks=3):
    env = envs.make("plan_path", team="mas")
    team = Team(env, {role: RandomPolicy(seed=i) for i, role in enumerate(env.roles)})
    tasks = [TaskKey(envs.spec("plan_path").id, "train", seed) for seed in (11, 12, 13)[:n_tasks]]
    if tree:
        return tree_rollout(tasks, team, num_candidates=K, sampling=SamplingParams(), seed=4)
    return plain_rollout(tasks, team, episodes_per_task=2, sampling=SamplingParams(), seed=4)


def test_every_node_of_the_first_tasks_with_its_k_candidates_rewards_and_advantages():
    batch = _rollout()
    advantages = np.arange(len(batch.samples), dtype=float) / 10  # distinct: alignment shows
    trees = tree_records(batch.samples, advantages, tasks=2)
    assert [t["task"]["seed"] for t in trees] == [11, 12]  # the first two tasks, in order
    for tree in trees:
        seed = tree["task"]["seed"]
        samples = [(i, s) for i, s in enumerate(batch.samples) if s.task.seed == seed]
        assert sum(len(n["candidates"]) for n in tree["nodes"]) == len(samples)
        episode = next(e for e in batch.episodes if e.task.seed == seed)
        assert len(tree["nodes"]) == episode.length  # one node per executed turn
        for node, executed in zip(tree["nodes"], episode.turns, strict=True):
            assert len(node["candidates"]) == K and [c["k"] for c in node["candidates"]] == list(range(K))
            chosen = [c for c in node["candidates"] if c["selected"]]
            assert len(chosen) == 1 and chosen[0]["response"] == executed.response
            assert node["path"] == list(executed.tree_node) and node["agent"] == executed.agent
            rewards = [c["reward"] for c in node["candidates"]]
            assert node["zero_variance"] == (len(set(rewards)) == 1)
            for candidate in node["candidates"]:
                index, sample = next(
                    (i, s)
                    for i, s in samples
                    if (s.tree_node, s.agent, s.candidate)
                    == (executed.tree_node, node["agent"], candidate["k"])
                )
                assert candidate["advantage"] == advantages[index]
                assert candidate["reward"] == sample.reward and candidate["feedback"] == sample.feedback
                assert candidate["reward_terms"] == dict(sample.reward_terms)


def test_plain_rollouts_and_zero_tasks_record_no_tree(tmp_path):
    batch = _rollout(tree=False)
    assert tree_records(batch.samples, np.zeros(len(batch.samples)), tasks=2) == []
    assert write_trees(tmp_path, 1, batch.samples, np.zeros(len(batch.samples)), tasks=2) is None
    tree_batch = _rollout()
    assert write_trees(tmp_path, 1, tree_batch.samples, np.zeros(len(tree_batch.samples)), tasks=0) is None
    assert not (tmp_path / "trees").exists()


def test_written_trees_read_back_and_a_resume_drops_later_steps(tmp_path):
    batch = _rollout(n_tasks=2)
    zeros = np.zeros(len(batch.samples))
    for step in (1, 2, 3):
        write_trees(tmp_path, step, batch.samples, zeros, tasks=5)
    with open(tmp_path / "trees" / "train_step_000003.jsonl", "a") as f:
        f.write('{"nodes": [')  # what a kill mid-write of another writer could leave
    recorded = read_trees(tmp_path)
    assert sorted(recorded) == [1, 2, 3] and all(len(trees) == 2 for trees in recorded.values())
    drop_trees_after(tmp_path, 1)
    assert sorted(read_trees(tmp_path)) == [1]


def test_rollouts_record_the_envs_feedback_and_the_executed_turns_render():
    tree = _rollout()
    for sample in tree.samples:
        assert sample.feedback  # Plan-Path always says something about a reply
        assert (sample.render is not None) == sample.selected  # one picture per node
    env = envs.make("plan_path", team="mas")
    executed = tree.episodes[0].turns[0]
    env.reset(seed=executed.task.seed)
    env.step(executed.response)
    assert executed.feedback == env.infos[executed.agent]["feedback"] and executed.render == env.render()
    plain = _rollout(tree=False)
    assert all(s.render is not None and s.feedback for s in plain.samples)
