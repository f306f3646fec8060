"""Does RL make a warm-started team better, and does AT-GRPO beat GRPO? Seeds, error bars.

    python -m benchmarks.learning                # default model, plan_path easy (hours on 2 cores)
    python -m benchmarks.learning --model tiny-test --env tests.trainers.conftest:test/one_token \\
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
2. held-out success on ``--eval-tasks`` test tasks (greedy) before training (once per team:
   every arm starts from the same weights), every ``--eval-every`` steps and at the end;
   mean +- standard error over seeds.

Hyperparameters (lr, K, passes, temperature, reply length) are chosen with
``--eval-split validation`` (the train split's validation slice, never trained on); the
test split is then evaluated once with the chosen values. Prints the table, the
differences between arms with their standard errors, wall time per arm and phase, and
writes ``learning.json`` and ``learning.png`` (curves with +- 1 s.e. bands) to the output
directory.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.tables import print_table

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
    summary = train_sft(
        SFTConfig(
            env=args.env,
            env_kwargs=json.loads(args.env_kwargs),
            teams=("mas", "single"),
            model=args.model,
            response_prefix=args.response_prefix,
            **given,
            eval_tasks=args.eval_tasks,
            eval_every=0,
            val_every=max(1, steps // 4),
            max_new_tokens=args.max_new_tokens,
            output_dir=str(out),
            run_name="warm_start",
            checkpoint_every=steps,
            keep_checkpoints=1,
        )
    )
    return summary.run_dir, (time.perf_counter() - started) / 60


def run_arm(name: str, seed: int, base: Any, initial_evals: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Train one arm with one seed; its evaluation curve, samples and phase times.

    ``initial_evals`` (team -> step-0 evaluation) is filled by the first run of each team
    and reused by the others: every arm starts from the same warm-start weights and the
    evaluation is greedy on the same tasks, so re-evaluating would repeat identical work.
    """
    from trainers.at_grpo import train
    from trainers.run_log import read_jsonl

    algo, team, multiplier = ARMS[name]
    config = dataclasses.replace(
        base,
        algo=algo,
        team=team,
        tasks_per_step=base.tasks_per_step * multiplier,
        seed=seed,
        run_name=f"{name}-seed{seed}",
    )
    started = time.perf_counter()
    summary = train(config, initial_eval=initial_evals.get(team))
    initial_evals.setdefault(team, summary.before)
    steps = read_jsonl(summary.run_dir / "metrics.jsonl")
    evals = read_jsonl(summary.run_dir / "eval.jsonl")
    return {
        "arm": name,
        "seed": seed,
        "curve": {int(r["step"]): float(r["success"]) for r in evals},
        "before": summary.before["success"],
        "after": summary.after["success"],
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
        steps = sorted(set.intersection(*(set(r["curve"]) for r in mine)))
        out[name] = {
            "seeds": [r["seed"] for r in mine],
            "before": mean_se([r["before"] for r in mine]),
            "after": mean_se([r["after"] for r in mine]),
            "gain": mean_se([r["after"] - r["before"] for r in mine]),
            "curve": {s: mean_se([r["curve"][s] for r in mine]) for s in steps},
            "samples": float(np.mean([r["samples"] for r in mine])),
            "train_min": float(np.mean([r["phases"]["time/step"] for r in mine])) / 60,
            "wall_min": float(np.mean([r["wall_s"] for r in mine])) / 60,
            "phases_min": {p: float(np.mean([r["phases"][p] for r in mine])) / 60 for p in mine[0]["phases"]},
        }
    return out


def plot(summary: dict[str, dict[str, Any]], path: Path, title: str) -> Path | None:
    """Held-out success vs training step per arm, mean +- 1 s.e. over seeds."""
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
    axes.set_ylabel("held-out success")
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
        "success before",
        "success after",
        "gain",
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
            f"{arm['train_min']:.1f}",
            f"{arm['phases_min']['time/generate']:.1f}",
            f"{arm['phases_min']['time/learner']:.1f}",
        ]
        for name, arm in summary.items()
    ]
    print(
        f"\nLearning benchmark: {args.env}, {args.model}, warm start {warm_min:.1f} min, "
        f"then {args.steps} RL steps x {args.tasks_per_step} tasks (single: x2), K={args.num_generations}, "
        f"lr={args.lr}, passes={args.passes}; {args.eval_split} success on {args.eval_tasks} tasks "
        f"(greedy), mean +- s.e. over seeds {args.seeds}"
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
    parser.add_argument("--eval-tasks", type=int, default=64)
    parser.add_argument("--eval-every", type=int, default=4, help="0: only before and after")
    parser.add_argument("--eval-split", choices=["test", "validation"], default="test")
    parser.add_argument("--response-prefix", default="<answer>")
    parser.add_argument("--output-dir", default="runs/learning-benchmark")
    args = parser.parse_args(argv)

    from trainers.config import TrainConfig

    out = Path(args.output_dir) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    init, warm_min = warm_start(args, out)
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
        response_prefix=args.response_prefix,
        output_dir=str(out),
        transcripts=2,
        keep_checkpoints=1,
        checkpoint_every=args.steps,
    )
    initial_evals: dict[str, dict[str, float]] = {}
    runs = [run_arm(name, seed, base, initial_evals) for seed in args.seeds for name in args.arms]
    summary = summarise(runs)
    print_report(summary, args, warm_min)
    record = {
        "args": vars(args),
        "warm_start": str(init),
        "warm_start_min": warm_min,
        "runs": runs,
        "summary": summary,
    }
    (out / "learning.json").write_text(json.dumps(record, indent=2, default=str))
    png = plot(summary, out / "learning.png", f"{args.env}: held-out success from one warm start")
    print(f"results: {out / 'learning.json'}" + (f", curves: {png}" if png else ""))
    return summary


if __name__ == "__main__":
    main()
