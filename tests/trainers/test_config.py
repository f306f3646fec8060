"""TrainConfig: presets fill what was not given, validation names the field and the fix."""

from __future__ import annotations

import dataclasses

import numpy as np
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
    generic = resolve_config(TrainConfig(env=TEST_ENV))  # an env that declares no TRAINING
    # TrainingPreset() defaults; its 2-cycle horizon would lengthen this 1-cycle env, so it is left out
    assert (generic.max_new_tokens, generic.temperature, generic.env_kwargs) == (32, 0.7, {})


def test_an_env_class_declares_its_training_preset():
    import envs

    class Declared(type(envs.make(TEST_ENV))):
        TRAINING = envs.TrainingPreset(max_new_tokens=5, temperature=0.3, tasks_per_step=2, max_cycles=None)

    envs.register("test/declared-v0", Declared)
    config = resolve_config(TrainConfig(env="test/declared", max_new_tokens=7))
    assert (config.max_new_tokens, config.temperature, config.tasks_per_step) == (7, 0.3, 2)  # flags win
    assert config.env_kwargs == {}  # max_cycles=None: the env's own horizon


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
        ({"algo": "grpo", "estimator": "at_grpo"}, "--rollout tree"),
        ({"algo": "gigpo", "estimator_kwargs": {"omgea": 0.5}}, "omega, gamma"),
        ({"algo": "gigpo", "estimator_kwargs": {"anchor": "nope"}}, "anchor"),
        ({"algo": "gigpo", "estimator_kwargs": {"norm": "mean_norm"}}, "--advantage-scale"),
        ({"algo": "grpo", "estimator": "rloo", "estimator_kwargs": {"x": 1}}, r"\(none\)"),
        ({"estimator_kwargs": [1]}, "JSON object"),
        ({"algo": "matpo", "estimator_kwargs": {"planner_role": "boss"}}, "'boss' role"),
        ({"eps_high": 1.5}, "--eps-high"),
        ({"entropy_coef": -0.1}, "--entropy-coef"),
        ({"env": "tictactoe", "roles": ("second=minimax",)}, "one of \\['oracle', 'heuristic', 'random'\\]"),
        ({"env": "tictactoe", "roles": ("third=random",)}, "not in the team's roles"),
        ({"env": "tictactoe", "roles": ("first=random", "second=oracle")}, "nothing would train"),
        ({"env": "tictactoe", "roles": ("second=random", "second=oracle")}, "named once"),
    ],
)
def test_config_errors_name_the_field_and_the_fix(kwargs, named):
    with pytest.raises(ConfigError, match=named if named.startswith("\\") else named.replace("-", r"\-")):
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


def test_the_learner_forward_is_the_one_that_measured_faster_on_the_device_and_a_flag_wins(monkeypatch):
    import torch

    def forward(**kwargs):
        return resolve_config(TrainConfig(env="sokoban", **kwargs)).shared_prefix

    assert forward(device="cpu") is True and forward(device="cuda:0") is False
    assert forward(device="cuda", shared_prefix=True) is True
    assert forward(device="cpu", shared_prefix=False) is False
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # no --device: where the run will be
    assert forward() is False
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert forward() is True
    with pytest.raises(ValueError, match="resolved config"):
        TrainConfig(env="sokoban").learner_config()


def test_matpo_trains_one_shared_policy_unless_told_otherwise():
    assert resolve_config(TrainConfig(algo="matpo")).policy == "shared"
    assert resolve_config(TrainConfig(algo="matpo", policy="per_role")).policy == "per_role"
    assert resolve_config(TrainConfig(algo="at_grpo")).policy == "per_role"


def test_estimator_options_set_on_the_command_line_reach_the_estimator():
    """--estimator-kwargs '{"omega": ...}' changes GiGPO's advantages (omega weighs the step level)."""
    from tests.trainers.advantages_helpers import gigpo_batch
    from trainers.advantages import compute_advantages
    from trainers.at_grpo import parse_train_args

    def advantages(argv):
        config = resolve_config(TrainConfig(**parse_train_args(["--algo", "gigpo", *argv])))
        return compute_advantages(gigpo_batch(), config.estimator, **estimator_options(config)).advantages

    default = advantages([])
    no_step_level = advantages(["--estimator-kwargs", '{"omega": 0.0}'])
    assert not np.allclose(default, no_step_level)
    assert np.allclose(no_step_level, [1, -1, 1, 1, -1])  # the episode level alone: R = 1 vs R = 0
    argv = ["--algo", "gigpo", "--estimator-kwargs", '{"gamma": 0.5}']
    config = resolve_config(TrainConfig(**parse_train_args(argv)))
    assert estimator_options(config) == {"norm": "mean_std_norm", "gamma": 0.5}


