"""The arms of ``benchmarks.learning``: what each arm trains (``ARMS``), training one arm with
one seed from its team's warm start (``train_arm``, also one turn of ``--chunk-minutes``), and
the cell a finished arm records (``run_arm``): its curves, held-out test before and after, the
``--general`` difficulties, samples, phase times and the machine's speed."""

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
from benchmarks.learning_record import step0_left_in, write_record
from benchmarks.warm_starts import same_start

ARMS = {  # name -> (algo, team, tasks-per-step multiplier)
    "at_grpo-mas": ("at_grpo", "mas", 1),
    "grpo-mas": ("grpo", "mas", 1),
    "grpo-single": ("grpo", "single", 2),
    "at_grpo-tool": ("at_grpo", "tool", 1),
    "grpo-tool": ("grpo", "tool", 1),
    # GiGPO's ablation (ALFWorld, WebShop): anchor-state groups inside plain episodes against
    # GRPO's episode-level groups, same team, same rollouts
    "gigpo-single": ("gigpo", "single", 1),
    "grpo-single-1x": ("grpo", "single", 1),
    "gigpo-mas": ("gigpo", "mas", 1),
}
ARM_TEAMS = {name: team for name, (_, team, _) in ARMS.items()}


CHECK_FILE = "warm_start_check.json"  # in an arm's run dir: its warm start against the team's first


def train_arm(
    name: str,
    seed: int,
    base: Any,
    initial: dict[str, dict[str, Any]],
    init: str,
    start: dict[str, Any],
    pause_minutes: float = 0.0,
) -> Any:
    """Train one arm with one seed from its team's warm start ``init``, resuming its run if an
    earlier invocation (or an earlier turn, ``pause_minutes``) stopped it; its ``Summary``.

    ``start``: the step-0 evaluations of these warm-start weights ({"validation", "test",
    "general"}), or an empty dict the arm fills by playing them; when ``initial`` (the team's
    first warm start) came from other weights, the arm's run dir keeps how the two compare
    (``CHECK_FILE``).
    """
    from trainers.at_grpo import load_run_config, train
    from trainers.run.checkpoint import latest_checkpoint

    algo, team, multiplier = ARMS[name]
    config = dataclasses.replace(
        base,
        algo=algo,
        team=team,
        tasks_per_step=base.tasks_per_step * multiplier,
        init=init,
        seed=seed,
        run_name=f"{name}-seed{seed}",
    )
    run_dir = Path(base.output_dir) / config.run_name
    known = bool(start)
    if latest_checkpoint(run_dir) is not None:  # cut off earlier: continue from its last checkpoint
        _check_same_run(run_dir, config)
        config = load_run_config(run_dir, {"resume": str(run_dir), "progress": base.progress})
    elif run_dir.exists():  # cut off before its first checkpoint: only its step-0 evaluations are kept
        for key, row in step0_left_in(run_dir, config).items():
            start.setdefault(key, row)
        shutil.rmtree(run_dir)
    summary = train(
        config,
        initial_eval=start.get("validation"),
        initial_test=start.get("test"),
        pause_minutes=pause_minutes,
    )
    if not known:
        if team in initial:  # a warm start trained again: does it play as the first one did?
            write_record(run_dir / CHECK_FILE, same_start(initial[team], summary.before, summary.test_before))
        start.update(validation=summary.before, test=summary.test_before)
    initial.setdefault(team, {"validation": summary.before, "test": summary.test_before})
    return summary


