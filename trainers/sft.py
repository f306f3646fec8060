"""``python -m trainers.sft --env plan_path``: a supervised warm start from the env's own solver.

Small models cannot act in the planning envs at first (SmolLM2-135M answers ~90% invalid
replies), so RL groups are all-invalid and carry no gradient. A short behaviour-cloning run
on oracle demonstrations fixes that; ``python -m trainers.at_grpo --init <this run>`` then
starts RL from its weights.

Demonstrations (chosen by ``trainers.sft_demos``, recorded by ``trainers.demonstrations``): the
env's oracle plays every role of each team in ``--teams`` on train-split tasks
0..train_tasks-1 (``--demos oracle``, the default), and/or
the successful training episodes that ``trainers.at_grpo`` runs saved are replayed
(``--demos runs/<run>``: rejection sampling with your own team). Either way they are recorded
through the rollout code with the trained team's own bindings: the exact prompt tokens a
rollout renders (chat template, response prefix) and the reply tokens through the stop string.
Loss (``trainers.supervised``): the NLL of the reply tokens only, per unit of the chosen layout
(one shared adapter, one adapter per role, or full weights).

Run directory (``<output_dir>/<run_name>``), as ``trainers.at_grpo`` writes it:

    config.json        the resolved config; --resume reads it, --init reads its model
    metrics.jsonl      per step: nll (reply tokens, before the step), tokens, grad norm, seconds;
                       val_nll on the validation tasks every val_every steps; the process's
                       peak memory as each phase last ended (memory/peak_mb/demonstrations,
                       validation, evaluation, update)
    eval.jsonl         success (with success_se), invalid rate, returns per role (other teams
                       of --teams under <team>/...) on eval_split tasks (the validation slice by
                       default), before training, every eval_every steps, at the end
    test.jsonl         each team's held-out test success on test_tasks of the protocol's block
                       (envs.HELDOUT_TEST_START on), before training and after the last step
    plots/, tensorboard/, transcripts/, checkpoints/step_<N>/ (the trained weights; atomic)

Validation uses the train split's validation slice (``envs.splits``), never test tasks. The
order of demonstrations is a function of (seed, step), so ``--resume`` repeats an
uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import envs
from agents.base import SamplingParams
from agents.team import Team
from trainers.backends import apply_thread_policy
from trainers.cli import config_to_dict, parse_overrides
from trainers.clock import TrainingClock, bar_total
from trainers.errors import ConfigError, run_command
from trainers.evaluation import evaluate, held_out_line, plays_test
from trainers.progress import RunProgress
from trainers.role_flags import check_role_names
from trainers.rollout import role_sampling_for
from trainers.run.checkpoint import load_checkpoint, save_checkpoint
from trainers.run.dirs import load_saved_config
from trainers.run.files import trained_seconds
from trainers.run.lifecycle import Run, run_files_lines
from trainers.runtime.peak_memory import PhasePeaks
from trainers.sft_config import (
    SFT_RESUMABLE_OVERRIDES,
    SFTConfig,
    resolve_sft_config,
    sft_config_from_flags,
)
from trainers.sft_demos import warm_start_demonstrations
from trainers.supervised import SupervisedLearner
from trainers.teams import build_team

__all__ = ["SFTSummary", "train_sft", "main", "batch_indices", "lr_factor", "team_variants"]

COMMAND = "trainers.sft"  # the module a resumed warm start is continued with
PROG = f"python -m {COMMAND}"


@dataclasses.dataclass(frozen=True)
class SFTSummary:
    """What a warm start did: its run directory, held-out evaluations before and after,
    validation NLL before and after, demonstrations used, wall time."""

    run_dir: Path
    steps: int
    before: dict[str, float]
    after: dict[str, float]
    val_nll: tuple[float, float]
    demonstrations: int
    wall_seconds: float
    test_before: dict[str, float] | None = None
    """Each team's held-out test evaluation before training (None: ``test_tasks=0`` or
    ``eval_split='test'``, where ``before`` is the test evaluation)."""
    test_after: dict[str, float] | None = None
    """The same after the last step."""
    eval_split: str = "validation"
    """Where ``before`` and ``after`` played."""


def team_variants(config: SFTConfig) -> dict[str, Team]:
    """One team per variant of ``config.teams``, all on the same trained weights: the first
    built by ``trainers.teams.build_team`` (the layout at_grpo builds), the others binding
    its shared policy to their roles."""
    first = config.teams[0]
    team = build_team(config, config.env_setup(first).make())
    teams = {first: team}
    shared = next(iter(team.bindings.values()))
    for variant in config.teams[1:]:
        env = config.env_setup(variant).make()
        teams[variant] = Team(env, {role: shared for role in env.roles})
    return teams


def batch_indices(n: int, batch_size: int, seed: int, step: int) -> list[int]:
    """The demonstrations of step ``step`` (1-based): consecutive slices of seeded per-epoch
    permutations of ``range(n)``, so the order is a pure function of (seed, step)."""
    start = (step - 1) * batch_size
    out: list[int] = []
    while len(out) < batch_size:
        epoch, offset = divmod(start + len(out), n)
        order = np.random.default_rng([seed, epoch]).permutation(n)
        out.extend(order[offset : offset + batch_size - len(out)].tolist())
    return out


def lr_factor(schedule: str, step: int, steps: int, warmup_steps: int = 0) -> float:
    """The multiple of the peak lr that optimiser step ``step`` (1-based) of ``steps`` uses.

    A pure function of the step, so a resumed run (same ``--steps``) repeats the schedule
    exactly with no scheduler state in the checkpoint. Warm-up is linear up to 1 at
    ``warmup_steps``; 'cosine' then decays as 0.5 * (1 + cos(pi * t)), t the share of the
    decay steps already taken, so the last step still moves (t < 1)."""
    if step <= warmup_steps:
        return step / warmup_steps
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        progress = (step - warmup_steps - 1) / (steps - warmup_steps)
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown lr schedule {schedule!r}; choose constant or cosine")


def _evaluate(
    config: SFTConfig,
    teams: dict[str, Team],
    run: Run,
    step: int,
    val_nll: float | None = None,
) -> dict[str, float]:
    """Greedy success of every team variant (the first unprefixed) on ``eval_tasks`` of
    ``eval_split`` (the validation slice by default), logged with the validation NLL of the
    same weights; with ``val_nll=None``, on ``test_tasks`` of the held-out protocol's test
    block instead, logged to test.jsonl."""
    test = val_nll is None
    sampling = SamplingParams(temperature=0.0, max_new_tokens=config.max_new_tokens, stop=config.stop)
    metrics: dict[str, float] = {} if test else {"val_nll": val_nll}
    shown = ()  # the first team's episodes: transcripts and report.html
    for i, (variant, team) in enumerate(teams.items()):
        result = evaluate(
            team,
            config.env,
            num_tasks=config.test_tasks if test else config.eval_tasks,
            sampling=sampling,
            env_kwargs=config.env_setup(variant).make_kwargs,
            split="test" if test else config.eval_split,
            role_sampling=role_sampling_for(sampling, {}, config.role_max_new_tokens),
        )
        prefix = "" if i == 0 else f"{variant}/"
        metrics.update({prefix + k: v for k, v in result.metrics.items()})
        if i == 0:
            shown = result.episodes
            if test:
                metrics["first_task_seed"] = result.episodes[0].task.seed
    if test:
        run.log_test(step, metrics)
    else:
        run.log_eval(step, metrics, shown, transcripts=config.transcripts)
    return metrics


def team_metrics(record: dict[str, float], variant: str, teams: Sequence[str]) -> dict[str, float]:
    """One team variant's metrics from an evaluation record of every team: the first team's
    keys are unprefixed, the others' carry ``<variant>/``."""
    if variant != teams[0]:
        return {k[len(variant) + 1 :]: v for k, v in record.items() if k.startswith(variant + "/")}
    return {k: v for k, v in record.items() if k.split("/")[0] not in teams[1:]}