def test_every_loss_field_of_the_learner_is_a_training_flag():
    import dataclasses

    from trainers.learner import LearnerConfig

    config = resolve_config(
        TrainConfig(eps_low=0.1, eps_high=0.3, aggregation="token-mean", entropy_coef=0.01, weight_decay=0.1)
    )
    learner = config.learner_config()
    assert (learner.eps_low, learner.eps_high, learner.aggregation) == (0.1, 0.3, "token-mean")
    assert (learner.entropy_coef, learner.weight_decay, learner.lr) == (0.01, 0.1, config.lr)
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    derived = {"max_response_length"}  # --max-new-tokens
    assert {f.name for f in dataclasses.fields(LearnerConfig)} - derived <= train_fields


@pytest.mark.parametrize(
    "name", ["sokoban", "plan_path", "sudoku", "math", "code", "tictactoe", "referential"]
)
def test_the_training_presets_raise_no_warning_on_any_builtin_env(name):
    import warnings

    import envs
    from envs.splits import split_seeds
    from trainers.presets import env_preset

    kwargs = env_preset(name)["env_kwargs"]
    beyond_horizon = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the preset must not warn about itself, nor about any task
        for split in ("train", "test"):
            env = envs.make(name, split=split, **kwargs)
            for seed in split_seeds(split, 10 if name in ("math", "code") else 700):
                env.reset(seed=seed)
                level = getattr(env, "level", None)
                if level is not None and level.optimal_moves > env.max_cycles * env.max_moves_per_turn:
                    beyond_horizon += 1
    if name == "sokoban":  # the case that used to warn: easy levels of 21-30 moves, a 20-move horizon
        assert beyond_horizon > 0


def test_a_game_declares_self_play_and_a_flag_still_wins():
    assert resolve_config(TrainConfig(env="tictactoe")).policy == "shared"  # one policy, both seats
    assert resolve_config(TrainConfig(env="tictactoe", policy="per_role")).policy == "per_role"
    assert resolve_config(TrainConfig(env="sokoban")).policy == "per_role"  # the algo's, as before
    assert resolve_config(TrainConfig(env="sokoban", algo="matpo")).policy == "shared"


def test_zero_sum_games_default_to_spiral_self_play_and_a_flag_still_wins():
    for name in ("tictactoe", "kuhn_poker", "negotiation", "mini_hanabi"):
        config = resolve_config(TrainConfig(env=name))
        assert (config.algo, config.rollout, config.estimator, config.policy) == (
            "spiral",
            "plain",
            "rae",
            "shared",
        ), name
    # cooperative games with an oracle term keep tree groups; the planning envs keep AT-GRPO
    for name in ("referential", "everyone_contributes", "sokoban"):
        assert resolve_config(TrainConfig(env=name)).algo == "at_grpo", name
    explicit = resolve_config(TrainConfig(env="tictactoe", algo="at_grpo"))
    assert (explicit.rollout, explicit.estimator) == ("tree", "at_grpo")
    assert resolve_config(TrainConfig(env="tictactoe", estimator="grpo")).estimator == "grpo"


def test_an_env_preset_naming_an_unknown_algo_is_a_config_error(monkeypatch):
    import envs

    spec = envs.spec("tictactoe")
    broken = dataclasses.replace(spec.training, algo="alphazero")
    monkeypatch.setattr(type(spec), "training", property(lambda self: broken))
    with pytest.raises(ConfigError, match=r"TrainingPreset.algo='alphazero'.*--algo"):
        TrainConfig(env="tictactoe")
    assert TrainConfig(env="tictactoe", algo="grpo").algo == "grpo"  # --algo is the way out


def test_the_micro_batch_default_is_one_number_for_training_warm_start_and_the_learner():
    """The token budget sets the learner's peak memory (tic-tac-toe on CPU: 4096 tokens 8.5 GB,
    1024 4.0 GB, 512 2.5 GB; benchmarks.learner with LoRA: 512 is also 5-7% faster than 1024);
    a default changed in one place only would split the commands."""
    import inspect

    from trainers.learner import LearnerConfig
    from trainers.sft_config import SFTConfig
    from trainers.supervised import SupervisedLearner

    supervised = inspect.signature(SupervisedLearner.__init__).parameters["micro_batch_tokens"].default
    assert TrainConfig.micro_batch_tokens == SFTConfig.micro_batch_tokens == supervised
    assert TrainConfig.micro_batch_tokens == LearnerConfig.micro_batch_tokens == 512
