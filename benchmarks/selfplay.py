"""Does a pool of past selves beat plain self-play? The zero-sum games at equal wall time.

    python -m benchmarks.selfplay --envs tictactoe kuhn_poker --seeds 0 1 2 --minutes 15 \
        --results docs/results/selfplay-pool.json
    python -m benchmarks.selfplay --model tiny-test --envs tictactoe --seeds 0 --minutes 0.2 \
        --max-new-tokens 2 --eval-tasks 2 --run-name smoke   # smoke run

Arms, each trained from the same untrained model for the same ``--minutes`` of training time
(rollouts and updates; evaluations excluded) with every seed of ``--seeds``:

* ``selfplay``: the env preset's self-play (one shared policy in both seats, ``--algo spiral``:
  plain episodes, RAE's per-seat baselines);
* ``pool``: the same, but each step one seat plays a snapshot drawn from the last ``--pool``
  snapshots of the trained weights, one every ``--pool-every`` steps (``--opponent-pool``).

After training, each run plays ``--eval-tasks`` held-out test tasks (the protocol's block)
in both seats against the uniformly random player and against the untrained model
(``benchmarks.evaluate --ladder random base``); on Kuhn poker also the exact exploitability
of its greedy policy (0 is Nash). The untrained model is measured once per env the same way.
The table gives mean ± s.e. over seeds per arm, and pool minus self-play with the s.e. of the
difference.

Equal minutes are a fair budget only at equal machine speed: with ``--chunk-minutes C`` the
arms of a seed take turns, each training C minutes at a time (``benchmarks.turns``), and each
cell records its mean generated tokens/s.

Resumable: a finished (env, arm, seed) cell is kept in the results JSON and never run again;
a cell cut off mid-training continues from its run's last checkpoint (one cut off before its
first checkpoint starts again). A rerun must repeat the
protocol's settings (a different one is refused, naming the flag).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from agents.models import DEFAULT_MODEL
from benchmarks.learning_record import write_record
from benchmarks.turns import take_turns
from trainers.run.files import read_jsonl

__all__ = ["ARMS", "main"]

ARMS = ("selfplay", "pool")
METRICS = ("vs/random/win", "vs/base/win", "elo/model", "exploitability")
# Settings that define the measurement: a resumed file must repeat them.
PROTOCOL = ("model", "minutes", "pool", "pool_every", "tasks_per_step", "num_generations", "lr",
            "max_new_tokens", "eval_tasks", "chunk_minutes")  # fmt: skip


def _run_dir(args: argparse.Namespace, env: str, arm: str, seed: int) -> Path:
    return Path(args.output_dir) / f"{env}-{arm}-seed{seed}"


def _untrained_validation(args: argparse.Namespace, env: str, step0: dict[str, Any]) -> dict | None:
    """The untrained model's step-0 validation evaluation on ``env`` (``step0[env]``), or one a
    run of this protocol already logged: every run of the env starts from the same weights and
    plays the same greedy validation episodes (the pool only seats an opponent in training
    steps), so it is played once (256 tic-tac-toe tasks: ~9.5 minutes a run)."""
    if env not in step0:
        for logged in sorted(Path(args.output_dir).glob(f"{env}-*-seed*/eval.jsonl")):
            first = [row for row in read_jsonl(logged) if row.get("step") == 0]
            if first:
                step0[env] = {key: value for key, value in first[0].items() if key != "step"}
                break
    return step0.get(env)


def _train(
    args: argparse.Namespace,
    env: str,
    arm: str,
    seed: int,
    step0: dict[str, Any],
    pause_minutes: float = 0.0,
) -> tuple[Path, int]:
    """Train (or continue) one cell's run, to its budget or to ``pause_minutes``; its run dir
    and steps. ``step0``: env -> the untrained model's step-0 validation (filled by the first
    run that plays it)."""
    from trainers.at_grpo import load_run_config, train
    from trainers.clock import UNCAPPED_STEPS
    from trainers.config import TrainConfig
    from trainers.run.checkpoint import latest_checkpoint

    run_dir = _run_dir(args, env, arm, seed)
    if latest_checkpoint(run_dir) is not None:  # cut off earlier: its last checkpoint goes on
        config = load_run_config(run_dir, {"resume": str(run_dir), "progress": args.progress})
    else:
        if run_dir.exists():  # cut off before its first checkpoint: nothing to keep, it starts again
            shutil.rmtree(run_dir)
        config = TrainConfig(
            env=env, model=args.model, seed=seed, steps=UNCAPPED_STEPS, train_minutes=args.minutes,
            tasks_per_step=args.tasks_per_step, lr=args.lr,
            **({"num_generations": args.num_generations} if args.num_generations else {}),
            max_new_tokens=args.max_new_tokens, opponent_pool=args.pool if arm == "pool" else 0,
            pool_every=args.pool_every, eval_tasks=args.eval_tasks, eval_split="validation", test_tasks=0,
            eval_every=0, checkpoint_every=UNCAPPED_STEPS, keep_checkpoints=1,
            output_dir=str(run_dir.parent), run_name=run_dir.name, progress=args.progress,
        )  # fmt: skip
    summary = train(config, pause_minutes=pause_minutes, initial_eval=_untrained_validation(args, env, step0))
    step0.setdefault(env, {key: value for key, value in summary.before.items() if key != "step"})
    return summary.run_dir, summary.steps


def _evaluate(args: argparse.Namespace, env: str, model: str, name: str) -> dict[str, float]:
    """``model`` (a run dir or a base model) on ``--eval-tasks`` test tasks: the ladder against
    random and the untrained model, both seats, and the main row's game probes."""
    from benchmarks.eval_config import EvalConfig
    from benchmarks.evaluate import run_evaluation

    config = EvalConfig(
        env=(env,), model=model, ladder=("random", "base"), baselines=(), episodes=args.eval_tasks,
        seeds=(0,), max_new_tokens=args.max_new_tokens, output_dir=str(Path(args.output_dir) / "eval"),
        run_name=name, transcripts=0, plots=False, progress=args.progress,
    )  # fmt: skip
    results = run_evaluation(config)
    out: dict[str, float] = {}
    for row in results.rows:
        mean = results.cell(row, env).mean
        out.update({key: float(mean[key]) for key in METRICS if key in mean and key not in out})
    return out


