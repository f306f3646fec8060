"""Short runs of the training command on the tiny model, shared by its test modules
(test_at_grpo.py, test_at_grpo_resume.py, test_at_grpo_vllm.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agents.threads import THREADS_ENV
from tests.conftest import SUBPROCESS_TIMEOUT_S
from trainers.config import TrainConfig
from trainers.runtime.step import MACHINE_METRICS

__all__ = ["REPO", "TEST_ENV", "run_module", "tiny_args", "tiny_config", "without_timings"]

REPO = Path(__file__).resolve().parents[2]
TEST_ENV = "tests.trainers.conftest:test/even_plan"  # imports the module that registers it


def tiny_args(out: Path, *extra: str) -> list[str]:
    """A 2-step run on the tiny model and a one-character task where rewards vary."""
    return [
        "--env",
        TEST_ENV,
        "--model",
        "tiny-test",
        "--steps",
        "2",
        "--eval-every",
        "1",
        "--eval-tasks",
        "4",
        "--tasks-per-step",
        "4",
        "-K",
        "4",
        "--max-new-tokens",
        "1",
        "--response-prefix",
        "",
        "--lr",
        "1e-2",
        "--output-dir",
        str(out),
        "--run-name",
        "run",
        "--no-progress",
        *extra,
    ]


def run_module(
    module: str, args: list[str], cwd: Path, timeout: float = SUBPROCESS_TIMEOUT_S, auto_threads: bool = False
) -> subprocess.CompletedProcess:
    """``python -m module args`` in ``cwd``; ``auto_threads``: without the suite's pinned
    TEAMGYM_THREADS, so the command chooses its thread count itself, as for a user."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if auto_threads:
        env.pop(THREADS_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def without_timings(records: list[dict]) -> list[dict]:
    """The records without the machine's figures (time, memory): the rest must match on resume."""
    return [{k: v for k, v in r.items() if not k.startswith(MACHINE_METRICS)} for r in records]


def tiny_config(tmp_path: Path, **fields) -> TrainConfig:
    """A run of the tiny model on the one-character task, in-process, quiet; ``fields`` override."""
    defaults = dict(
        env=TEST_ENV,
        model="tiny-test",
        eval_every=0,
        eval_tasks=4,
        tasks_per_step=4,
        num_generations=4,
        max_new_tokens=1,
        response_prefix="",
        output_dir=str(tmp_path),
        run_name="run",
        progress=False,
        plots=False,
        tensorboard=False,
    )
    return TrainConfig(**{**defaults, **fields})
