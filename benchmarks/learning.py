"""Does RL make a warm-started team better, and does AT-GRPO beat GRPO? Seeds, error bars.

    python -m benchmarks.learning --init runs/warm-plan_path \
        --results docs/results/learning-plan_path.json   # default model, plan_path easy (hours on 2 cores)
    python -m benchmarks.learning --model tiny-test --env tests.trainers.conftest:test/one_token \
        --sft-steps 4 --steps 2 --seeds 0 1 --max-new-tokens 1 --response-prefix ''  # smoke run

The protocol of the paper's ablations, from ONE shared warm start:

0. warm start: ``trainers.sft`` on oracle demonstrations of both team variants, one shared
   LoRA adapter (or ``--init RUN`` to reuse one);
1. three arms, each started from the warm start (``trainers.at_grpo --init``) with every
   training seed of ``--seeds``:
   (a) ``at_grpo-mas``: planner + executor (one adapter each), AT-GRPO tree rollouts;
   (b) ``grpo-mas``: the same team, GRPO on plain episodes;
   (c) ``grpo-single``: one role does everything, GRPO on plain episodes. A single-role
       episode has half the turns, so this arm gets twice the tasks per step;
   the table prints the responses each arm sampled, so equal budgets are checked, not assumed;
2. the held-out protocol (README, Held-out protocol): the learning curves play
   ``--eval-tasks`` tasks of the train split's validation slice (greedy) before training,
   every ``--eval-every`` steps and at the end, and every choice (lr, K, passes,
   temperature, reply length, steps) is made there; the reported numbers play
   ``--test-tasks`` (256) held-out test tasks of the protocol's block, once before training
   (per team: every arm starts from the same weights) and once after the last step. Test
   success is reported as mean +- s.e. over training seeds, next to its standard error over
   the test tasks.

Resumable: every finished (arm, seed) goes into the results JSON (``--results``) at once,
and a rerun of the same command skips them (an interrupted run is resumed from its last
checkpoint), so a protocol longer than a session is finished by running the command again;
a rerun with different settings is refused, naming the flag. Prints the table, the
differences between arms with their standard errors, wall time per arm and phase, and writes
the JSON and ``learning.png`` (validation curves with +- 1 s.e. bands) beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

import envs
from benchmarks.tables import print_table

# Settings that define the measurement: a resumed benchmark must repeat them exactly.
PROTOCOL_ARGS = (
    "env", "env_kwargs", "model", "init", "sft_steps", "sft_batch_size", "sft_lr", "sft_train_tasks",
    "steps", "tasks_per_step", "num_generations", "lr", "passes", "temperature", "max_new_tokens",
    "eval_tasks", "eval_every", "eval_split", "test_tasks", "response_prefix",
)  # fmt: skip

ARMS = {  # name -> (algo, team, tasks-per-step multiplier)
    "at_grpo-mas": ("at_grpo", "mas", 1),
    "grpo-mas": ("grpo", "mas", 1),
    "grpo-single": ("grpo", "single", 2),
}


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    array = np.asarray(values, dtype=np.float64)
    se = float(array.std(ddof=1) / np.sqrt(len(array))) if len(array) > 1 else 0.0
    return float(array.mean()), se


def warm_start(args: argparse.Namespace, out: Path) -> tuple[Path, float]:
    """The shared warm start's run dir (trained here unless ``--init``) and its minutes."""
    if args.init:
        return Path(args.init), 0.0
    from trainers.sft import train_sft
    from trainers.sft_config import SFTConfig

    # Only the --sft-* values given on the command line override SFTConfig: its defaults are
    # the measured warm-start recipe, kept in one place.
    given = {
        field: value
        for field, value in (
            ("steps", args.sft_steps),
            ("batch_size", args.sft_batch_size),
            ("lr", args.sft_lr),
            ("train_tasks", args.sft_train_tasks),
        )
        if value is not None
    }
    steps = given.get("steps", SFTConfig.steps)
    started = time.perf_counter()
    config = SFTConfig(
        env=args.env,
        env_kwargs=json.loads(args.env_kwargs),
        teams=("mas", "single"),
        model=args.model,
        response_prefix=args.response_prefix,
        **given,
        eval_tasks=args.eval_tasks,
        eval_every=0,
        eval_split="validation",
        test_tasks=0,  # the arms evaluate the warm start on the test tasks (step 0)
        val_every=max(1, steps // 4),
        max_new_tokens=args.max_new_tokens,
        output_dir=str(out),
        run_name="warm_start",
        checkpoint_every=steps,
        keep_checkpoints=1,
    )
    if (out / "warm_start" / "config.json").is_file():  # a rerun: finish (or reuse) it
        config = dataclasses.replace(config, resume=str(out / "warm_start"))
    summary = train_sft(config)
    return summary.run_dir, (time.perf_counter() - started) / 60


def run_arm(
    name: str, seed: int, base: Any, initial: dict[str, dict[str, dict[str, float]]]
) -> dict[str, Any]:
    """Train one arm with one seed (resuming its run if an earlier invocation was cut off); its
    validation curve, held-out test success before and after, samples and phase times.

    ``initial`` (team -> {"validation": step-0 evaluation, "test": step-0 test evaluation}) is
    filled by the first run of each team and reused by the others: every arm starts from the
    same warm-start weights and the evaluations are greedy on the same tasks, so evaluating
    again would repeat identical work.
    """
    from trainers.at_grpo import load_run_config, train
    from trainers.checkpoint import latest_checkpoint
    from trainers.run_log import TEST_FILE, read_jsonl

    algo, team, multiplier = ARMS[name]
    config = dataclasses.replace(
        base,
        algo=algo,
        team=team,
        tasks_per_step=base.tasks_per_step * multiplier,
        seed=seed,
        run_name=f"{name}-seed{seed}",
    )
    run_dir = Path(base.output_dir) / config.run_name
    if latest_checkpoint(run_dir) is not None:  # cut off earlier: continue from its last checkpoint
        config = load_run_config(run_dir, {"resume": str(run_dir), "progress": base.progress})
    elif run_dir.exists():  # cut off before its first checkpoint: nothing to keep
        shutil.rmtree(run_dir)
    started = time.perf_counter()
    given = initial.get(team, {})
    summary = train(config, initial_eval=given.get("validation"), initial_test=given.get("test"))
    initial.setdefault(team, {"validation": summary.before, "test": summary.test_before})
    steps = read_jsonl(summary.run_dir / "metrics.jsonl")
    evals = read_jsonl(summary.run_dir / "eval.jsonl")
    tests = {int(r["step"]): r for r in read_jsonl(summary.run_dir / TEST_FILE)}
    before, after = tests[0], tests[max(tests)]
    return {
        "arm": name,
        "seed": seed,
        "curve": {int(r["step"]): float(r["success"]) for r in evals},
        "before": float(before["success"]),
        "after": float(after["success"]),
        "before_task_se": float(before["success_se"]),
        "after_task_se": float(after["success_se"]),
        "test_tasks": int(after["tasks"]),
        "first_test_seed": int(after["first_task_seed"]),
        "samples": int(sum(r["samples"] for r in steps)),
        "wall_s": time.perf_counter() - started,
        "phases": {
            p: float(np.sum([r.get(p, 0.0) for r in steps]))
            for p in ("time/generate", "time/env", "time/learner", "time/step")
        },
        "run_dir": str(summary.run_dir),
    }


def summarise(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm: success before / after / gain as (mean, s.e.) over seeds, mean curve, samples."""
    out: dict[str, dict[str, Any]] = {}
    for name in ARMS:
        mine = [r for r in runs if r["arm"] == name]
        if not mine:
            continue
        # a run read back from the results JSON has its curve's steps as strings
        curves = [{int(step): success for step, success in r["curve"].items()} for r in mine]
        steps = sorted(set.intersection(*(set(curve) for curve in curves)))
        out[name] = {
            "seeds": [r["seed"] for r in mine],
            "before": mean_se([r["before"] for r in mine]),
            "after": mean_se([r["after"] for r in mine]),
            "gain": mean_se([r["after"] - r["before"] for r in mine]),
            # every seed plays the same test tasks: the task-level s.e. of the mean is about
            # one seed's, so the seeds' mean of it is reported
            "after_task_se": float(np.mean([r["after_task_se"] for r in mine])),
            "test_tasks": mine[0]["test_tasks"],
            "curve": {s: mean_se([curve[s] for curve in curves]) for s in steps},
            "samples": float(np.mean([r["samples"] for r in mine])),
            "train_min": float(np.mean([r["phases"]["time/step"] for r in mine])) / 60,
            "wall_min": float(np.mean([r["wall_s"] for r in mine])) / 60,
            "phases_min": {p: float(np.mean([r["phases"][p] for r in mine])) / 60 for p in mine[0]["phases"]},
        }
    return out


def plot(summary: dict[str, dict[str, Any]], path: Path, title: str) -> Path | None:
    """Validation success vs training step per arm, mean +- 1 s.e. over seeds."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(6.4, 4.2))
    axes = figure.subplots()
    for name, arm in summary.items():
        steps = sorted(arm["curve"])
        mean = np.array([arm["curve"][s][0] for s in steps])
        se = np.array([arm["curve"][s][1] for s in steps])
        axes.plot(steps, mean, marker="o", label=f"{name} ({len(arm['seeds'])} seeds)")
        axes.fill_between(steps, mean - se, mean + se, alpha=0.2)
    axes.set_xlabel("training step (0: the warm start)")
    axes.set_ylabel("validation success (greedy)")
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return path


def print_report(summary: dict[str, dict[str, Any]], args: argparse.Namespace, warm_min: float) -> None:
    fmt = lambda ms: f"{ms[0]:.3f} +- {ms[1]:.3f}"  # noqa: E731
    header = [
        "arm",
        "seeds",
        "samples/run",
        "test success before",
        "test success after",
        "gain",
        "task s.e.",
        "train min",
        "gen",
        "learn",
    ]
    rows = [
        [
            name,
            str(len(arm["seeds"])),
            f"{arm['samples']:.0f}",
            fmt(arm["before"]),
            fmt(arm["after"]),
            fmt(arm["gain"]),
            f"{arm['after_task_se']:.3f}",
            f"{arm['train_min']:.1f}",
            f"{arm['phases_min']['time/generate']:.1f}",
            f"{arm['phases_min']['time/learner']:.1f}",
        ]
        for name, arm in summary.items()
    ]
    print(
        f"\nLearning benchmark: {args.env}, {args.model}, warm start {warm_min:.1f} min, "
        f"then {args.steps} RL steps x {args.tasks_per_step} tasks (single: x2), K={args.num_generations}, "
        f"lr={args.lr}, passes={args.passes}; held-out test success on {args.test_tasks} tasks from test "
        f"index {envs.HELDOUT_TEST_START} (greedy), mean +- s.e. over seeds {args.seeds}; task s.e.: the "
        f"standard error over those test tasks; curves: {args.eval_split} success on {args.eval_tasks} tasks"
    )
    print_table(header, rows)
    if "at_grpo-mas" in summary:
        a = summary["at_grpo-mas"]["after"]
        for other in ("grpo-mas", "grpo-single"):
            if other in summary:
                b = summary[other]["after"]
                diff, se = a[0] - b[0], float(np.hypot(a[1], b[1]))
                ratio = diff / se if se > 0 else float("nan")
                print(f"at_grpo-mas - {other}: {diff:+.3f} +- {se:.3f} (s.e.; {ratio:+.1f} s.e.)")
    print(
        "train min: the arm's training steps (rollout + update), evaluations excluded; gen / learn: its parts"
    )


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="plan_path")
    parser.add_argument(
        "--env-kwargs", default="{}", help="JSON, merged over the env preset (trainers/config.py)"
    )
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--init", default=None, help="a warm-start run dir to reuse (skips step 0)")
    # None: trainers.sft's defaults (SFTConfig), the measured warm-start recipe.
    parser.add_argument("--sft-steps", type=int, default=None, help="default: SFTConfig.steps")
    parser.add_argument("--sft-batch-size", type=int, default=None, help="default: SFTConfig.batch_size")
    parser.add_argument("--sft-lr", type=float, default=None, help="default: SFTConfig's (by --lora)")
    parser.add_argument("--sft-train-tasks", type=int, default=None, help="default: SFTConfig.train_tasks")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument(
        "--tasks-per-step", type=int, default=4, help="of the mas arms (the single arm: twice)"
    )
    parser.add_argument("-K", "--num-generations", type=int, default=4)
    # lr and temperature: the better of (5e-4, 1.0) and (1e-4, 0.7) on the validation slice
    # from the default warm start, AT-GRPO arm, seed 0, 12 steps (README, Results).
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--eval-tasks", type=int, default=64, help="validation tasks of the curves")
    parser.add_argument("--eval-every", type=int, default=6, help="0: only before and after")
    parser.add_argument(
        "--eval-split",
        choices=["validation"],
        default="validation",
        help="the curves play the validation slice; the test tasks give the numbers",
    )
    parser.add_argument(
        "--test-tasks",
        type=int,
        default=envs.splits.HEADLINE_TEST_TASKS,
        help="held-out test tasks (the protocol's block) before and after each run",
    )
    parser.add_argument("--response-prefix", default="<answer>")
    parser.add_argument("--output-dir", default="runs/learning-benchmark")
    parser.add_argument("--run-name", default=None, help="default: the env's name; a rerun resumes it")
    parser.add_argument("--results", default=None, help="results JSON (default: <run dir>/learning.json)")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    args = parser.parse_args(argv)
    if args.test_tasks < 1:
        parser.error("--test-tasks must be >= 1: the benchmark's numbers are the held-out test success")

    from trainers.config import TrainConfig

    out = Path(args.output_dir) / (args.run_name or envs.spec(args.env).name.replace("/", "_"))
    out.mkdir(parents=True, exist_ok=True)
    results = Path(args.results) if args.results else out / "learning.json"
    record = _resume_record(results, args)
    init, warm_min = warm_start(args, out)
    record.update({"args": vars(args), "warm_start": str(init)})
    record.setdefault("warm_start_min", warm_min)
    base = TrainConfig(
        env=args.env,
        env_kwargs=json.loads(args.env_kwargs),
        model=args.model,
        init=str(init),
        steps=args.steps,
        tasks_per_step=args.tasks_per_step,
        num_generations=args.num_generations,
        lr=args.lr,
        passes=args.passes,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        eval_tasks=args.eval_tasks,
        eval_every=args.eval_every,
        eval_split=args.eval_split,
        test_tasks=args.test_tasks,
        response_prefix=args.response_prefix,
        output_dir=str(out),
        transcripts=2,
        keep_checkpoints=1,
        checkpoint_every=max(1, args.steps // 2),  # an interrupted arm loses at most half its steps
        progress=args.progress,
    )
    done = {(r["arm"], r["seed"]) for r in record["runs"]}
    for seed in args.seeds:
        for name in args.arms:
            if (name, seed) in done:
                print(f"{name} seed {seed}: done (in {results}), skipped")
                continue
            record["runs"].append(run_arm(name, seed, base, record["initial"]))
            _write_json(results, record)  # a finished cell is never run again
    runs = [r for r in record["runs"] if r["arm"] in args.arms and r["seed"] in args.seeds]
    summary = summarise(runs)
    print_report(summary, args, record["warm_start_min"])
    record["summary"] = summary
    _write_json(results, record)
    png = plot(summary, results.with_suffix(".png"), f"{args.env}: validation success from one warm start")
    print(f"results: {results}" + (f", curves: {png}" if png else ""))
    return summary


def _write_json(path: Path, record: dict[str, Any]) -> None:
    from trainers.run_log import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=2, default=str) + "\n")


def _resume_record(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The results so far (a fresh record when ``path`` does not exist); refuses a rerun whose
    protocol settings differ from the recorded ones, naming the flag."""
    if not path.is_file():
        return {"runs": [], "initial": {}}
    record = json.loads(path.read_text())
    recorded = record.get("args", {})
    for key in PROTOCOL_ARGS:
        if key in recorded and recorded[key] != getattr(args, key):
            flag = "--" + key.replace("_", "-")
            raise SystemExit(
                f"python -m benchmarks.learning: {path} was measured with {flag} {recorded[key]!r}, not "
                f"{getattr(args, key)!r}: pass the same value to finish it, or --results/--run-name "
                "for a new one"
            )
    record.setdefault("initial", {})
    return record


if __name__ == "__main__":
    main()
