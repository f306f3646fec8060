"""The supervised warm start: the reply-only loss, the command, resume, --init (its
demonstrations: test_demonstrations.py)."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import envs
from agents.team import Team
from tests.trainers.conftest import ONE_LINE_PROGRAM_ID, ONE_TOKEN_ID, OneTokenEnv
from tests.trainers.sft_helpers import team_config
from trainers.at_grpo import main as at_grpo_main
from trainers.cli import parse_overrides
from trainers.config import ConfigError, TrainConfig
from trainers.evaluation import evaluate, validation_tasks
from trainers.learner import Learner
from trainers.run.init_weights import load_initial_weights
from trainers.run.trained_team import load_trained_team
from trainers.sft import batch_indices, format_sft_summary, lr_factor, main, train_sft
from trainers.sft_config import SFTConfig, resolve_sft_config, sft_config_from_flags
from trainers.supervised import SupervisedLearner
from trainers.teams import build_team


def _one_token_config(tmp_path, **changes) -> SFTConfig:
    fields = dict(
        env=ONE_TOKEN_ID,
        model="tiny-test",
        response_prefix="",
        train_tasks=16,
        val_tasks=4,
        eval_tasks=32,
        steps=12,
        batch_size=8,
        lr=1e-2,
        val_every=4,
        eval_every=0,
        max_new_tokens=1,
        output_dir=str(tmp_path),
        run_name="warm",
        progress=False,
        tensorboard=False,
        transcripts=0,
        checkpoint_every=4,
        device="cpu",
    )
    return SFTConfig(**{**fields, **changes})


# ---------------------------------------------------------------------------- the loss
def test_the_loss_scores_reply_tokens_only():
    """On constructed tokens: NLL = mean over the reply of -log p(reply token | all before),
    the prompt positions never targets (changing what follows the prompt's tokens changes
    nothing but through the reply)."""
    env = envs.make(ONE_TOKEN_ID, team="mas")
    team = build_team(team_config(lora=False, policy="shared"), env)
    learner = SupervisedLearner(team, lr=1e-3)
    model = team.bindings["planner"].policy.model
    prompt, reply = [5, 9, 14, 3, 7, 11], [20, 21, 22]
    make = lambda p, r: SimpleNamespace(  # noqa: E731 - a Turn's fields the learner reads
        policy=team.bindings["planner"].policy_id,
        prompt_token_ids=tuple(p),
        token_ids=tuple(r),
        logprobs=(0.0,) * len(r),
    )
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + reply])).logits[0].float()
    logprobs = torch.log_softmax(logits, -1)
    expected = -np.mean([float(logprobs[len(prompt) - 1 + j, token]) for j, token in enumerate(reply)])
    assert learner.nll([make(prompt, reply)])["all"] == pytest.approx(expected, rel=1e-4)
    # A prompt-only change of its last token's successor is not a target: only the reply is.
    assert learner.nll([make(prompt, reply[:1])])["all"] == pytest.approx(
        -float(logprobs[len(prompt) - 1, 20]), rel=1e-4
    )


def test_batch_order_is_a_function_of_seed_and_step():
    first = [batch_indices(10, 4, seed=3, step=s) for s in (1, 2, 3)]
    assert first == [batch_indices(10, 4, seed=3, step=s) for s in (1, 2, 3)]
    assert sorted(first[0] + first[1] + first[2][:2]) == list(range(10))  # one epoch, then the next
    assert batch_indices(10, 4, seed=4, step=1) != first[0]


# ---------------------------------------------------------------------------- the command
@pytest.mark.slow
def test_warm_start_takes_a_one_token_task_from_chance_to_solved(tmp_path):
    summary = train_sft(_one_token_config(tmp_path))
    assert summary.before["success"] <= 0.1  # the random-init model rarely writes 'k'
    assert summary.after["success"] >= 0.9  # on the validation slice
    assert summary.test_before["success"] <= 0.1 and summary.test_after["success"] >= 0.9  # held-out test
    assert summary.val_nll[1] < summary.val_nll[0]
    run = summary.run_dir
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == list(range(1, 13)) and "val_nll" in metrics[3]
    assert (run / "plots" / "train_loss.png").is_file()
    # The trained team evaluates like a training run's (benchmarks.evaluate --model <run>).
    trained = load_trained_team(run)
    assert trained.step == 12 and trained.config.policy == "shared"


@pytest.mark.slow
def test_warm_start_teaches_a_tool_team_a_one_line_program_run_in_the_sandbox(tmp_path):
    """The tool writes ``print(sum(map(int, input().split())))`` (41 tokens of the tiny model),
    the plan agent copies what it printed: both learnt from the oracle's demonstrations."""
    config = _one_token_config(
        tmp_path, env=ONE_LINE_PROGRAM_ID, teams=("mas",), steps=40, batch_size=16, val_every=20,
        max_new_tokens=4, role_max_new_tokens={"tool": 48}, eval_tasks=16, test_tasks=16, lora=False, lr=3e-3,
    )  # fmt: skip
    summary = train_sft(config)
    assert summary.before["success"] == 0.0 and summary.test_before["success"] == 0.0
    assert summary.after["success"] >= 0.9 and summary.test_after["success"] >= 0.9