def _mean_se(values: list[float]) -> tuple[float, float]:
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")
    return mean, se


def summarise(record: dict[str, Any]) -> dict[str, Any]:
    """Per env and arm, each metric's mean ± s.e. over seeds; pool minus self-play with the s.e.
    of the difference (independent seeds)."""
    out: dict[str, Any] = {}
    for env in sorted({c["env"] for c in record["cells"]}):
        by_arm: dict[str, Any] = {}
        for arm in ARMS:
            cells = [c for c in record["cells"] if c["env"] == env and c["arm"] == arm]
            if cells:
                by_arm[arm] = {key: _mean_se([c["after"][key] for c in cells]) for key in cells[0]["after"]}
                by_arm[arm]["seeds"] = len(cells)
                by_arm[arm]["steps"] = float(np.mean([c["steps"] for c in cells]))
        if len(by_arm) == 2:
            shared = set(by_arm["pool"]) & set(by_arm["selfplay"]) - {"seeds", "steps"}
            by_arm["pool - selfplay"] = {
                key: (by_arm["pool"][key][0] - by_arm["selfplay"][key][0],
                      math.hypot(by_arm["pool"][key][1], by_arm["selfplay"][key][1]))
                for key in shared
            }  # fmt: skip
        out[env] = {"untrained": record["untrained"].get(env, {}), **by_arm}
    return out


def _shown(value: Any, signed: bool) -> str:
    """A table cell: one evaluation's value, or (mean, s.e.) over seeds."""
    if value is None:
        return "-"
    if isinstance(value, float):  # the untrained row: one evaluation
        return f"{value:.3f}"
    return f"{value[0]:+.3f} ± {value[1]:.3f}" if signed else f"{value[0]:.3f} ± {value[1]:.3f}"


