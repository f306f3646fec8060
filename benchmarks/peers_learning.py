"""Which library gets a team better in the time you have? teamgym, TRL's ``GRPOTrainer`` and
CoMLRL's ``MAGRPOTrainer`` from one warm start, for the same wall time, with held-out success
at fixed marks.

    bash benchmarks/peer_runs/install.sh     # once: the peers' own virtualenv, .peers-venv
    python -m trainers.sft --env plan_path-v1 --teams single mas --steps 160 --run-name warm-peers \\
        --env-kwargs '{"difficulty": "easy", "max_cycles": 1}'   # the warm start of every library
        # (160 steps: validation success 0.30 single / 0.33 team, against 0.08 / 0.06 at 80)
    python -m benchmarks.peers_learning --init runs/warm-peers --minutes 15 --mark-minutes 5 \\
        --seeds 0 1 2 --results docs/results/peers-learning.json

The task and every matched setting are ``benchmarks.peers``'s (one cycle of easy Plan-Path,
the prompts token for token, K, reply length, temperature, LoRA shape, lr, AdamW, no KL; its
docstring lists what cannot be matched). What changes is the budget: each library trains
until its summed step time (generation + update; never loading, saving or evaluating)
reaches ``--minutes``, keeping its adapters at every ``--mark-minutes``; the parent then
plays ``--eval-tasks`` held-out test tasks (the protocol's block, greedy, one function for
every library) with the warm start (minute 0) and with each mark's adapters. The arms:

* task ``single`` (one reply writes the route): ``teamgym`` (GRPO), ``teamgym-at_grpo``
  (AT-GRPO's grouping on the same single agent) and ``trl``;
* task ``team`` (planner, then executor): ``teamgym`` (AT-GRPO) and ``comlrl``.

Each (task, arm, seed) is a cell: the seed picks the training tasks and the samplers'
seeds, and the order the arms of a seed run in turns with it (so a machine that slows down
over an hour does not always slow the same library). A finished cell goes into the results
JSON at once and a rerun of the same command skips it; a cell cut off in training runs again
from its start (the peers cannot resume), one cut off in evaluation keeps the marks it
evaluated (``<cell dir>/marks.json``). Prints per task the table (arm x seed: steps, success
at each mark) and the mean +- s.e. over seeds, and writes a PNG of the curves beside the
JSON. A peer that cannot run (no virtualenv) says why and is left for a later run.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import peers
from benchmarks.learning_record import write_record
from benchmarks.tables import print_table

__all__ = ["ARMS", "main"]


@dataclass(frozen=True)
class Arm:
    """One library's side of a task, as ``benchmarks.peers`` runs it; ``algo`` overrides
    teamgym's algorithm for the task (None: the task's)."""

    task: str
    name: str
    side: peers.Side
    algo: str | None = None


def _side(task: str, library: str) -> peers.Side:
    return next(s for s in peers.SIDES if s.task == task and s.library == library)


ARMS = (
    Arm("single", "teamgym", _side("single", "teamgym")),
    Arm("single", "teamgym-at_grpo", _side("single", "teamgym"), algo="at_grpo"),
    Arm("single", "trl", _side("single", "trl")),
    Arm("team", "teamgym", _side("team", "teamgym")),
    Arm("team", "comlrl", _side("team", "comlrl")),
)
# The training tasks a spec lists: more steps than any library took in a 15-minute budget here
# (teamgym's single agent, the fastest, ~75); a cell the cap ended says so.
STEP_CAP = 1000
WARM_START_COMMAND = (
    "python -m trainers.sft --env plan_path-v1 --teams single mas --steps 160 --run-name warm-peers "
    '--env-kwargs \'{"difficulty": "easy", "max_cycles": 1}\''
)
# Settings that define the measurement: a rerun that finishes a results file must repeat them.
PROTOCOL = (
    "env", "model", "init", "minutes", "mark_minutes", "tasks_per_step", "num_generations",
    "max_new_tokens", "temperature", "lr", "eval_tasks", "threads",
)  # fmt: skip


# ---------------------------------------------------------------------------- one cell
def cell_spec(args: argparse.Namespace, arm: Arm, seed: int) -> dict[str, Any]:
    """``benchmarks.peers``'s spec of the arm's task for this seed, with the wall-time budget."""
    spec = peers.make_spec(replace_namespace(args, seed=seed, steps=STEP_CAP), arm.task)
    spec.update(minutes=args.minutes, mark_minutes=args.mark_minutes)
    if arm.algo:
        spec["teamgym"] = {**spec["teamgym"], "algo": arm.algo}
    return spec


def replace_namespace(args: argparse.Namespace, **changes: Any) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), **changes})


def held_out(team: Any, spec: dict[str, Any], eval_tasks: int) -> dict[str, float]:
    """Greedy held-out test success of ``team`` with its task-level standard error."""
    metrics = peers.evaluate_team(team, spec, eval_tasks)
    return {"success": metrics["success"], "success_se": metrics["success_se"], "tasks": metrics["tasks"]}


def run_cell(args: argparse.Namespace, arm: Arm, seed: int, out: Path) -> dict[str, Any] | None:
    """Train one cell (or reuse its finished training) and evaluate every mark it kept; its
    record, or None when the library could not run (said why)."""
    spec = cell_spec(args, arm, seed)
    trained = out / "trained.json"  # the side's result with its process's wall time and peak RSS
    same_spec = (out / "spec.json").is_file() and json.loads((out / "spec.json").read_text()) == spec
    if trained.is_file() and same_spec:
        result = json.loads(trained.read_text())  # trained earlier: only evaluation was left
    else:
        if out.exists():  # cut off in training (or another protocol's): from the start
            shutil.rmtree(out)
        result = peers.run_side(arm.side, spec, out, args.peers_python)
        if "error" in result:
            print(f"[{arm.task}] {arm.name} seed {seed}: {result['error']}")
            return None
        write_record(trained, result)
    if len(result["steps"]) >= STEP_CAP:
        print(f"[{arm.task}] {arm.name} seed {seed}: the step cap ({STEP_CAP}), not the budget, ended it")
    marks_file = out / "marks.json"
    evaluated = json.loads(marks_file.read_text()) if marks_file.is_file() else {}
    for mark in result["marks"]:
        key = str(mark["step"])
        if key not in evaluated:
            print(
                f"[{arm.task}] {arm.name} seed {seed}: evaluating step {mark['step']} "
                f"(the {mark['minutes']:g}-minute mark)"
            )
            weights = {"run_dir": mark["adapters"], "adapters": mark["adapters"]}
            team = peers.trained_team(arm.side, spec, weights)
            evaluated[key] = held_out(team, spec, args.eval_tasks)
            write_record(marks_file, evaluated)
    steps = result["steps"]
    generate_s = sum(s["generate_s"] for s in steps)
    return {
        "task": arm.task,
        "arm": arm.name,
        "seed": seed,
        "library_version": result["version"],
        "steps": len(steps),
        "trained_s": sum(s["step_s"] for s in steps),
        "s_per_step": sum(s["step_s"] for s in steps) / len(steps),
        "samples_per_step": sum(s["samples"] for s in steps) / len(steps),
        # the machine's speed while this cell trained: equal minutes are fair only at equal speed
        "tokens_per_s": sum(s["generated_tokens"] for s in steps) / max(generate_s, 1e-9),
        "peak_rss_gb": result["peak_rss_gb"],
        "wall_s": result["wall_s"],
        "marks": [{**mark, **evaluated[str(mark["step"])]} for mark in result["marks"]],
    }


# ---------------------------------------------------------------------------- the report
def curve(cell: dict[str, Any], before: dict[str, float], marks: list[float]) -> list[float]:
    """The cell's held-out success at minute 0 (the warm start) and at each mark."""
    at = {m["minutes"]: m["success"] for m in cell["marks"]}
    return [before["success"]] + [at.get(mark, float("nan")) for mark in marks]