@pytest.mark.slow
def test_resume_repeats_an_uninterrupted_run_exactly(tmp_path):
    whole = train_sft(_one_token_config(tmp_path, steps=8, run_name="whole"))
    train_sft(_one_token_config(tmp_path, steps=4, run_name="split"))
    resumed = train_sft(
        _one_token_config(tmp_path, steps=8, run_name="split", resume=str(tmp_path / "split"))
    )
    read = lambda run: [json.loads(line)["nll"] for line in (run / "metrics.jsonl").read_text().splitlines()]  # noqa: E731
    assert read(resumed.run_dir) == read(whole.run_dir)
    a = load_trained_team(whole.run_dir).bindings["planner"].policy.model
    b = load_trained_team(resumed.run_dir).bindings["planner"].policy.model
    for (name, x), (_, y) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(x, y), name


def test_a_training_time_budget_ends_the_warm_start_and_a_resume_past_it_adds_no_step(tmp_path):
    # Any update takes more than a millionth of a minute: the budget ends the run at step 1.
    config = _one_token_config(tmp_path, steps=8, train_minutes=1e-6, run_name="budget")
    summary = train_sft(config)
    metrics = summary.run_dir / "metrics.jsonl"
    steps = lambda: [json.loads(line)["step"] for line in metrics.read_text().splitlines()]  # noqa: E731
    assert summary.steps == 1 and steps() == [1]
    assert summary.test_after is not None  # the final weights still get their test number
    resumed = train_sft(dataclasses.replace(config, resume=str(summary.run_dir)))
    assert resumed.steps == 1 and steps() == [1]


def test_the_lr_schedules_warm_up_then_hold_or_decay():
    constant = [lr_factor("constant", step, 10, 2) for step in range(1, 11)]
    assert constant == [0.5] + [1.0] * 9
    cosine = [lr_factor("cosine", step, 10, 2) for step in range(1, 11)]
    assert cosine[:3] == [0.5, 1.0, 1.0]  # warm-up, then the decay starts at the peak
    assert all(a > b for a, b in zip(cosine[2:], cosine[3:], strict=False)) and 0 < cosine[-1] < 0.05
    assert lr_factor("cosine", 6, 10) == pytest.approx(0.5)  # half-way through the decay
    with pytest.raises(ConfigError, match="--warmup-steps"):
        SFTConfig(steps=10, warmup_steps=10)


def test_a_cosine_run_logs_its_schedule_and_resumes_it_exactly(tmp_path, monkeypatch):
    import trainers.sft as sft

    cosine = dict(steps=8, lr_schedule="cosine", warmup_steps=2)
    whole = train_sft(_one_token_config(tmp_path, run_name="whole", **cosine))
    real = sft.batch_indices

    def interrupt_at_step_5(n, batch_size, seed, step):
        if step == 5:  # after step 4's checkpoint
            raise KeyboardInterrupt
        return real(n, batch_size, seed, step)

    monkeypatch.setattr(sft, "batch_indices", interrupt_at_step_5)
    with pytest.raises(KeyboardInterrupt):
        train_sft(_one_token_config(tmp_path, run_name="split", **cosine))
    monkeypatch.setattr(sft, "batch_indices", real)
    resumed = train_sft(
        _one_token_config(tmp_path, run_name="split", resume=str(tmp_path / "split"), **cosine)
    )

    def read(run, key):
        return [json.loads(line)[key] for line in (run / "metrics.jsonl").read_text().splitlines()]

    expected = [1e-2 * lr_factor("cosine", step, 8, 2) for step in range(1, 9)]
    assert read(whole.run_dir, "lr") == pytest.approx(expected)
    assert read(resumed.run_dir, "lr") == read(whole.run_dir, "lr")
    assert read(resumed.run_dir, "nll") == read(whole.run_dir, "nll")


