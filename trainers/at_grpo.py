"""``python -m trainers.at_grpo --env sokoban``: train a team with AT-GRPO (or GRPO, GiGPO,
MATPO, SPIRAL via ``--algo``; an env's preset may pick one: the zero-sum games pick SPIRAL's
self-play) and leave a run directory behind.

One step = tree or plain rollouts on ``tasks_per_step`` fresh training tasks, advantages
from the chosen estimator, then ``passes`` x ``mini_batches`` optimiser steps per trained
unit. Before training, every ``eval_every`` steps and at the end, the team plays
``eval_tasks`` tasks of ``eval_split`` (K = 1, greedy): the train split's validation slice by
default, where choices are made. Before training and after the last step it also plays
``test_tasks`` held-out test tasks of the protocol's block (``envs.HELDOUT_TEST_START`` on):
the run's test number, with its task-level standard error.

Run directory (``<output_dir>/<run_name>``):

    config.json        the resolved config (presets filled in); --resume reads it
    metrics.jsonl      one line per step: rewards per role, success, invalid rate, group
                       sizes, zero-variance share, loss, KL, clip fraction, grad norm,
                       tokens/s, seconds per phase
    eval.jsonl         one line per evaluation: success (with success_se over its tasks),
                       invalid rate, return per role
    test.jsonl         the held-out test evaluations (step 0 and the last step)
    test_parts/        a test still being played, 64 tasks per finished part (a resume
                       plays only the missing parts; deleted when the test is logged)
    tensorboard/       the same scalars as TensorBoard events (when tensorboard is installed)
    plots/*.png        reward, success and eval curves (when matplotlib is installed)
    report.html        one offline page: config, curves, evaluation episodes turn by turn,
                       AT-GRPO trees (refreshed at each evaluation and at the end;
                       python -m benchmarks.report <run> rebuilds it)
    transcripts/       a few evaluation episodes per evaluation, prompts and replies
    episodes/          train_step_<N>.jsonl: every training episode's replies and outcome
                       (python -m trainers.sft --demos <run> warm-starts on the successes);
                       eval_step_<N>.jsonl: every evaluation episode, turn by turn in full
    trees/             train_step_<N>.jsonl: a few tasks' AT-GRPO trees per step (tree rollouts)
    checkpoints/       step_<N>/: trained weights, optimiser, RNG, step (safetensors + JSON, no
                       pickle) and a manifest; atomic; --resume skips a broken newest one

Everything a step does is a function of (config, step, weights): task seeds and sampler
seeds come from (seed, step), so ``--resume`` from the last checkpoint reproduces the
metrics an uninterrupted run would have logged (on the same machine and thread count).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import envs
from agents.threads import choose_threads
from trainers.advantages import ADVANTAGE_ESTIMATORS
from trainers.backends import (
    AUTO,
    BACKENDS,
    apply_thread_policy,
    check_models_available,
    choose_backend,
)
from trainers.cli import config_to_dict, parse_overrides
from trainers.clock import TrainingClock, bar_total
from trainers.config import (
    RESUMABLE_OVERRIDES,
    ConfigError,
    TrainConfig,
    check_required_role,
    resolve_config,
)
from trainers.errors import run_command
from trainers.evaluation import held_out_line, plays_test
from trainers.progress import RunProgress
from trainers.records import RolloutBatch
from trainers.role_flags import check_role_names
from trainers.run.dirs import check_writable_dir, load_saved_config
from trainers.run.episodes import write_episodes
from trainers.run.files import trained_seconds
from trainers.run.init_weights import init_checkpoint
from trainers.run.lifecycle import Run, run_files_lines
from trainers.run.opponent_pool import OpponentPool, check_opponent_pool
from trainers.run.trained_team import check_fixed_roles
from trainers.run.trees import write_trees
from trainers.runtime import Runtime, WorkerLost, make_runtime
from trainers.runtime.evaluate import eval_line, evaluate, evaluate_unless_unchanged
from trainers.runtime.peak_memory import PEAK_PREFIX
from trainers.runtime.step import train_step

__all__ = ["Summary", "train", "main", "parse_train_args", "load_run_config"]

COMMAND = "trainers.at_grpo"  # the module a resumed run is continued with

LEGACY_DEFAULTS = {"dynamic_sampling": True, "old_logprobs": "sampler"}


@dataclass(frozen=True)
class Summary:
    """What a run did: where it lives, evaluations before and after, mean seconds per phase."""

    run_dir: Path
    steps: int
    before: dict[str, float]
    after: dict[str, float]
    phase_seconds: dict[str, float]
    wall_seconds: float
    warm_started: bool = False
    """Whether the run started from ``--init`` weights (the advice differs)."""
    test_before: dict[str, float] | None = None
    """The held-out test evaluation before training (None: ``test_tasks=0`` or ``eval_split='test'``,
    where ``before`` is the test evaluation)."""
    test_after: dict[str, float] | None = None
    """The held-out test evaluation after the last step (None: as ``test_before``)."""
    eval_split: str = "validation"
    """Where ``before`` and ``after`` played."""
    phase_peak_mb: dict[str, float] = dataclasses.field(default_factory=dict)
    """The highest ``memory/peak_mb/<phase>`` of the logged steps (this process's peak so far as
    that phase ended)."""
    paused: bool = False
    """Whether ``pause_minutes`` stopped the run before it finished (``after`` is then its latest
    evaluation, and no held-out test was played): resume it to finish."""


# ---------------------------------------------------------------------------- set-up
def load_run_config(run_dir: str | Path, overrides: Mapping[str, Any] | None = None) -> TrainConfig:
    """The saved config of ``run_dir`` with the overrides a resumed run may change.

    Raises:
        ConfigError: No config.json there, or an override of a field a resume cannot change.
    """
    # Runs saved before these fields existed always dropped zero-advantage samples and trusted
    # the sampler's logprobs: keep doing so, or their resumed steps would differ.
    return load_saved_config(TrainConfig, run_dir, overrides, RESUMABLE_OVERRIDES, LEGACY_DEFAULTS)


# ---------------------------------------------------------------------------- the run
def _train_line(step: int, metrics: Mapping[str, float]) -> str:
    """The progress display's summary of one training step."""
    rewards = [v for k, v in metrics.items() if k.startswith("reward/")]
    reward = f"reward {np.mean(rewards):.3f}  " if rewards else ""
    return f"step {step}: {reward}success {metrics['success']:.2f}  invalid {metrics['invalid_rate']:.2f}"


