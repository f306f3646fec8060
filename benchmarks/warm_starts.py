"""The warm starts of ``benchmarks.learning``: one ``trainers.sft`` run per team the arms use,
trained once and shared by that team's arms, and the bookkeeping that lets a results file
outlive its run dirs.

A results file records each warm start's steps and minutes. On a new checkout (the file
committed, ``runs/`` gone) a warm start is trained again for exactly the recorded steps; its
weights need not be bit for bit the first ones, so the step-0 evaluations are kept per weights
checksum and the first arm on new weights records how they compare (``same_start``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainers.clock import UNCAPPED_STEPS
from trainers.run.files import trained_seconds


def init_minutes(args: argparse.Namespace) -> float:
    """The training minutes of the ``--init`` weights every arm starts from (from their run's own
    metrics): a run dir's up to its newest checkpoint, one checkpoint's up to its step (a warm
    start cut short, ``--init <run>/checkpoints/step_<N>``)."""
    from trainers.run.checkpoint import find_checkpoint
    from trainers.run.checkpoint_files import STATE

    run_dir, checkpoint = find_checkpoint(args.init)
    step = json.loads((checkpoint / STATE).read_text()).get("step", UNCAPPED_STEPS)
    return trained_seconds(run_dir, step) / 60


def prepare_warm_start(
    args: argparse.Namespace, out: Path, team: str, record: dict[str, Any], save: Callable[[], None]
) -> tuple[str, str]:
    """``team``'s warm start for its arms: ``--init`` as given, else trained (or resumed, or
    reused) under ``out``. Records its run dir, minutes and steps in ``record`` and returns the
    run dir and the checksum of its weights (what the step-0 evaluations are kept under).

    ``save`` writes ``record``: called before a warm start is trained again, so a rerun cut off
    during that training still knows the team's first warm start is gone."""
    step0 = record.setdefault("step0_by_weights", {})
    if args.init:
        run, minutes, steps = args.init, init_minutes(args), None
        first = True
    else:
        steps = record["warm_start_steps"].get(team)
        trained_again = record.setdefault("trained_again", [])  # teams, once and for all
        if steps is not None and not (out / f"warm_start-{team}" / "config.json").is_file():
            if team not in trained_again:
                trained_again.append(team)
            save()
        run, minutes, steps = warm_start(args, out, team, steps)
        first = team not in trained_again
        if not first:  # the budget it stands for is the recorded one
            minutes = record["warm_start_min"].get(team, minutes)
    checksum = weights_checksum(Path(run))
    if args.init:
        # These weights' own minutes, beside their step-0 evaluations (``--init`` made again on a
        # new checkout may give other weights, and a loaded machine only slows its updates).
        record.setdefault("warm_start_min_by_weights", {}).setdefault(checksum, minutes)
        if team in record["warm_start_min"]:
            # The same --init recipe made again: the budget the file's cells stand for, and its
            # report prints, stays the one it recorded first.
            minutes = record["warm_start_min"][team]
    legacy = record.get("runs") and not any("warm_start_weights" in r for r in record["runs"])
    if first and legacy and team in record["initial"]:
        # A file from before the checksums kept nothing to compare with: its cells are taken to
        # have started from these weights. A file with checksums never lends its step-0
        # evaluations to other weights: their first arm plays them (run_arm).
        step0.setdefault(checksum, {k: record["initial"][team][k] for k in ("validation", "test")})
    record["warm_start"][team] = run
    record["warm_start_min"][team] = minutes
    record["warm_start_steps"][team] = steps
    return run, checksum