def test_ending_a_run_early_at_its_last_checkpoint_evaluates_those_weights(tmp_path, monkeypatch):
    import trainers.sft as sft

    real = sft.batch_indices

    def interrupt_at_step_5(n, batch_size, seed, step):
        if step == 5:  # after step 4's checkpoint, before the run's last-step evaluation
            raise KeyboardInterrupt
        return real(n, batch_size, seed, step)

    monkeypatch.setattr(sft, "batch_indices", interrupt_at_step_5)
    with pytest.raises(KeyboardInterrupt):
        train_sft(_one_token_config(tmp_path, steps=8))
    monkeypatch.setattr(sft, "batch_indices", real)
    summary = train_sft(_one_token_config(tmp_path, steps=4, resume=str(tmp_path / "warm")))
    evals = [json.loads(line) for line in (summary.run_dir / "eval.jsonl").read_text().splitlines()]
    assert [e["step"] for e in evals] == [0, 4]  # the step-4 weights, evaluated on resume
    assert summary.after["success"] == evals[-1]["success"]
    assert summary.val_nll[1] == evals[-1]["val_nll"] < summary.val_nll[0]


def test_a_reply_length_for_a_role_no_team_has_fails_before_the_model_loads(tmp_path):
    # A model that does not exist: the role check must come first to be the error seen.
    config = SFTConfig(
        env="plan_path", teams=("mas",), role_max_new_tokens={"tool": 320}, model="no-such/model",
        output_dir=str(tmp_path), progress=False,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"--max-new-tokens names \['tool'\].*\['planner', 'executor'\]"):
        train_sft(config)