def print_table(summary: dict[str, Any], minutes: float) -> None:
    print(
        f"\nSelf-play against a pool vs plain self-play, {minutes:g} training minutes per run (mean ± s.e. "
        "over seeds; the model's win rate over both seats)"
    )
    print("| env | arm | runs | steps | win vs random | win vs untrained | Elo (random 0) | exploitability |")
    print("|---|---|---|---|---|---|---|---|")
    for env, arms in summary.items():
        for arm, row in arms.items():
            difference = arm == "pool - selfplay"
            shown = [_shown(row.get(key), difference) for key in METRICS]
            runs = row.get("seeds", "-" if difference else 1)
            steps = f"{row['steps']:.1f}" if "steps" in row else "-"
            print(f"| {env} | {arm} | {runs} | {steps} | " + " | ".join(shown) + " |")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.selfplay", description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", default=["tictactoe", "kuhn_poker"])
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument(
        "--minutes", type=float, default=15.0, help="training minutes per run (equal wall time)"
    )
    parser.add_argument(
        "--chunk-minutes",
        type=float,
        default=0.0,
        help="the arms of a seed take turns, each training this many minutes at a time (0: each in one go)",
    )
    parser.add_argument("--pool", type=int, default=4, help="snapshots the pool arm keeps (--opponent-pool)")
    parser.add_argument("--pool-every", type=int, default=2, help="steps between the pool's snapshots")
    parser.add_argument("--tasks-per-step", type=int, default=None, help="default: the env preset's")
    parser.add_argument("-K", "--num-generations", type=int, default=None, help="default: the env preset's")
    parser.add_argument("--lr", type=float, default=None, help="default: the env preset's")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: the env preset's")
    parser.add_argument(
        "--eval-tasks",
        type=int,
        default=256,
        help="held-out test tasks per evaluation (each played in both seats against each opponent)",
    )
    parser.add_argument("--output-dir", default="runs/selfplay")
    parser.add_argument("--run-name", default="pool-vs-selfplay", help="a rerun with the same name resumes")
    parser.add_argument(
        "--results", default=None, help="results JSON (default: <output dir>/<run name>.json)"
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error("--minutes must be > 0: the arms get equal training time")
    if args.chunk_minutes < 0:
        parser.error("--chunk-minutes must be >= 0 (0: each arm trains in one go)")
    args.output_dir = str(Path(args.output_dir) / args.run_name)
    results = Path(args.results) if args.results else Path(args.output_dir).with_suffix(".json")
    record = json.loads(results.read_text()) if results.is_file() else {"cells": [], "untrained": {}}
    for key in PROTOCOL:
        recorded = record.get("args", {}).get(key, getattr(args, key))
        if recorded != getattr(args, key):
            flag, given = "--" + key.replace("_", "-"), getattr(args, key)
            parser.error(
                f"{results} was measured with {flag} {recorded!r}, not {given!r}: pass the same value to "
                "finish it, or another --results"
            )
    record["args"] = {k: v for k, v in vars(args).items() if k not in ("progress",)}
    done = {(c["env"], c["arm"], c["seed"]) for c in record["cells"]}
    step0 = record.setdefault("untrained_validation", {})  # env -> step-0 validation of every run
    for env in args.envs:
        if env not in record["untrained"]:
            record["untrained"][env] = _evaluate(args, env, args.model, f"{env}-untrained")
            write_record(results, record)
        for seed in args.seeds:
            todo = [arm for arm in args.arms if (env, arm, seed) not in done]
            for arm in sorted(set(args.arms) - set(todo)):
                print(f"{env} {arm} seed {seed}: done (in {results}), skipped")
            if args.chunk_minutes:
                take_turns(
                    todo,
                    args.minutes,
                    args.chunk_minutes,
                    lambda arm, env=env, seed=seed: _run_dir(args, env, arm, seed),
                    lambda arm, mark, env=env, seed=seed: _train(
                        args, env, arm, seed, step0, pause_minutes=mark
                    ),
                    label=lambda arm, env=env, seed=seed: f"{env} {arm} seed {seed}",
                )
            for arm in todo:
                run_dir, steps = _train(args, env, arm, seed, step0)
                after = _evaluate(args, env, str(run_dir), f"{env}-{arm}-seed{seed}")
                logged = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
                trained = sum(r["time/step"] for r in logged)
                # the machine's speed as the cell trained: equal minutes are a fair budget at equal speed
                speed = float(np.mean([r["tokens_per_s"] for r in logged]))
                cell = {"env": env, "arm": arm, "seed": seed, "steps": steps, "train_minutes": trained / 60,
                        "tokens_per_s": speed, "chunk_minutes": args.chunk_minutes, "after": after,
                        "run_dir": str(run_dir)}  # fmt: skip
                record["cells"].append(cell)
                write_record(results, record)  # a finished cell is never run again
    record["summary"] = summarise(record)
    write_record(results, record)
    print_table(record["summary"], args.minutes)
    print(f"results: {results}")
    return record


if __name__ == "__main__":
    main()