def warm_start(
    args: argparse.Namespace, out: Path, team: str, recorded_steps: int | None
) -> tuple[str, float, int]:
    """One team's warm start (resumed or reused when an earlier run made it): its run dir, its
    training minutes (the updates' summed time, what ``--warm-minutes`` budgets) and its steps.

    ``recorded_steps``: the steps the results file says this warm start took. When the file
    outlived the run dir (a new checkout or machine), the warm start is trained again for
    exactly those steps, without a clock (seeded demonstrations, the same recipe). Its weights
    need not be bit for bit the first ones (a thread count or library version changes the float
    sums, and a greedy episode can then take another turn): the step-0 evaluations are kept
    per weights checksum (``weights_checksum``), so other weights are evaluated again and
    compared with the recorded ones (``run_arm``)."""
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
            ("micro_batch_tokens", args.micro_batch_tokens),
        )
        if value is not None
    }
    name = f"warm_start-{team}"
    minutes = args.warm_minutes
    made = out / name / "config.json"
    if made.is_file() and json.loads(made.read_text())["train_minutes"]:  # made here: finish or reuse it
        recorded_steps = None
    if recorded_steps is not None:  # (or finish such a second training, cut off)
        if not made.is_file():
            print(
                f"warm start {team}: {made.parent} missing: trained again ({recorded_steps} steps, recorded)"
            )
        given["steps"], minutes = recorded_steps, 0.0
    elif args.warm_minutes:  # the minutes end it; --sft-steps, where given, is a cap
        given.setdefault("steps", UNCAPPED_STEPS)
    steps = given.get("steps", SFTConfig.steps)
    every = 25 if args.warm_minutes else max(1, steps // 4)
    config = SFTConfig(
        env=args.env,
        env_kwargs=json.loads(args.env_kwargs),
        teams=(team,),
        model=args.model,
        response_prefix=args.response_prefix,
        **given,
        train_minutes=minutes,
        eval_tasks=4,  # a sanity check: the arms evaluate the warm start (step 0) on --eval-tasks
        eval_every=0,
        eval_split="validation",
        test_tasks=0,  # and on the test tasks
        val_every=every,
        max_new_tokens=args.max_new_tokens,
        output_dir=str(out),
        run_name=name,
        checkpoint_every=min(every, steps),
        keep_checkpoints=1,
        progress=args.progress,
    )
    if (out / name / "config.json").is_file():
        config = dataclasses.replace(config, resume=str(out / name))
    summary = train_sft(config)
    return str(summary.run_dir), trained_seconds(summary.run_dir, summary.steps) / 60, summary.steps


def weights_checksum(run: Path) -> str:
    """A short checksum of a run's newest trained weights (its run dir's last checkpoint):
    what the step-0 evaluations of its arms are kept under."""
    from trainers.run.checkpoint import latest_checkpoint
    from trainers.run.checkpoint_files import WEIGHTS, weights_file_checksum

    weights = (latest_checkpoint(run) or run) / WEIGHTS
    return weights_file_checksum(weights) if weights.is_file() else str(run)


# What a greedy evaluation of the same weights on the same tasks repeats exactly.
SAME_START_KEYS = ("success", "response_tokens", "samples", "invalid_rate")


def same_start(recorded: dict[str, Any], validation: dict[str, Any], test: dict[str, Any]) -> dict[str, Any]:
    """Does a warm start trained again play its step-0 evaluations exactly as the recorded one
    did? Prints the answer; the record keeps both sides."""
    sides = {
        "validation": (recorded.get("validation", {}), validation),
        "test": (recorded.get("test", {}), test),
    }
    same = all(
        was.get(key) == now.get(key) for was, now in sides.values() for key in SAME_START_KEYS if key in was
    )
    pairs = ", ".join(
        f"{split} success {now.get('success')} (recorded {was.get('success')})"
        for split, (was, now) in sides.items()
    )
    verdict = "the same" if same else "not the same: its arms report their own step-0 numbers"
    print(f"warm start trained again: {pairs}: {verdict}")
    return {
        "same": same,
        **{
            split: {key: [was.get(key), now.get(key)] for key in SAME_START_KEYS}
            for split, (was, now) in sides.items()
        },
    }