def test_config_errors_name_the_fix(tmp_path, capsys):
    with pytest.raises(ConfigError, match="--policy shared"):
        SFTConfig(teams=("mas", "single"), policy="per_role")
    with pytest.raises(ConfigError, match="batch_size=0"):
        SFTConfig(batch_size=0)
    with pytest.raises(SystemExit) as exit_info:  # one line naming the command, as trainers.at_grpo
        main(["--env", ONE_TOKEN_ID, "--env-kwargs", '{"team": "single"}'])
    assert exit_info.value.code == 2
    assert "python -m trainers.sft: error: env_kwargs may not set 'team'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="may not set 'team'"):  # --debug: the error itself
        main(["--env", ONE_TOKEN_ID, "--env-kwargs", '{"team": "single"}', "--debug"])
    with pytest.raises(ConfigError, match="role_max_new_tokens"):
        SFTConfig(role_max_new_tokens={"tool": 0})
    # an env with no exact solver: the oracle's demonstrations are a config error, before any
    # model loads (it was a traceback after loading the model and playing the first turn)
    with pytest.raises(SystemExit) as exit_info:
        main(["--env", "negotiation", "--model", "no-such/model", "--output-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "NegotiationEnv has no exact solver" in capsys.readouterr().err


class _WarmStartPresetEnv(OneTokenEnv):
    TRAINING = envs.TrainingPreset(
        max_new_tokens=1, warm_start={"train_tasks": 7, "teams": ["single"], "steps": 50, "warmup_steps": 5}
    )


class _BadWarmStartPresetEnv(_WarmStartPresetEnv):
    TRAINING = envs.TrainingPreset(max_new_tokens=1, warm_start={"train_taks": 7})


def test_an_envs_warm_start_preset_fills_the_fields_no_flag_sets(capsys):
    envs.register("test/warm_preset-v0", entry_point=_WarmStartPresetEnv)
    envs.register("test/bad_warm_preset-v0", entry_point=_BadWarmStartPresetEnv)
    config = sft_config_from_flags({"env": "test/warm_preset-v0"})
    assert (config.train_tasks, config.teams, config.val_tasks) == (7, ("single",), SFTConfig.val_tasks)
    flagged = sft_config_from_flags({"env": "test/warm_preset-v0", "train_tasks": 9})
    assert flagged.train_tasks == 9  # the flag wins
    # a shorter --steps shrinks the preset's warm-up to fit (benchmarks.footprint's 3 steps
    # failed on ALFWorld's 5-step warm-up); a warm-up flag is checked as given
    assert (config.steps, config.warmup_steps) == (50, 5)
    assert sft_config_from_flags({"env": "test/warm_preset-v0", "steps": 3}).warmup_steps == 2
    with pytest.raises(ConfigError, match="warmup_steps=5"):
        sft_config_from_flags({"env": "test/warm_preset-v0", "steps": 3, "warmup_steps": 5})
    assert sft_config_from_flags({"env": ONE_TOKEN_ID}).train_tasks == SFTConfig.train_tasks
    with pytest.raises(ConfigError, match=r"warm_start names \['train_taks'\]"):
        sft_config_from_flags({"env": "test/bad_warm_preset-v0"})
    with pytest.raises(SystemExit):  # --help shows the env's value and the field's own
        main(["--env", "test/warm_preset-v0", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"(default: 7 for this command line, {SFTConfig.train_tasks} otherwise)" in shown


def test_per_role_reply_length_of_the_evaluations_is_a_command_line_flag():
    argv = ["--max-new-tokens", "tool=320", "--max-new-tokens", "24"]
    given = parse_overrides(SFTConfig, argv, prog="python -m trainers.sft", description="")
    assert given == {"role_max_new_tokens": {"tool": 320}, "max_new_tokens": 24}


# ---------------------------------------------------------------------------- --demos <run>
@pytest.mark.slow
def test_one_rejection_sampling_round_on_a_runs_successes_raises_sampled_success(tmp_path):
    """Expert iteration with your own team, on an env with no oracle: a training run samples
    (its lr too small to learn), the warm start clones its successful episodes only, and the
    team's sampled held-out success rises from chance to near 1 (measured 0.06 -> 0.98).
    Greedy decoding of this random model happens to be right already, so success is
    measured by sampling at temperature 1."""
    from agents.base import SamplingParams

    even_plan = "tests.trainers.conftest:test/even_plan"
    collect = at_grpo_main(
        ["--env", even_plan, "--model", "tiny-test", "--response-prefix", "", "--max-new-tokens", "1",
         "--steps", "4", "--tasks-per-step", "8", "--lr", "1e-9", "--eval-tasks", "2", "--eval-every", "0",
         "--output-dir", str(tmp_path), "--run-name", "collect", "--no-progress", "--no-tensorboard",
         "--no-plots"]
    )  # fmt: skip
    assert collect == 0
    summary = train_sft(
        SFTConfig(
            env=even_plan, demos=(str(tmp_path / "collect"),), model="tiny-test", response_prefix="",
            max_new_tokens=1, lora=False, lr=1e-2, steps=40, batch_size=8, val_every=20, eval_every=0,
            eval_tasks=4, output_dir=str(tmp_path), run_name="warm", progress=False, tensorboard=False,
            transcripts=0, checkpoint_every=40, device="cpu",
        )
    )  # fmt: skip
    assert summary.demonstrations >= 8 and summary.val_nll[1] < summary.val_nll[0]

    def sampled_success(team):
        sampling = SamplingParams(temperature=1.0, max_new_tokens=1, stop=("</answer>",))
        result = evaluate(team, even_plan, num_tasks=64, sampling=sampling, env_kwargs={"team": "mas"})
        return result.metrics["success"]

    env = envs.make(even_plan, team="mas")
    untrained = build_team(team_config(response_prefix=""), env)
    trained = load_trained_team(summary.run_dir)
    before, after = sampled_success(untrained), sampled_success(Team(env, dict(trained.bindings)))
    print(f"\n[rejection sampling] sampled held-out success {before:.2f} -> {after:.2f}")
    assert before < 0.3 and after >= 0.85


def test_demos_from_a_run_that_does_not_fit_name_the_fix(tmp_path):
    run = tmp_path / "rl"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"team": "single", "env_kwargs": {}}))
    config = _one_token_config(tmp_path, demos=(str(run),))
    with pytest.raises(ConfigError, match="--teams single"):
        train_sft(config)
    (run / "config.json").write_text(json.dumps({"team": "mas", "env_kwargs": {"max_cycles": 3}}))
    with pytest.raises(ConfigError, match="pass --env-kwargs"):
        train_sft(config)
    (run / "config.json").write_text(json.dumps({"team": "mas", "env_kwargs": {}}))
    with pytest.raises(ConfigError, match="--no-save-episodes"):
        train_sft(config)
    with pytest.raises(ConfigError, match="--demos oracle"):
        SFTConfig(demos=())
    evaluation = tmp_path / "eval"
    evaluation.mkdir()
    (evaluation / "results.json").write_text("{}")
    with pytest.raises(ConfigError, match="held-out test tasks, which are never trained on"):
        train_sft(_one_token_config(tmp_path, demos=(str(evaluation),), run_name="from-eval"))


# ---------------------------------------------------------------------------- --init
def test_init_seeds_per_role_adapters_from_a_shared_warm_start(tmp_path):
    warm = train_sft(_one_token_config(tmp_path, steps=4)).run_dir
    env = envs.make(ONE_TOKEN_ID, team="mas")
    team = build_team(team_config(policy="per_role", lora_rank=8, lora_alpha=16), env)
    learner = Learner(team)
    load_initial_weights(warm, learner)
    source = load_trained_team(warm).bindings["planner"]
    saved = {n.replace(".shared.", "."): p for n, p in source.policy.model.named_parameters() if "lora_" in n}
    for unit in learner.units.values():
        names = {id(p): n for n, p in unit.policy.model.named_parameters()}
        for parameter in unit.parameters:
            assert torch.equal(parameter, saved[names[id(parameter)].replace(f".{unit.adapter}.", ".")])
    # The RL run that starts there records where it came from, and plays like the warm start.
    code = at_grpo_main(
        ["--env", ONE_TOKEN_ID, "--model", "tiny-test", "--init", str(warm), "--response-prefix", "",
         "--max-new-tokens", "1", "--steps", "1", "--lr", "1e-9", "--tasks-per-step", "2",
         "--eval-tasks", "16",
         "--output-dir", str(tmp_path), "--run-name", "rl", "--no-progress", "--no-tensorboard", "--no-plots"]
    )  # fmt: skip
    assert code == 0
    assert json.loads((tmp_path / "rl" / "config.json").read_text())["init"] == str(warm)
    before = json.loads((tmp_path / "rl" / "eval.jsonl").read_text().splitlines()[0])
    assert before["step"] == 0 and before["success"] >= 0.9  # it did not start from the random model


@pytest.mark.slow
def test_init_refuses_another_model_or_a_missing_run(tmp_path, capsys):
    warm = train_sft(_one_token_config(tmp_path, steps=1)).run_dir
    with pytest.raises(SystemExit) as exit_info:
        at_grpo_main(["--env", ONE_TOKEN_ID, "--init", str(warm), "--output-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "trained on model 'tiny-test'" in err and "pass --model tiny-test" in err
    with pytest.raises(SystemExit) as exit_info:
        at_grpo_main(["--env", ONE_TOKEN_ID, "--model", "tiny-test", "--init", str(tmp_path / "nope")])
    assert exit_info.value.code == 2 and "not a training run" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--lora-rank"):
        env = envs.make(ONE_TOKEN_ID, team="mas")
        load_initial_weights(warm, Learner(build_team(team_config(lora_rank=2), env)))


# ---------------------------------------------------------------------------- validation slice
def test_validation_tasks_are_train_seeds_no_trainer_draws():
    tasks = validation_tasks(ONE_TOKEN_ID, 3)
    assert all(t.split == "train" and envs.split_of(t.seed) == "train" for t in tasks)
    assert tasks[0].seed == envs.splits.VALIDATION_SEED_START
    env = envs.make(ONE_TOKEN_ID, team="mas")
    team = build_team(team_config(), env)
    from agents.base import SamplingParams

    result = evaluate(
        team, ONE_TOKEN_ID, num_tasks=3, sampling=SamplingParams(temperature=0.0, max_new_tokens=1),
        env_kwargs={"team": "mas"}, split="validation",
    )  # fmt: skip
    assert sorted(e.task.seed for e in result.episodes) == [t.seed for t in tasks]
    with pytest.raises(ValueError, match="'test' or 'validation'"):
        evaluate(team, ONE_TOKEN_ID, num_tasks=1, sampling=SamplingParams(), split="train")


def test_in_run_evaluations_play_the_validation_slice_and_the_test_number_the_held_out_block(tmp_path):
    config = _one_token_config(
        tmp_path, steps=1, eval_tasks=2, test_tasks=3, transcripts=2, teams=("mas", "single")
    )
    run = train_sft(config)
    transcript = (run.run_dir / "transcripts" / "eval_step_000001.md").read_text()
    for task in validation_tasks(ONE_TOKEN_ID, 2):
        assert f"/train/{task.seed} " in transcript
    assert "/test/" not in transcript
    tests = [json.loads(line) for line in (run.run_dir / "test.jsonl").read_text().splitlines()]
    assert [r["step"] for r in tests] == [0, 1]
    assert tests[-1]["tasks"] == tests[-1]["single/tasks"] == 3
    assert tests[-1]["first_task_seed"] == envs.heldout_seeds(1)[0]
    assert run.test_after["single/success"] == tests[-1]["single/success"] and run.eval_split == "validation"
    text = format_sft_summary(run, resolve_sft_config(config))
    assert "mas: held-out test success" in text and "single: held-out test success" in text
    assert "3 tasks from test index 1000000" in text
    assert f"trainers.at_grpo --env {ONE_TOKEN_ID} --model tiny-test --team mas --init {run.run_dir}" in text


def test_test_tasks_zero_plays_no_test_evaluation(tmp_path):
    run = train_sft(_one_token_config(tmp_path, steps=1, eval_tasks=2, test_tasks=0))
    assert not (run.run_dir / "test.jsonl").exists() and run.test_after is None


def test_training_tasks_skip_the_validation_slice(monkeypatch):
    from trainers import rollout
    from trainers.rollout import training_tasks

    config = TrainConfig(env=ONE_TOKEN_ID, tasks_per_step=3, model="tiny-test")
    normal = training_tasks(config, 1)
    assert len(normal) == 3 and not any(envs.splits.is_validation_seed(t.seed) for t in normal)
    # Force the first draw into the slice: it is skipped, the next draws fill the step.
    monkeypatch.setattr(rollout, "is_validation_seed", lambda seed: seed == normal[0].seed)
    skipped = [t.seed for t in training_tasks(config, 1)]
    assert len(skipped) == 3 and normal[0].seed not in skipped
    assert skipped[:2] == [normal[1].seed, normal[2].seed]


def test_the_training_summary_says_when_nothing_was_learned(tmp_path):
    from trainers.at_grpo import Summary, format_summary

    def text(before, after):
        summary = Summary(tmp_path, 3, {"success": before}, {"success": after}, {}, 60.0)
        return format_summary(summary)

    assert "nothing was learned: success 0.00 -> 0.00" in text(0.0, 0.0)
    assert "python -m trainers.sft" in text(0.5, 0.25)
    assert "nothing was learned" not in text(0.25, 0.5)
    assert "nothing was learned" not in text(1.0, 1.0)  # already solved: nothing to say
    warm = Summary(tmp_path, 3, {"success": 0.5}, {"success": 0.25}, {}, 60.0, warm_started=True)
    advice = format_summary(warm)
    assert "nothing was learned" in advice and "--test-tasks" in advice
    assert "python -m trainers.sft" not in advice  # it already started from one


def test_stopping_the_final_evaluation_keeps_the_weights_and_the_resume_plays_it(tmp_path, monkeypatch):
    import trainers.sft as sft

    real = sft._evaluate

    def interrupt_the_last_evaluation(config, teams, run, step, val_nll=None):
        if step == 6:  # every update done; a tool team's evaluation can take many minutes here
            raise KeyboardInterrupt
        return real(config, teams, run, step, val_nll)

    monkeypatch.setattr(sft, "_evaluate", interrupt_the_last_evaluation)
    config = _one_token_config(tmp_path, steps=6, checkpoint_every=50)  # no checkpoint but the last
    with pytest.raises(KeyboardInterrupt):
        train_sft(config)
    assert (tmp_path / "warm" / "checkpoints" / "step_000006").is_dir()  # saved before evaluating
    monkeypatch.setattr(sft, "_evaluate", real)
    summary = train_sft(dataclasses.replace(config, resume=str(tmp_path / "warm")))
    metrics = (summary.run_dir / "metrics.jsonl").read_text().splitlines()
    evals = [json.loads(line) for line in (summary.run_dir / "eval.jsonl").read_text().splitlines()]
    assert [json.loads(line)["step"] for line in metrics] == [1, 2, 3, 4, 5, 6]  # no update repeated
    assert [e["step"] for e in evals] == [0, 6] and summary.steps == 6
    assert summary.after["success"] == evals[-1]["success"]