def _resolved_fields(given: dict) -> dict:
    """Every field's value for a command line that sets ``given`` (presets filled in)."""
    config = resolve_sft_config(sft_config_from_flags(given))
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def load_sft_config(run_dir: str | Path, overrides: dict) -> SFTConfig:
    """The saved config of a warm-start run, with the overrides a resume may change."""
    return load_saved_config(SFTConfig, run_dir, overrides, SFT_RESUMABLE_OVERRIDES)


def train_sft(config: SFTConfig) -> SFTSummary:
    """Run (or, with ``config.resume``, continue) a warm start; see the module docstring."""
    started = time.perf_counter()
    config = resolve_sft_config(config)
    # a per-role value for a role no team has fails here, in seconds, before the model loads
    made = [config.env_setup(variant).make() for variant in config.teams]
    roles = [role for env in made for role in env.roles]
    check_role_names(config, tuple(dict.fromkeys(roles)), "/".join(config.teams))
    if "oracle" in config.demos and not callable(getattr(made[0], "oracle_response", None)):
        raise ConfigError(
            f"demos={list(config.demos)}: {type(made[0]).__name__} has no exact solver (oracle_response), "
            "so it cannot play demonstrations; pass --demos runs/<run> to replay the successful "
            "episodes of a training run instead"
        )
    progress = RunProgress(
        bar_total(config.steps), desc=f"sft {envs.spec(config.env).name}", enabled=config.progress
    )
    try:  # the display runs from here, so loading, demonstrations and evaluations show too
        return _run_sft(config, progress, started)
    finally:
        progress.close()