def summarise(record: dict[str, Any], marks: list[float]) -> dict[str, dict[str, Any]]:
    """Per task and arm: the seeds, and success at each mark (mean and s.e. over seeds)."""
    summary: dict[str, dict[str, Any]] = {}
    for cell in record["cells"]:
        arm = summary.setdefault(cell["task"], {}).setdefault(cell["arm"], {"seeds": [], "curves": []})
        arm["seeds"].append(cell["seed"])
        arm["curves"].append(curve(cell, record["before"][cell["task"]], marks))
    for arms in summary.values():
        for arm in arms.values():
            curves = np.array(arm.pop("curves"))
            arm["mean"] = curves.mean(axis=0).tolist()
            arm["se"] = (
                curves.std(axis=0, ddof=1) / np.sqrt(len(curves)) if len(curves) > 1 else 0 * curves[0]
            ).tolist()
    return summary


def print_report(record: dict[str, Any], summary: dict[str, dict[str, Any]], marks: list[float]) -> None:
    columns = ["0"] + [f"{m:g}" for m in marks]
    for task, arms in summary.items():
        before = record["before"][task]
        print(
            f"\n== {task}: held-out success on {before['tasks']:.0f} test tasks at each training minute "
            f"(warm start {before['success']:.3f} +- {before['success_se']:.3f} task s.e.)"
        )
        rows = []
        for cell in sorted(
            (c for c in record["cells"] if c["task"] == task), key=lambda c: (c["arm"], c["seed"])
        ):
            line = curve(cell, before, marks)
            rows.append(
                [cell["arm"], str(cell["seed"]), str(cell["steps"]), f"{cell['s_per_step']:.1f}",
                 f"{cell['tokens_per_s']:.1f}", f"{cell['peak_rss_gb']:.2f}", *(f"{v:.3f}" for v in line)]
            )  # fmt: skip
        for name, arm in arms.items():
            cells = [f"{m:.3f} +- {s:.3f}" for m, s in zip(arm["mean"], arm["se"], strict=True)]
            rows.append([name, f"mean of {len(arm['seeds'])}", "", "", "", "", *cells])
        print_table(["arm", "seed", "steps", "s / step", "gen tok/s", "peak RSS GB", *columns], rows)