def train(
    config: TrainConfig,
    initial_eval: dict[str, float] | None = None,
    initial_test: dict[str, float] | None = None,
    pause_minutes: float = 0.0,
) -> Summary:
    """Run (or, with ``config.resume``, continue) a training run; see the module docstring.

    ``initial_eval`` / ``initial_test``: the step-0 in-run / held-out test evaluation when the
    caller already made it on the same weights (e.g. ``benchmarks.learning`` runs many arms
    from one warm start, and greedy evaluation of identical weights gives identical results);
    logged instead of re-evaluating.

    ``pause_minutes`` (0: never): return as soon as the run has trained this many minutes, at a
    checkpoint and before any evaluation due after it (``Summary.paused``); resuming the run
    continues it as if it had never stopped. ``benchmarks.learning --chunk-minutes`` takes turns
    between arms this way, so that arms compared at equal wall time train on the same machine
    state (a VM's speed drifts by up to 2x over an hour).
    """
    started = time.perf_counter()
    given_env_kwargs = dict(config.env_kwargs)  # the user's; the preset's are the env's own business
    backend = choose_backend(config.backend, config.model, config.device)
    config = resolve_config(dataclasses.replace(config, backend=backend.name))
    # Every user mistake fails here, in seconds, before any model loads.
    env = config.env_setup.make_checked(given_env_kwargs)
    check_required_role(config, tuple(env.roles))  # envs that declare no TEAMS are checked here
    check_role_names(config, tuple(env.roles), config.team)
    check_fixed_roles(config, tuple(env.roles))
    check_opponent_pool(config, env)
    check_models_available(config, tuple(env.roles))
    if config.init and (not config.resume or config.kl_coef > 0):  # a resume's KL reference is --init's
        try:
            init_checkpoint(config.init, models=[config.model_for(role) for role in env.roles])
        except (FileNotFoundError, ValueError) as err:
            why = " (a resumed run's --kl-coef term is to the --init weights: restore them)"
            raise ConfigError(f"{err}{why if config.resume else ''}") from None
    check_writable_dir(config.resume or config.output_dir, "--resume" if config.resume else "--output-dir")
    progress = RunProgress(
        bar_total(config.steps), desc=f"{config.algo} {envs.spec(config.env).name}", enabled=config.progress
    )
    try:  # the display runs from here, so the minutes of loading and evaluating show too
        progress.write(backend.describe())  # config.json records the name
        return _run(config, env, (initial_eval, initial_test), progress, started, pause_minutes)
    finally:
        progress.close()


