"""TrainConfig: presets fill what was not given, validation names the field and the fix."""

from __future__ import annotations

import pytest

from trainers.config import ConfigError, TrainConfig, resolve_config

TEST_ENV = "tests.trainers.conftest:test/even_plan"


def test_presets_fill_what_was_not_given_and_explicit_values_win():
    config = resolve_config(TrainConfig(env="sokoban"))
    assert (config.rollout, config.estimator) == ("tree", "at_grpo")
    assert config.env_kwargs["difficulty"] == "easy" and config.tasks_per_step and config.max_new_tokens
    assert config.lr == 5e-4  # LoRA default
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
    ],
)
def test_config_errors_name_the_field_and_the_fix(kwargs, named):
    with pytest.raises(ConfigError, match=named.replace("-", r"\-")):
        TrainConfig(**kwargs)
