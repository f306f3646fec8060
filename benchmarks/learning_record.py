"""The learning benchmark's results file (``benchmarks.learning --results``): what makes two
commands the same protocol, resuming a file a later command finishes, writing it, and the
step-0 evaluations an arm cut off before its first checkpoint leaves behind.

A protocol longer than a session is finished by running its command again, often one cell
(``--arms ARM --seeds S``) at a time on another checkout; the file is what carries it over, so
a rerun whose settings differ from the recorded ones is refused, naming the flag."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import envs

__all__ = ["PROTOCOL_ARGS", "pinned_env_id", "resume_record", "step0_left_in", "write_record"]

# Settings that define the measurement: a resumed benchmark must repeat them exactly.
PROTOCOL_ARGS = (
    "env", "env_kwargs", "model", "init", "sft_steps", "sft_batch_size", "sft_lr", "sft_train_tasks",
    "steps", "tasks_per_step", "num_generations", "lr", "passes", "temperature", "max_new_tokens",
    "eval_tasks", "eval_every", "eval_split", "test_tasks", "response_prefix", "minutes",
    "eval_every_minutes", "general", "general_tasks", "warm_minutes", "micro_batch_tokens",
    "chunk_minutes",
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


# The settings a step-0 evaluation depends on that the benchmark always passes (config.json holds
# them as given); env_kwargs, which the env preset extends there, is compared item by item.
STEP0_FIELDS = ("env", "model", "init", "team", "eval_tasks", "eval_split", "test_tasks", "max_new_tokens",
                "response_prefix")  # fmt: skip


def step0_left_in(run_dir: Path, config: Any) -> dict[str, dict[str, Any]]:
    """The step-0 evaluations (``{"validation": row, "test": row}``, either may be missing) that
    an arm cut off before its first checkpoint left in ``run_dir``, when that run had the same
    settings: a 256-task held-out evaluation takes most of an hour on a 2-core CPU, and greedy
    play of the same warm start gives the same rows, so a rerun does not play it again."""
    from trainers.run.files import TEST_FILE, read_jsonl

    try:
        saved = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    if any(saved.get(name) != _json_value(getattr(config, name)) for name in STEP0_FIELDS):
        return {}
    given = _json_value(config.env_kwargs)
    if any(saved.get("env_kwargs", {}).get(key) != value for key, value in given.items()):
        return {}
    found = {}
    for key, name in (("validation", "eval.jsonl"), ("test", TEST_FILE)):
        path = run_dir / name
        rows = [row for row in read_jsonl(path) if row.get("step") == 0] if path.is_file() else []
        if rows:
            found[key] = rows[0]
    return found


def _json_value(value: Any) -> Any:
    """``value`` as config.json stores it (tuples are lists there)."""
    return json.loads(json.dumps(value))
