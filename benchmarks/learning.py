"""Does training help, and does the multi-agent team learn more than one agent alone?

    python -m benchmarks.learning                      # default model, plan_path easy, ~30 min on 2 cores
    python -m benchmarks.learning --model tiny-test --env tests.trainers.conftest:test/even_plan \
        --steps 2 --max-new-tokens 1 --response-prefix ''   # smoke run (seconds)

Runs ``trainers.at_grpo.train`` twice, one after the other, with the same model, seed,
held-out tasks, K, learning rate and number of steps:

* ``at_grpo``: the ``mas`` team (planner + executor, one LoRA adapter each), tree
  rollouts, AT-GRPO advantages;
* ``grpo``: the ``single`` team (one role does everything), plain rollouts, GRPO
  advantages. A single-role episode has half the turns of a planner + executor one, so
  this arm gets twice the tasks per step: both arms then sample about the same number of
  responses (the table prints the exact counts).

Then prints, per arm: held-out success / invalid-reply rate / mean team return before
and after training, the sampled responses and tokens, wall time, and the mean seconds per
step in each phase (generation, env, learner); then two ratios measured in the same run: the
arms' team-return gains and their seconds per training step. Run directories (metrics, plots,
transcripts) stay under ``--output-dir``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from benchmarks.env_throughput import print_table


def team_return(metrics: dict) -> float:
    """Mean episode return summed over the team's roles (comparable between team sizes)."""
    return float(sum(v for k, v in metrics.items() if k.startswith("return/")))


def run_arm(name: str, base, **changes) -> dict:
    from trainers.at_grpo import train
    from trainers.run_log import read_jsonl

    config = dataclasses.replace(base, run_name=name, **changes)
    started = time.perf_counter()
    summary = train(config)
    steps = read_jsonl(summary.run_dir / "metrics.jsonl")
    return {
        "arm": name,
        "team": config.team,
        "before": summary.before,
        "after": summary.after,
        "samples": sum(r["samples"] for r in steps),
        "tokens": sum(r["response_tokens"] * r["samples"] for r in steps),
        "wall_s": time.perf_counter() - started,
        "phases": {
            p: float(np.mean([r[p] for r in steps]))
            for p in ("time/generate", "time/env", "time/learner", "time/step")
        },
        "run_dir": summary.run_dir,
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="plan_path")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument(
        "--tasks-per-step", type=int, default=4, help="of the mas arm (the single arm: twice)"
    )
    parser.add_argument("-K", "--num-generations", type=int, default=4)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: the env preset's")
    parser.add_argument("--temperature", type=float, default=None, help="default: the env preset's")
    parser.add_argument("--eval-tasks", type=int, default=16)
    parser.add_argument("--eval-every", type=int, default=4, help="0: only before and after")
    parser.add_argument("--eval-temperature", type=float, default=0.0, help="0: greedy evaluation")
    parser.add_argument("--response-prefix", default="<answer>")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", default="runs/learning-benchmark")
    args = parser.parse_args(argv)

    from trainers.config import TrainConfig

    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = TrainConfig(
        env=args.env,
        model=args.model,
        steps=args.steps,
        num_generations=args.num_generations,
        lr=args.lr,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        eval_tasks=args.eval_tasks,
        eval_every=args.eval_every,
        eval_temperature=args.eval_temperature,
        response_prefix=args.response_prefix,
        seed=args.seed,
        output_dir=str(Path(args.output_dir) / stamp),
        progress=True,
        transcripts=2,
        keep_checkpoints=1,
    )
    arms = [
        run_arm("at_grpo-mas", base, algo="at_grpo", team="mas", tasks_per_step=args.tasks_per_step),
        run_arm("grpo-single", base, algo="grpo", team="single", tasks_per_step=2 * args.tasks_per_step),
    ]
    header = [
        "arm",
        "samples",
        "tokens",
        "success b->a",
        "invalid b->a",
        "return b->a",
        "wall min",
        "gen s/step",
        "env s/step",
        "learn s/step",
    ]
    rows = []
    for arm in arms:
        b, a = arm["before"], arm["after"]
        rows.append(
            [
                arm["arm"],
                str(int(arm["samples"])),
                f"{arm['tokens']:.0f}",
                f"{b['success']:.3f}->{a['success']:.3f}",
                f"{b['invalid_rate']:.3f}->{a['invalid_rate']:.3f}",
                f"{team_return(b):.3f}->{team_return(a):.3f}",
                f"{arm['wall_s'] / 60:.1f}",
                f"{arm['phases']['time/generate']:.1f}",
                f"{arm['phases']['time/env']:.2f}",
                f"{arm['phases']['time/learner']:.1f}",
            ]
        )
    print(
        f"\nLearning benchmark: {args.env}, {args.model}, {args.steps} steps, K={args.num_generations}, "
        f"lr={args.lr}, {args.eval_tasks} held-out test tasks (eval temperature {args.eval_temperature}), "
        f"seed {args.seed}"
    )
    print_table(header, rows)
    gains = [team_return(arm["after"]) - team_return(arm["before"]) for arm in arms]
    ratio = gains[0] / gains[1] if abs(gains[1]) > 1e-12 else float("nan")
    print(f"team-return gain: at_grpo-mas {gains[0]:+.3f}, grpo-single {gains[1]:+.3f}, ratio {ratio:.2f}")
    step_s = [arm["phases"]["time/step"] for arm in arms]
    print(
        f"seconds per training step: at_grpo-mas {step_s[0]:.1f}, grpo-single {step_s[1]:.1f}, "
        f"grpo-single / at_grpo-mas = {step_s[1] / max(step_s[0], 1e-9):.2f}x"
    )
    print(f"run dirs: {', '.join(str(arm['run_dir']) for arm in arms)}")
    return arms


if __name__ == "__main__":
    main()