def _run_sft(config: SFTConfig, progress: RunProgress, started: float) -> SFTSummary:
    say = progress.write  # print() would tear the progress display apart
    progress.phase("choosing CPU threads")
    config = dataclasses.replace(config, threads=apply_thread_policy(config.threads, say))  # in config.json
    run = Run.open(COMMAND, config, stem=f"{envs.spec(config.env).name}-sft")
    try:
        return _sft_in_run(config, run, progress, started)
    finally:
        run.release()  # a failure before the run's with-block must not keep the directory locked


def _sft_in_run(config: SFTConfig, run: Run, progress: RunProgress, started: float) -> SFTSummary:
    """The warm start in its (locked) run directory: model, demonstrations, the step loop."""
    say = progress.write
    run_dir, checkpoint = run.dir, run.checkpoint
    progress.phase(f"loading {', '.join(config.models)}")
    teams = team_variants(config)
    learner = SupervisedLearner(
        teams[config.teams[0]],
        lr=config.lr,
        max_grad_norm=config.max_grad_norm,
        micro_batch_tokens=config.micro_batch_tokens,
    )
    saved = load_checkpoint(checkpoint, learner) if checkpoint else {"step": 0}
    start = saved["step"]
    progress.resume_at(start)
    progress.phase(f"recording demonstrations ({' '.join(config.demos)})")
    train, val = warm_start_demonstrations(config, teams)
    # Which phase raised the process's memory (every step's metrics carry the latest readings):
    # the demonstrations held in memory, the validation loss, an evaluation, the update.
    peaks = PhasePeaks()
    peaks.end("demonstrations")
    if not train:
        raise ConfigError(
            f"no demonstration from --demos {' '.join(config.demos)}: the oracle solved none of the "
            f"{config.train_tasks} training tasks (raise max_cycles), or the runs hold no replayable success"
        )
    say(
        f"demonstrations: {len(train)} train turns ({' '.join(config.demos)} x {list(config.teams)}), "
        f"{len(val)} validation turns"
    )
    run.begin(start, config, close_display=progress.close)
    say(run.opening_line())

    def evaluate_at(step: int, val_nll: float) -> dict[str, float]:
        progress.phase(f"step {step}: evaluating on {config.eval_tasks} {config.eval_split} tasks")
        return _evaluate(config, teams, run, step, val_nll)

    def test_at(step: int) -> None:
        if plays_test(config) and step not in run.tests:
            progress.phase(f"step {step}: evaluating on {config.test_tasks} held-out test tasks")
            _evaluate(config, teams, run, step)

    with run:
        evals, tests = dict(run.evals), run.tests  # evals: those made before this session
        if 0 in evals:
            before = evals[0]
        else:
            progress.phase("validation NLL (step 0)")
            val_nll = learner.nll(val)["all"]
            peaks.end("validation")
            before = evaluate_at(0, val_nll)
            peaks.end("evaluation")
        test_at(0)
        after = evals[max(evals)] if evals else before
        vals = [r["val_nll"] for r in run.step_records() if "val_nll" in r]
        val_before = before["val_nll"]
        val_after = vals[-1] if vals else val_before
        if saved.get("evaluation_due") and start not in evals:  # stopped during that evaluation
            after = evaluate_at(start, val_after)
            evals[start] = after
        eval_text = f"held-out (step {max(evals, default=0)}): success {after['success']:.2f}"
        progress.show(eval_text)
        clock = TrainingClock(config.train_minutes, seconds=trained_seconds(run_dir, start))
        final = start
        for step in range(start + 1, config.steps + 1):
            if clock.spent():  # a resumed run whose budget ran out at its checkpoint
                break
            progress.phase(f"step {step}: updating on {config.batch_size} demonstrations")
            step_start = time.perf_counter()
            batch = [train[i] for i in batch_indices(len(train), config.batch_size, config.seed, step)]
            lr = config.lr * lr_factor(config.lr_schedule, step, config.steps, config.warmup_steps)
            learner.set_lr(lr)
            per_unit = learner.step(batch)
            peaks.end("update")
            units = list(per_unit.values())
            tokens = sum(m["tokens"] for m in units)
            metrics = {
                "nll": sum(m["nll"] * m["tokens"] for m in units) / max(tokens, 1),
                "tokens": tokens,
                "grad_norm": float(np.mean([m["grad_norm"] for m in units])),
                "epoch": (step * config.batch_size) / len(train),
                "lr": lr,
                **{f"learner/{name}/{k}": v for name, m in per_unit.items() for k, v in m.items()},
            }
            metrics["time/step"] = time.perf_counter() - step_start  # the update alone
            clock.add(metrics["time/step"])
            last = step == config.steps or clock.spent()
            evaluating = last or bool(config.eval_every and step % config.eval_every == 0)
            if evaluating or step % config.val_every == 0:
                progress.phase(f"step {step}: validation NLL")
                metrics["val_nll"] = val_after = learner.nll(val)["all"]
                peaks.end("validation")
            run.logger.log_step(step, {**metrics, **peaks.metrics()})
            train_text = f"step {step}: nll {metrics['nll']:.3f}  val nll {val_after:.3f}" + clock.text()
            progress.show(f"{train_text} | {eval_text}")
            # The checkpoint comes before the evaluation: an evaluation of a tool team can run for
            # many minutes, and stopping it must not lose the trained weights. The resumed run
            # then plays the evaluation that was due (``evaluation_due``).
            if last or step % config.checkpoint_every == 0:
                progress.phase(f"step {step}: saving a checkpoint")
                save_checkpoint(
                    run_dir,
                    step,
                    learner,
                    {"trainer": "sft", "config": config_to_dict(config), "evaluation_due": evaluating},
                    keep=config.keep_checkpoints,
                )
            if evaluating:
                after = evaluate_at(step, val_after)
                eval_text = f"held-out (step {step}): success {after['success']:.2f}"
                progress.show(f"{train_text} | {eval_text}")
            progress.advance()
            final = step
            if last:
                break
        if run.needs_final_evaluation(final):  # a resume that asked for no new step
            val_after = learner.nll(val)["all"]
            after = evaluate_at(final, val_after)
        test_at(final)  # the final weights' test number
        progress.phase("done")
    return SFTSummary(
        run_dir,
        final,
        before,
        after,
        (val_before, val_after),
        len(train),
        time.perf_counter() - started,
        test_before=tests.get(0),
        test_after=tests.get(final),
        eval_split=config.eval_split,
    )