def run_arm(
    name: str,
    seed: int,
    base: Any,
    initial: dict[str, dict[str, Any]],
    args: argparse.Namespace,
    init: str,
    weights: str,
    start: dict[str, Any],
) -> dict[str, Any]:
    """Train one arm with one seed to the end of its budget (``train_arm``; with
    ``--chunk-minutes`` its earlier turns already trained most of it), then its record: the
    validation curve (against steps and training minutes), held-out test success before and
    after, the ``--general`` difficulties after, samples and phase times. The generalisation
    "before" is these warm-start weights' (checksum ``weights``) own.
    """
    from trainers.run.files import TEST_FILE, read_jsonl
    from trainers.runtime.machine_load import MACHINE_PREFIX

    team = ARMS[name][1]
    started = time.perf_counter()
    summary = train_arm(name, seed, base, initial, init, start)
    check_file = summary.run_dir / CHECK_FILE
    check = json.loads(check_file.read_text()) if check_file.is_file() else None
    steps = read_jsonl(summary.run_dir / "metrics.jsonl")
    evals = read_jsonl(summary.run_dir / "eval.jsonl")
    tests = {int(r["step"]): r for r in read_jsonl(summary.run_dir / TEST_FILE)}
    before, after = tests[0], tests[max(tests)]
    if args.general and "general" not in start:  # the generalisation "before" of these weights
        start["general"] = evaluate_difficulties(args, team, Path(init), f"general-{team}-warm-{weights}")
        initial[team].setdefault("general", start["general"])
    # every update skipped (zero-variance groups): the final weights are the warm start's
    never_updated = after.get("same_weights_as_step") == 0
    if never_updated and args.general:
        general = start["general"]
    else:
        general = evaluate_difficulties(args, team, summary.run_dir, f"general-{name}-seed{seed}")
    minutes = np.cumsum([0.0] + [r["time/step"] / 60 for r in steps])  # training minutes after step i
    return {
        "arm": name,
        "seed": seed,
        "curve": {int(r["step"]): float(r["success"]) for r in evals},
        # [step, training minutes at that step, validation success] per evaluation
        "curve_minutes": [[int(r["step"]), float(minutes[r["step"]]), float(r["success"])] for r in evals],
        "steps": summary.steps,
        "general": general,
        "general_before": start.get("general", {}),
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
        # the machine's speed while this cell trained: equal wall time is only fair at equal speed
        "tokens_per_s": float(np.mean([r["tokens_per_s"] for r in steps])),
        "machine": {
            k: float(np.mean([r[k] for r in steps if k in r]))
            for k in dict.fromkeys(k for r in steps for k in r if k.startswith(MACHINE_PREFIX))
        },
        "run_dir": str(summary.run_dir),
        # 0: trained in one go; else in turns of this many minutes with the seed's other arms
        "chunk_minutes": args.chunk_minutes,
        **({"warm_start_check": check} if check is not None else {}),
        "weights_never_updated": never_updated,
    }


def evaluate_difficulties(
    args: argparse.Namespace, team: str, weights: Path, name: str
) -> dict[str, dict[str, float]]:
    """Held-out test success of ``team`` with ``weights`` (a run dir) on each ``--general``
    difficulty: difficulty -> {"success", "success_se", "tasks", "first_task_seed"}. Kept in
    ``<run dir>/<name>/general.json``: a rerun after an interruption reuses a finished
    evaluation and redoes one that was cut off."""
    if not args.general:
        return {}
    from benchmarks.eval_config import EvalConfig
    from benchmarks.evaluate import run_evaluation

    runs = Path(args.output_dir) / (args.run_name or envs.spec(args.env).name.replace("/", "_"))
    done = runs / name / "general.json"
    if done.is_file():
        return json.loads(done.read_text())
    if (runs / name).exists():  # cut off mid-evaluation: play it again
        shutil.rmtree(runs / name)
    config = EvalConfig(
        env=(args.env,),
        backend="hf",  # as the arms (main)
        difficulty=tuple(args.general),
        env_kwargs=json.loads(args.env_kwargs),
        team=team,
        model=str(weights),
        baselines=(),
        episodes=args.general_tasks,
        seeds=(0,),
        output_dir=str(runs),
        run_name=name,
        transcripts=0,
        plots=False,
        progress=args.progress,
    )
    results = run_evaluation(config)
    out = {}
    for difficulty in args.general:
        cell = results.cell(results.rows[0], args.env, difficulty)
        out[difficulty] = {
            "success": float(cell.mean["success"]),
            "success_se": float(cell.task_se),
            "tasks": len(cell.tasks[0]),
            "first_task_seed": int(cell.tasks[0][0]),
        }
    write_record(done, out)
    return out


def _check_same_run(run_dir: Path, config: Any) -> None:
    """Refuses to resume a run dir that an earlier benchmark with other settings left there (it
    would continue that run, not this one's)."""
    saved = json.loads((run_dir / "config.json").read_text())
    for field in ("init", "algo", "team", "train_minutes", "steps", "lr", "temperature", "seed"):
        if field in saved and saved[field] != getattr(config, field):
            raise SystemExit(
                f"python -m benchmarks.learning: {run_dir} holds a run with {field}={saved[field]!r}, not "
                f"{getattr(config, field)!r}: pass another --run-name (or remove that directory)"
            )