def _run(
    config: TrainConfig,
    env: envs.TextAECEnv,
    initial_eval: tuple[dict[str, float] | None, dict[str, float] | None],
    progress: RunProgress,
    started: float,
    pause_minutes: float,
) -> Summary:
    """train() once the config is checked: set-up, the step loop, the summary."""
    say = progress.write  # print() would tear the progress display apart
    progress.phase("choosing CPU threads")
    config = dataclasses.replace(config, threads=apply_thread_policy(config.threads, say))  # in config.json
    run = Run.open(COMMAND, config, stem=f"{envs.spec(config.env).name}-{config.algo}-{config.team}")
    progress.phase(f"loading {', '.join(config.models)} ({config.backend}, runtime {config.runtime})")
    try:
        runtime = make_runtime(config, env)
        try:
            return _train(config, runtime, run, initial_eval, progress, started, pause_minutes)
        finally:
            runtime.close()
    finally:
        run.release()  # a failure before the run's with-block must not keep the directory locked


def _train(
    config: TrainConfig,
    runtime: Runtime,
    run: Run,
    initial_eval: tuple[dict[str, float] | None, dict[str, float] | None],
    progress: RunProgress,
    started: float,
    pause_minutes: float,
) -> Summary:
    """The run on its runtime: checkpoint or --init weights, evaluations, the step loop."""
    say = progress.write
    recomputing = runtime.old_logprob_units()
    source = f"recomputed by the learner for {', '.join(recomputing)}" if recomputing else "the sampler's"
    say(f"pi_old: {source} (--old-logprobs {config.old_logprobs})")
    # The default is the forward that measured faster on the device (config.py, shared_prefix).
    forward = "shared prefix (the CPU's default)" if config.shared_prefix else "plain (CUDA's default)"
    say(f"learner forward: {forward}; --shared-prefix / --no-shared-prefix to choose")
    checkpoint = run.checkpoint
    saved = runtime.load_checkpoint(checkpoint) if checkpoint else {"step": 0}
    start = saved["step"]
    # A stateful estimator's state (rae's seat baselines) continues where the checkpoint left it.
    estimator_state = {"state": saved.get("estimator_state")}
    progress.resume_at(start)
    if config.init and not checkpoint:
        say(runtime.initialise(config))
    elif config.init and config.kl_coef > 0:  # the KL term pulls toward --init's weights, resumed too
        say(runtime.initialise(config, resumed=True))
    if checkpoint or config.init:
        runtime.publish()  # engines still serve the base weights
    run.begin(start, config, close_display=progress.close)
    say(run.opening_line())
    run_dir = run.dir
    with run:
        evals, tests = dict(run.evals), run.tests  # evals: those made before this session
        initial_in_run, initial_test = initial_eval
        before = evals.get(0)
        if before is None and initial_in_run is not None:
            run.log_eval(0, initial_in_run)
            before = initial_in_run
        if before is None:
            progress.phase(f"evaluating on {config.eval_tasks} {config.eval_split} tasks (step 0)")
            before = evaluate(config, runtime, run, 0)
        if plays_test(config) and 0 not in tests:
            if initial_test is not None:
                run.log_test(0, initial_test)
            else:
                progress.phase(f"evaluating on {config.test_tasks} held-out test tasks (step 0)")
                evaluate(config, runtime, run, 0, test=True)
        if saved.get("evaluation_due") and start not in evals:  # stopped during that evaluation
            progress.phase(f"step {start}: evaluating on {config.eval_tasks} {config.eval_split} tasks")
            evals[start] = evaluate_unless_unchanged(config, runtime, run, start)
        last_eval = max(evals) if evals else 0
        after = evals[last_eval] if evals else before  # a resumed run's latest evaluation
        eval_text, train_text = eval_line(last_eval, after, config.eval_split), ""
        progress.show(eval_text)
        clock = TrainingClock(
            config.train_minutes, config.eval_every_minutes, trained_seconds(run_dir, start)
        )
        final, paused = start, False
        pool = OpponentPool(config, runtime, run_dir, start) if config.opponent_pool else None
        try:
            for step in range(start + 1, config.steps + 1):
                if clock.passed(pause_minutes):  # asked to pause where this run already is
                    paused = True
                    break
                if clock.spent():  # a resumed run whose budget ran out at its checkpoint
                    break

                def record_trees(batch: RolloutBatch, advantages: np.ndarray, step: int = step) -> None:
                    write_trees(run_dir, step, batch.samples, advantages, config.report_trees)

                with pool.seat(step) if pool else nullcontext({}) as pool_metrics:
                    metrics, episodes = train_step(
                        config, runtime, step, progress.phase, estimator_state, on_advantages=record_trees
                    )
                metrics.update(pool_metrics)
                if pool:
                    pool.after_step(step)
                if config.save_episodes:
                    write_episodes(run_dir, step, episodes)
                run.logger.log_step(step, metrics)
                at_mark = clock.add(metrics["time/step"])
                train_text = _train_line(step, metrics) + clock.text()
                progress.show(f"{train_text} | {eval_text}")
                last = step == config.steps or clock.spent()
                evaluating = last or at_mark or bool(config.eval_every and step % config.eval_every == 0)
                paused = clock.passed(pause_minutes)
                # The checkpoint comes before the evaluation: a tool team's evaluation can run for
                # many minutes, and stopping it must not lose the step. The resumed run plays the
                # evaluation that was due (``evaluation_due``) before its next step.
                if last or at_mark or paused or step % config.checkpoint_every == 0:
                    progress.phase(f"step {step}: saving a checkpoint")
                    runtime.save_checkpoint(
                        run_dir,
                        step,
                        {
                            "config": config_to_dict(config),
                            "estimator_state": estimator_state["state"],
                            "evaluation_due": evaluating,
                        },
                        keep=config.keep_checkpoints,
                    )
                    if pool:
                        pool.prune()
                if paused:  # its evaluation, if one is due, is the resumed run's first work
                    final = step
                    break
                if evaluating:
                    where = f"{config.eval_tasks} {config.eval_split} tasks"
                    progress.phase(f"step {step}: evaluating on {where}")
                    after = evaluate_unless_unchanged(config, runtime, run, step)  # redraws the plots
                    eval_text = eval_line(step, after, config.eval_split)
                    progress.show(f"{train_text} | {eval_text}")
                progress.advance()
                final = step
                if last:
                    break
            if paused:
                progress.phase(f"paused at step {final}, {clock.seconds / 60:.1f} training minutes")
            elif run.needs_final_evaluation(final):  # a resume that asked for no new step
                progress.phase(f"step {final}: evaluating on {config.eval_tasks} {config.eval_split} tasks")
                after = evaluate(config, runtime, run, final)
            if not paused and plays_test(config) and final not in tests:  # after the last checkpoint
                progress.phase(f"step {final}: evaluating on {config.test_tasks} held-out test tasks")
                evaluate_unless_unchanged(config, runtime, run, final, test=True)
            if not paused:
                progress.phase("done")
        except WorkerLost as err:
            progress.close()
            raise WorkerLost(f"{err}\n{run.lost_line()}") from None
    records = run.step_records()
    phases = ("time/generate", "time/env", "time/learner", "time/sync", "time/step")
    phase_seconds = {
        p: float(np.mean([r[p] for r in records if p in r])) for p in phases if any(p in r for r in records)
    }
    peak_keys = dict.fromkeys(k for r in records for k in r if k.startswith(PEAK_PREFIX))  # step order
    peaks = {k.removeprefix(PEAK_PREFIX): max(r[k] for r in records if k in r) for k in peak_keys}
    return Summary(
        run_dir,
        final,
        before,
        after,
        phase_seconds,
        time.perf_counter() - started,
        warm_started=config.init is not None,
        test_before=tests.get(0),
        test_after=tests.get(final),
        eval_split=config.eval_split,
        phase_peak_mb=peaks,
        paused=paused,
    )