def format_sft_summary(summary: SFTSummary, config: SFTConfig) -> str:
    """The one-screen report printed at the end of a warm start."""
    lines = [
        "",
        f"Warm start finished: {summary.steps} steps on {summary.demonstrations} demonstrations "
        f"in {summary.wall_seconds / 60:.1f} min",
        f"  run dir     {summary.run_dir}",
        f"  validation NLL per reply token: {summary.val_nll[0]:.3f} -> {summary.val_nll[1]:.3f}",
        f"  {summary.eval_split + ' eval':<26}{'before':>10}{'after':>10}",
    ]
    for i, variant in enumerate(config.teams):
        prefix = "" if i == 0 else f"{variant}/"
        for key in ("success", "invalid_rate"):
            b, a = (
                summary.before.get(prefix + key, float("nan")),
                summary.after.get(prefix + key, float("nan")),
            )
            lines.append(f"  {variant + ' ' + key:<26}{b:>10.3f}{a:>10.3f}")
    held_out = (summary.test_before, summary.test_after)
    if summary.eval_split == "test":
        held_out = (summary.before, summary.after)
    if held_out[0] is not None and held_out[1] is not None:
        first_seed = held_out[1].get("first_task_seed")
        for variant in config.teams:
            before, after = (team_metrics(record, variant, config.teams) for record in held_out)
            lines.append(f"  {variant}: " + held_out_line(before, {**after, "first_task_seed": first_seed}))
    lines += [
        *run_files_lines(summary.run_dir, COMMAND),
        # the team the checkpoint rebuilds (the first of --teams): a tool warm start needs --team tool
        f"  next        python -m trainers.at_grpo --env {config.env} {config.model_flags} "
        f"--team {config.team} --init {summary.run_dir}",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: 0, or 130 when interrupted. A configuration mistake exits with
    status 2 and one line on stderr (``--debug`` or ``TEAMGYM_DEBUG=1``: its traceback
    instead), as ``trainers.at_grpo`` does."""
    return run_command(PROG, argv, _main)


def _main(argv: list[str]) -> int:
    overrides = parse_overrides(
        SFTConfig,
        argv,
        prog=PROG,
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Defaults shown are those of this command line: a field left unset takes the env's training\n"
        "preset (its TRAINING, envs.TrainingPreset, and that preset's warm_start values), so\n"
        "--env alfworld --help shows alfworld's.",
        resolve=_resolved_fields,
        choices={"env": envs.registered_names()},
        debug_option=True,
    )
    resume = overrides.get("resume")
    config = load_sft_config(resume, overrides) if resume else sft_config_from_flags(overrides)
    try:
        summary = train_sft(config)
    except KeyboardInterrupt:
        return 130  # train_sft printed how to resume
    print(format_sft_summary(summary, config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