def plot(summary: dict[str, dict[str, Any]], marks: list[float], path: Path) -> Path | None:
    """Held-out success against training minutes, one panel per task, +- 1 s.e. over seeds."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    minutes = [0.0, *marks]
    figure, axes = plt.subplots(1, len(summary), figsize=(5 * len(summary), 3.6), squeeze=False)
    for axis, (task, arms) in zip(axes[0], summary.items(), strict=True):
        for name, arm in arms.items():
            mean, se = np.array(arm["mean"]), np.array(arm["se"])
            axis.plot(minutes, mean, marker="o", label=f"{name} ({len(arm['seeds'])} seeds)")
            axis.fill_between(minutes, mean - se, mean + se, alpha=0.2)
        axis.set(title=f"task {task}", xlabel="training minutes", ylabel="held-out success")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


# ---------------------------------------------------------------------------- the protocol
def resume(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The results so far; refuses a rerun whose protocol settings differ, naming the flag."""
    settings = {key: str(getattr(args, key)) if key == "init" else getattr(args, key) for key in PROTOCOL}
    if not path.is_file():
        return {"args": settings, "before": {}, "cells": []}
    record = json.loads(path.read_text())
    for key, value in settings.items():
        if record["args"].get(key) != value:
            raise SystemExit(
                f"python -m benchmarks.peers_learning: {path} was measured with --{key.replace('_', '-')} "
                f"{record['args'].get(key)!r}, not {value!r}: pass the same value to finish it, or "
                "--results for a new one"
            )
    return record


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--init", type=Path, required=True, help="the warm start (a trainers.sft run) of every library"
    )
    parser.add_argument("--tasks", nargs="+", choices=["single", "team"], default=["single", "team"])
    parser.add_argument(
        "--arms",
        nargs="+",
        default=sorted({a.name for a in ARMS}),
        help="of " + ", ".join(sorted({a.name for a in ARMS})),
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--minutes", type=float, default=15.0, help="training minutes per cell (step time)")
    parser.add_argument(
        "--mark-minutes", type=float, default=5.0, help="keep the weights every N training minutes"
    )
    parser.add_argument("--eval-tasks", type=int, default=64, help="held-out test tasks per mark, greedy")
    parser.add_argument("--env", default="plan_path-v1")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--tasks-per-step", type=int, default=4)
    parser.add_argument("--num-generations", type=int, default=4, help="K: replies per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--lr", type=float, default=1e-4, help="LoRA learning rate (teamgym's after a warm start)"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every library's process")
    parser.add_argument("--peers-python", type=Path, default=peers.DEFAULT_PEERS_PYTHON)
    parser.add_argument("--out", type=Path, default=Path("runs") / "peers-learning")
    parser.add_argument(
        "--results", type=Path, default=None, help="results JSON (default: <out>/peers-learning.json)"
    )
    args = parser.parse_args(argv)
    unknown = set(args.arms) - {a.name for a in ARMS}
    if unknown:
        parser.error(
            f"--arms: no arm {', '.join(sorted(unknown))}; the arms are "
            + ", ".join(sorted({a.name for a in ARMS}))
        )
    if args.minutes <= 0 or args.mark_minutes <= 0:
        parser.error("--minutes and --mark-minutes must be > 0")
    if args.eval_tasks < 1:
        parser.error("--eval-tasks must be >= 1: the curves are held-out test success")
    from trainers.clock import minute_marks
    from trainers.run.checkpoint import find_checkpoint

    try:
        find_checkpoint(args.init)
    except (FileNotFoundError, ValueError) as error:
        parser.error(f"--init {args.init}: {error} (train the warm start first: {WARM_START_COMMAND})")
    results = args.results or args.out / "peers-learning.json"
    record = resume(results, args)
    marks = minute_marks(args.minutes, args.mark_minutes)
    done = {(c["task"], c["arm"], c["seed"]) for c in record["cells"]}
    for seed in args.seeds:
        for task in args.tasks:
            arms = [a for a in ARMS if a.task == task and a.name in args.arms]
            turn = seed % max(len(arms), 1)  # who goes first turns with the seed
            for arm in arms[turn:] + arms[:turn]:
                if (task, arm.name, seed) in done:
                    print(f"[{task}] {arm.name} seed {seed}: done (in {results}), skipped")
                    continue
                if task not in record["before"]:  # the warm start, minute 0 of every curve
                    spec = cell_spec(args, arm, seed)
                    print(f"[{task}] the warm start: evaluating on {args.eval_tasks} held-out test tasks")
                    record["before"][task] = held_out(
                        peers.trained_team(arm.side, spec, None), spec, args.eval_tasks
                    )
                    write_record(results, record)
                cell = run_cell(args, arm, seed, args.out / task / arm.name / f"seed{seed}")
                if cell is not None:
                    record["cells"].append(cell)
                    write_record(results, record)  # a finished cell is never run again
    summary = summarise(record, marks)
    print_report(record, summary, marks)
    record["summary"] = summary
    write_record(results, record)
    png = plot(summary, marks, results.with_suffix(".png")) if summary else None
    print(f"results: {results}" + (f", curves: {png}" if png else ""))
    return summary


if __name__ == "__main__":
    main()
