"""The learning benchmark's results file (``benchmarks.learning --results``): what makes two
commands the same protocol, resuming a file a later command finishes, and writing it.

A protocol longer than a session is finished by running its command again, often one cell
(``--arms ARM --seeds S``) at a time on another checkout; the file is what carries it over, so
a rerun whose settings differ from the recorded ones is refused, naming the flag."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import envs

__all__ = ["PROTOCOL_ARGS", "pinned_env_id", "resume_record", "write_record"]

# Settings that define the measurement: a resumed benchmark must repeat them exactly.
PROTOCOL_ARGS = (
    "env", "env_kwargs", "model", "init", "sft_steps", "sft_batch_size", "sft_lr", "sft_train_tasks",
    "steps", "tasks_per_step", "num_generations", "lr", "passes", "temperature", "max_new_tokens",
    "eval_tasks", "eval_every", "eval_split", "test_tasks", "response_prefix", "minutes",
    "eval_every_minutes", "general", "general_tasks", "warm_minutes", "micro_batch_tokens",
)  # fmt: skip


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Writes ``record`` as JSON, atomically: a run killed mid-write keeps the last whole file."""
    from trainers.run.files import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=2, default=str) + "\n")


def pinned_env_id(env: str) -> str:
    """``env`` with the version ``envs.make`` resolves it to ("plan_path" -> "plan_path-v2"),
    keeping a ``module:`` prefix (it imports the module that registers the env). The version is
    part of the protocol: a file measured on plan_path-v1 is not resumed on -v2."""
    module, colon, _ = env.rpartition(":")
    return f"{module}{colon}{envs.spec(env).id}"


def resume_record(path: Path, args: argparse.Namespace, arm_teams: dict[str, str]) -> dict[str, Any]:
    """The results so far (a fresh record when ``path`` does not exist); refuses a rerun whose
    protocol settings differ from the recorded ones, naming the flag. ``arm_teams`` (arm ->
    team) fills in the step-0 generalisation numbers of cells recorded before each cell kept
    its own."""
    if not path.is_file():
        return {"runs": [], "initial": {}}
    record = json.loads(path.read_text())
    recorded = record.get("args", {})
    for key in PROTOCOL_ARGS:
        if key in recorded and recorded[key] != getattr(args, key):
            flag = "--" + key.replace("_", "-")
            if key == "env" and envs.spec(recorded[key]).id != recorded[key]:
                raise SystemExit(
                    f"python -m benchmarks.learning: {path} was measured with --env {recorded[key]!r}, "
                    f"which resolves to another version now ({getattr(args, key)!r}) and named none: write "
                    "the version it was measured on into the file's args.env, or --results/--run-name for "
                    "a new one"
                )
            raise SystemExit(
                f"python -m benchmarks.learning: {path} was measured with {flag} {recorded[key]!r}, not "
                f"{getattr(args, key)!r}: pass the same value to finish it, or --results/--run-name "
                "for a new one"
            )
    record.setdefault("initial", {})
    for run in record["runs"]:  # cells recorded before "general_before": their team's first warm start
        team = arm_teams[run["arm"]]
        run.setdefault("general_before", record["initial"].get(team, {}).get("general", {}))
    return record
