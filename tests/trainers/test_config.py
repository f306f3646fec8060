"""TrainConfig: presets fill what was not given, validation names the field and the fix."""

from __future__ import annotations

import pytest

from trainers.config import ConfigError, TrainConfig, estimator_options, resolve_config

TEST_ENV = "tests.trainers.conftest:test/even_plan"


def test_presets_fill_what_was_not_given_and_explicit_values_win():
    config = resolve_config(TrainConfig(env="sokoban"))
    assert (config.rollout, config.estimator) == ("tree", "at_grpo")
    assert config.env_kwargs["difficulty"] == "easy" and config.tasks_per_step and config.max_new_tokens
    assert config.lr == 5e-4  # LoRA default
    assert resolve_config(TrainConfig(env="sokoban", init="runs/warm")).lr == 1e-4  # from a warm start
    config = resolve_config(
        TrainConfig(env="sokoban-v0", algo="gigpo", env_kwargs={"difficulty": "medium"}, steps=3, lora=False)
    )
    assert (config.rollout, config.estimator, config.steps, config.lr) == ("plain", "gigpo", 3, 1e-5)
    assert config.env_kwargs["difficulty"] == "medium" and "max_cycles" in config.env_kwargs
    generic = resolve_config(TrainConfig(env=TEST_ENV))  # an env without a preset
    assert generic.tasks_per_step and generic.max_new_tokens


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"temperature": 0.0}, "--temperature"),
        ({"num_generations": 0}, "--num-generations"),
        ({"tasks_per_step": -1}, "--tasks-per-step"),
        ({"backend": "vllm", "model": "tiny-test"}, "--backend hf"),
        ({"backend": "sglang"}, "--backend vllm"),
        ({"vllm_memory": 0.0}, "--vllm-memory"),
        ({"vllm_kv_cache_gib": 0.0}, "--vllm-kv-cache-gib"),
        ({"algo": "gigpo", "rollout": "tree"}, "--rollout plain"),
        ({"algo": "matpo", "team": "single"}, "--team mas"),
        ({"estimator": "nope"}, "at_grpo"),
        ({"env_kwargs": {"split": "test"}}, "split"),
        ({"env_kwargs": {"team": "single"}}, "--team"),
        ({"top_p": 0.0}, "--top-p"),
        ({"lr": -1.0}, "--lr"),
        ({"passes": 0}, "--passes"),
        ({"mini_batches": 0}, "--mini-batches"),
        ({"algo": "grpo", "estimator": "rloo", "advantage_scale": "group"}, "--advantage-scale"),
        ({"algo": "gigpo", "advantage_scale": "batch"}, "--advantage-scale group"),
    ],
)
def test_config_errors_name_the_field_and_the_fix(kwargs, named):
    with pytest.raises(ConfigError, match=named.replace("-", r"\-")):
        TrainConfig(**kwargs)


def test_loss_presets_set_their_advantage_scale_and_dynamic_sampling():
    grpo = resolve_config(TrainConfig(env="sokoban"))
    assert (grpo.advantage_scale, grpo.dynamic_sampling) == ("group", False)
    assert estimator_options(grpo) == {"scale": "group"}
    dr = resolve_config(TrainConfig(env="sokoban", loss="dr_grpo"))
    assert (dr.advantage_scale, dr.dynamic_sampling) == ("none", False)
    assert estimator_options(dr) == {"scale": "none"}
    dapo = resolve_config(TrainConfig(env="sokoban", loss="dapo"))
    assert (dapo.advantage_scale, dapo.dynamic_sampling) == ("group", True)
    assert estimator_options(resolve_config(TrainConfig(algo="gigpo", loss="dr_grpo"))) == {
        "norm": "mean_norm"
    }
    assert estimator_options(resolve_config(TrainConfig(algo="grpo", estimator="rloo"))) == {}
    explicit = resolve_config(TrainConfig(loss="dapo", dynamic_sampling=False, advantage_scale="batch"))
    assert (explicit.advantage_scale, explicit.dynamic_sampling) == ("batch", False)


def test_matpo_trains_one_shared_policy_unless_told_otherwise():
    assert resolve_config(TrainConfig(algo="matpo")).policy == "shared"
    assert resolve_config(TrainConfig(algo="matpo", policy="per_role")).policy == "per_role"
    assert resolve_config(TrainConfig(algo="at_grpo")).policy == "per_role"