def format_summary(summary: Summary) -> str:
    """The one-screen report printed at the end of a run."""
    keys = ["success", "invalid_rate"] + sorted(k for k in summary.after if k.startswith("return/"))
    lines = [
        "",
        f"Run finished: {summary.steps} steps in {summary.wall_seconds / 60:.1f} min",
        f"  run dir     {summary.run_dir}",
        f"  {summary.eval_split + ' eval':<22}{'before':>10}{'after':>10}",
    ]
    for key in keys:
        before, after = summary.before.get(key, float("nan")), summary.after.get(key, float("nan"))
        lines.append(f"  {key:<22}{before:>10.3f}{after:>10.3f}")
    held_out = (summary.test_before, summary.test_after)
    if summary.eval_split == "test":
        held_out = (summary.before, summary.after)
    if held_out[0] is not None and held_out[1] is not None:
        lines.append("  " + held_out_line(*held_out))
    if summary.phase_seconds:
        phases = ", ".join(f"{k.split('/')[1]} {v:.1f}s" for k, v in summary.phase_seconds.items())
        lines.append(f"  mean per step: {phases}")
    if summary.phase_peak_mb:
        peaks = ", ".join(f"{phase} {mb:,.0f} MB" for phase, mb in summary.phase_peak_mb.items())
        lines.append(f"  peak memory of this process, as each phase ended: {peaks}")
    judged = held_out if held_out[1] is not None else (summary.before, summary.after)
    first, last = judged[0].get("success", 0.0), judged[1].get("success", 0.0)
    if last <= first and last < 1.0 and summary.warm_started:
        lines.append(
            f"  nothing was learned: success {first:.2f} -> {last:.2f}. From a warm start "
            "a few steps move success by less than the noise of a small evaluation (docs/results.md): "
            "try more --test-tasks (256 for a standard error near 0.03), more --steps, or a lower --lr"
        )
    elif last <= first and last < 1.0:
        lines.append(
            f"  nothing was learned: success {first:.2f} -> {last:.2f}. "
            "A small model needs a warm start first: python -m trainers.sft --env <env>, "
            "then this command with --init <that run dir> (docs/results.md)"
        )
    return "\n".join(lines + run_files_lines(summary.run_dir, COMMAND))


