"""``Run``: one lifecycle for every training command (open or resume, seed, config and
provenance, evaluations on disk, the interrupt line), and the two drifts it ended: only the
warm start re-evaluated a resume that asked for no new step, and only the RL trainer seeded
every generator."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from trainers.config import ConfigError, TrainConfig
from trainers.run.files import read_jsonl
from trainers.run.lifecycle import Run
from trainers.run.provenance import PROVENANCE_FILE
from trainers.seeding import seed_everything


def _config(tmp_path, **fields) -> TrainConfig:
    return TrainConfig(
        env="sokoban", output_dir=str(tmp_path), run_name="r", tensorboard=False, plots=False, **fields
    )


def _draws() -> tuple[float, float, float]:
    return random.random(), float(np.random.rand()), float(torch.rand(1))


def test_open_seeds_every_global_generator(tmp_path):
    seed_everything(7)
    expected = _draws()
    seed_everything(8)  # something else first
    Run.open("trainers.sft", _config(tmp_path, seed=7), stem="x")
    assert _draws() == expected


def test_a_new_run_writes_config_and_provenance_and_a_resume_keeps_earlier_evaluations(tmp_path):
    config = _config(tmp_path)
    run = Run.open("trainers.at_grpo", config, stem="x")
    assert run.checkpoint is None and not run.resumed
    with run.begin(0, config):
        assert run.opening_line() == f"run dir: {run.dir}"
        run.log_eval(0, {"success": 0.25})
        run.log_test(0, {"success": 0.5})
        for step in (1, 2, 3):
            run.logger.log_step(step, {"loss": float(step)})
        run.log_eval(3, {"success": 0.75})
    assert json.loads((run.dir / "config.json").read_text())["env"] == "sokoban"
    assert run.needs_final_evaluation(2) and not run.needs_final_evaluation(3)

    resumed = Run.open("trainers.at_grpo", _config(tmp_path, resume=str(run.dir)), stem="x")
    with resumed.begin(1, config):  # a checkpoint at step 1
        assert resumed.opening_line().endswith("(resuming after step 1)")
        assert sorted(resumed.evals) == [0] and sorted(resumed.tests) == [0]  # step 3's is redone
        assert resumed.needs_final_evaluation(1)
    assert [r["step"] for r in read_jsonl(run.dir / "metrics.jsonl")] == [1]
    sessions = json.loads((run.dir / PROVENANCE_FILE).read_text())["sessions"]
    assert [s["what"] for s in sessions] == ["started", "resumed"]


def test_a_new_run_refuses_a_directory_that_holds_a_run(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "metrics.jsonl").write_text("")
    with pytest.raises(ConfigError, match="--resume"):
        Run.open("trainers.sft", _config(tmp_path), stem="x")


def test_an_interrupt_closes_the_display_then_names_the_checkpoint_and_the_resume_command(tmp_path, capsys):
    config = _config(tmp_path)
    run = Run.open("trainers.sft", config, stem="x")
    closed = []
    with pytest.raises(KeyboardInterrupt):
        with run.begin(0, config, close_display=lambda: closed.append(True)):
            raise KeyboardInterrupt
    assert closed == [True]
    err = capsys.readouterr().err
    assert f"last complete checkpoint: none; continue with: python -m trainers.sft --resume {run.dir}" in err


def test_with_needs_begin_first(tmp_path):
    run = Run.open("trainers.sft", _config(tmp_path), stem="x")
    with pytest.raises(RuntimeError, match="begin"):
        with run:
            pass