PRINT_CONFIG = "--print-config"


def _resolved_fields(given: Mapping[str, Any], algo: str | None) -> dict[str, Any]:
    """Every field's value for a command line that sets ``given`` (presets filled in)."""
    config = given.get("resume") and load_run_config(given["resume"], given)
    config = resolve_config(config or TrainConfig(**{"algo": algo, **given}))
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def parse_train_args(argv: Sequence[str] | None = None, *, algo: str | None = None) -> dict[str, Any]:
    """The ``TrainConfig`` fields a command line sets (``--help`` lists them all, with the
    defaults the env's preset gives for that command line)."""
    return parse_overrides(
        TrainConfig,
        argv,
        prog=f"python -m trainers.{algo or 'at_grpo'}",
        aliases={"num_generations": ["-K"]},
        description=(__doc__ or "").split("\n\n")[0].replace("``", "")
        + ("" if algo is None else f"\nThis alias sets --algo {algo}."),
        epilog=(
            "Defaults shown are those of this command line: a field left unset takes the env's training\n"
            "preset (its TRAINING, envs.TrainingPreset) or the --algo preset, so --env sudoku --help shows\n"
            f"sudoku's. {PRINT_CONFIG} prints the whole resolved config and exits."
        ),
        debug_option=True,
        resolve=lambda given: _resolved_fields(given, algo),
        choices={
            "env": envs.registered_names(),
            "estimator": list(ADVANTAGE_ESTIMATORS),
            "backend": [AUTO, *BACKENDS],
        },
        flags={
            PRINT_CONFIG: "Print the config this command line would run (presets filled in) as JSON and exit."
        },
    )


def main(argv: Sequence[str] | None = None, *, algo: str | None = None) -> int:
    """Command-line entry point; ``algo`` is the preset of ``--algo`` (the aliases set it; None:
    the env preset's, else at_grpo).

    Returns 0, or 130 when interrupted. A configuration mistake exits with status 2 and one
    line on stderr (``--debug`` or ``TEAMGYM_DEBUG=1``: its traceback instead).
    """
    return run_command(f"python -m trainers.{algo or 'at_grpo'}", argv, lambda args: _main(args, algo))


def _main(argv: list[str], algo: str | None) -> int:
    overrides = parse_train_args(argv, algo=algo)
    if overrides.get("resume"):
        config = load_run_config(overrides["resume"], overrides)
    else:
        config = TrainConfig(**{"algo": algo, **overrides})
    if PRINT_CONFIG in argv:
        resolved = resolve_config(config)
        print(json.dumps(config_to_dict(resolved), indent=2))
        if resolved.threads is None:
            print(f"# threads: automatic; now: {choose_threads().describe()}", file=sys.stderr)
        return 0
    try:
        summary = train(config)
    except KeyboardInterrupt:
        return 130  # train() printed how to resume
    except WorkerLost as err:
        print(f"python -m trainers.at_grpo: {err}", file=sys.stderr)
        return 1
    print(format_summary(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
