"""RunLogger: the run directory (JSONL, TensorBoard, plots, transcripts) and resuming it."""

from __future__ import annotations

import json
import math
import sys
import warnings

import numpy as np
import pytest

from trainers.records import Episode, TaskKey, Turn
from trainers.run import log as run_log_module
from trainers.run import plots as plots_module
from trainers.run.files import flatten_metrics, read_jsonl
from trainers.run.log import RunLogger

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_turn(task: TaskKey, agent: str, step: int, prompt: str, response: str, reward: float) -> Turn:
    return Turn(
        task=task,
        episode=0,
        agent=agent,
        role=agent.rsplit("_", 1)[0],
        policy="tiny",
        turn=step // 2,
        step=step,
        prompt=prompt,
        response=response,
        prompt_token_ids=(1, 2),
        token_ids=(3,),
        logprobs=(-0.5,),
        reward=reward,
        reward_terms={"team/success": reward},
        invalid=reward < 0,
        state_key=("state", step),
    )


def make_episode(seed: int, response: str = "go north", success: bool = True) -> Episode:
    task = TaskKey("planning/grid-v0", "eval", seed)
    turns = (
        make_turn(task, "planner_0", 0, f"Plan task {seed}.", "plan: north", 0.5),
        make_turn(task, "executor_0", 1, f"Execute task {seed}.", response, -1.0),
    )
    return Episode(
        task=task,
        index=0,
        turns=turns,
        success=success,
        returns={"planner_0": 0.5, "executor_0": -1.0},
        truncated=False,
    )


def step_metrics(step: int) -> dict:
    return {
        "loss": np.float32(0.1 * step),
        "reward": {"planner": 0.1 * step, "executor": np.float64(0.2 * step)},
        "success": step / 10,
        "invalid_rate": 0.5 / step,
        "kl": float("nan") if step == 2 else 0.01,
        "tokens": np.int64(100 * step),
        "ok": np.bool_(step % 2 == 0),
        "note": "fine",
        "hist": {"adv": {"min": -1.0, "max": 1.0}},
        "samples": [1, 2, 3],
        "array": np.zeros(3),
    }


def eval_metrics(step: int) -> dict:
    return {"success": 0.25 * step, "return": {"planner": 0.5, "executor": float("inf")}}


def log_run(run_dir, **kwargs) -> None:
    with RunLogger(run_dir, **kwargs) as log:
        for step in range(1, 6):
            log.log_step(step, step_metrics(step))
            if step in (2, 4):
                log.log_eval(step, eval_metrics(step))
                log.write_transcripts(step, [make_episode(1), make_episode(2)])


def test_flatten_metrics_keeps_scalars_and_flattens_mappings():
    flat = flatten_metrics(
        {"a": {"b": {"c": np.float32(1.5)}}, "n": None, "s": "x", "l": [1], "t": (1,), "o": object()}
    )
    assert flat == {"a/b/c": 1.5, "n": None, "s": "x"}
    assert type(flat["a/b/c"]) is float


def test_jsonl_round_trip(tmp_path):
    log_run(tmp_path, tensorboard=False, plots=False)
    metrics = read_jsonl(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in metrics] == [1, 2, 3, 4, 5]
    first = metrics[0]
    assert first["loss"] == pytest.approx(0.1)
    assert first["reward/planner"] == pytest.approx(0.1)
    assert first["reward/executor"] == pytest.approx(0.2)
    assert first["hist/adv/min"] == -1.0 and first["hist/adv/max"] == 1.0
    assert first["tokens"] == 100 and type(first["tokens"]) is int
    assert first["ok"] is False and metrics[1]["ok"] is True
    assert first["note"] == "fine"
    assert "samples" not in first and "array" not in first and "hist" not in first
    assert metrics[1]["kl"] is None and metrics[0]["kl"] == 0.01
    # Valid strict JSON: no NaN/Infinity tokens anywhere.
    for line in (tmp_path / "metrics.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))

    evals = read_jsonl(tmp_path / "eval.jsonl")
    assert evals == [
        {"step": 2, "success": 0.5, "return/planner": 0.5, "return/executor": None},
        {"step": 4, "success": 1.0, "return/planner": 0.5, "return/executor": None},
    ]


def test_step_argument_wins_over_a_step_metric(tmp_path):
    with RunLogger(tmp_path, tensorboard=False, plots=False) as log:
        record = log.log_step(7, {"step": 99, "x": 1})
    assert record == {"step": 7, "x": 1}
    assert read_jsonl(tmp_path / "metrics.jsonl") == [record]


def test_transcripts(tmp_path):
    nasty = "```\n# not a heading\n```python\nboom\n" + "é漢🙂" * 4000 + "\x1b[31m\x00" + "END"
    assert len(nasty) > 10_000
    with RunLogger(tmp_path, tensorboard=False, plots=False) as log:
        path = log.write_transcripts(3, [make_episode(1, nasty), make_episode(2), make_episode(3)], limit=2)
    assert path == tmp_path / "transcripts" / "eval_step_000003.md"
    text = path.read_text(encoding="utf-8")
    assert "planning/grid-v0/eval/1" in text and "planning/grid-v0/eval/2" in text
    assert "planning/grid-v0/eval/3" not in text  # limit
    assert "Plan task 1." in text and "plan: north" in text and "go north" in text
    assert "success: yes" in text and "executor_0 = -1" in text and "invalid: yes" in text
    assert "```python" in text and "é漢🙂" in text and "END" in text  # head and tail kept
    assert "characters cut" in text
    assert len(text) < 15_000
    assert "\x1b" not in text and "\x00" not in text and "\\x1b" in text
    # The nasty response's ``` lines sit inside a longer fence: every fence line of the file
    # opens and closes in pairs of equal length, and no "# not a heading" leaks out as a heading.
    depth, opened = 0, ""
    headings = []
    for line in text.splitlines():
        if depth == 0 and line.startswith("```"):
            opened = line[: len(line) - len(line.lstrip("`"))]
            depth = 1
        elif depth == 1 and line == opened:
            depth = 0
        elif depth == 0 and line.startswith("#"):
            headings.append(line)
    assert depth == 0
    assert all("not a heading" not in h for h in headings)
    assert sum(h.startswith("## Episode") for h in headings) == 2


def test_plots(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.image

    log_run(tmp_path, tensorboard=False, plots=True)
    names = {"train_reward.png", "train_success.png", "eval.png"}
    assert {p.name for p in (tmp_path / "plots").glob("*.png")} == names
    for name in names:
        data = (tmp_path / "plots" / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000
    image = matplotlib.image.imread(tmp_path / "plots" / "train_reward.png")
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100 and image.shape[2] in (3, 4)

    written = plots_module.plot_run(tmp_path)
    assert sorted(p.name for p in written) == sorted(names)


def test_plots_skip_empty_data(tmp_path):
    pytest.importorskip("matplotlib")
    with RunLogger(tmp_path, tensorboard=False, plots=True) as log:
        log.log_step(1, {"loss": 1.0})
        assert log.plot() == []
        log.log_step(2, {"success": 1.0})
        assert [p.name for p in log.plot()] == ["train_success.png"]


def test_plots_off_writes_no_pngs(tmp_path):
    log_run(tmp_path, tensorboard=False, plots=False)
    assert not (tmp_path / "plots").exists()


def test_tensorboard_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_run(tmp_path, tensorboard=True, plots=False)
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    loss = events.Scalars("train/loss")
    assert [e.step for e in loss] == [1, 2, 3, 4, 5]
    assert [e.value for e in loss] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert [e.value for e in events.Scalars("train/reward/executor")] == pytest.approx(
        [0.2, 0.4, 0.6, 0.8, 1.0]
    )
    assert math.isnan(events.Scalars("train/kl")[1].value)  # NaN stays NaN in TensorBoard
    assert [e.value for e in events.Scalars("train/ok")] == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert [(e.step, e.value) for e in events.Scalars("eval/success")] == [(2, 0.5), (4, 1.0)]
    assert "train/note" not in events.Tags()["scalars"]


def test_resume_truncates_and_continues(tmp_path):
    log_run(tmp_path, tensorboard=False, plots=False)
    with (tmp_path / "metrics.jsonl").open("a") as f:
        f.write('{"step": 6, "loss": 0.')  # a killed run's half-written line
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 3, 4, 5]

    with RunLogger(tmp_path, resume_step=3, tensorboard=False, plots=False) as log:
        assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [1, 2, 3]
        assert [r["step"] for r in read_jsonl(tmp_path / "eval.jsonl")] == [2]
        assert [p.name for p in (tmp_path / "transcripts").iterdir()] == ["eval_step_000002.md"]
        assert not list(tmp_path.glob(".*.tmp"))
        log.log_step(4, {"loss": 4.0})
    records = read_jsonl(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    assert records[-1] == {"step": 4, "loss": 4.0}


def test_resume_drops_the_episodes_and_trees_of_the_steps_it_redoes(tmp_path):
    log_run(tmp_path, tensorboard=False, plots=False)
    for folder, kinds in (("episodes", ("train", "eval")), ("trees", ("train",))):
        (tmp_path / folder).mkdir(exist_ok=True)
        for kind in kinds:
            for step in (2, 3, 4):
                (tmp_path / folder / f"{kind}_step_{step:06d}.jsonl").write_text("{}\n")
    with RunLogger(tmp_path, resume_step=3, tensorboard=False, plots=False, report=False):
        pass
    assert sorted(p.name for p in (tmp_path / "episodes").iterdir()) == [
        f"{kind}_step_00000{step}.jsonl" for kind in ("eval", "train") for step in (2, 3)
    ]
    trees = sorted(p.name for p in (tmp_path / "trees").iterdir())
    assert trees == [f"train_step_00000{step}.jsonl" for step in (2, 3)]


def test_resume_purges_tensorboard_steps(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_run(tmp_path, tensorboard=True, plots=False)
    with RunLogger(tmp_path, resume_step=3, tensorboard=True, plots=False) as log:
        log.log_step(4, {"loss": 40.0})
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    loss = events.Scalars("train/loss")
    assert [e.step for e in loss] == [1, 2, 3, 4]
    assert [e.value for e in loss] == pytest.approx([0.1, 0.2, 0.3, 40.0])


def test_resume_purges_tensorboard_steps_after_the_clock_went_back(tmp_path):
    """Event files are read in name order, names start with the writer's second: an old file
    stamped in the future (a clock that moved backwards) must not outlive the purge."""
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_run(tmp_path, tensorboard=True, plots=False)
    (old,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    stamp = int(old.name.split(".")[3])
    old.rename(old.with_name(old.name.replace(str(stamp), str(stamp + 3600), 1)))
    with RunLogger(tmp_path, resume_step=3, tensorboard=True, plots=False) as log:
        log.log_step(4, {"loss": 40.0})
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("train/loss")] == [1, 2, 3, 4]


def test_corrupt_lines_are_dropped(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\nnot json\n{"step": 2}\n[1, 2]\n{"step": 3, "x": ')
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert [r["step"] for r in read_jsonl(path)] == [1, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RunLogger(tmp_path, resume_step=10, tensorboard=False, plots=False).close()
        assert path.read_text() == '{"step": 1}\n{"step": 2}\n'
    assert read_jsonl(tmp_path / "missing.jsonl") == []


def test_non_empty_run_dir_needs_resume(tmp_path):
    log_run(tmp_path, tensorboard=False, plots=False)
    before = (tmp_path / "metrics.jsonl").read_bytes()
    with pytest.raises(FileExistsError, match="not empty"):
        RunLogger(tmp_path, tensorboard=False, plots=False)
    assert (tmp_path / "metrics.jsonl").read_bytes() == before

    eval_only = tmp_path / "eval_only"
    with RunLogger(eval_only, tensorboard=False, plots=False) as log:
        log.log_eval(0, {"success": 0.0})
    with pytest.raises(FileExistsError, match="new output dir"):
        RunLogger(eval_only, tensorboard=False, plots=False)


def test_closed_logger_refuses_writes(tmp_path):
    log = RunLogger(tmp_path, tensorboard=False, plots=False)
    log.close()
    log.close()
    with pytest.raises(RuntimeError, match="closed"):
        log.log_step(1, {"x": 1})


def test_missing_tensorboard_warns_once(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    monkeypatch.setattr(run_log_module, "_warned_tensorboard", False)
    with pytest.warns(RuntimeWarning, match="pip install tensorboard"):
        first = RunLogger(tmp_path / "a", plots=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = RunLogger(tmp_path / "b", plots=False)
        for log in (first, second):
            log.log_step(1, {"x": 1.0})
            log.close()
    assert read_jsonl(tmp_path / "a" / "metrics.jsonl") == [{"step": 1, "x": 1.0}]
    assert not (tmp_path / "a" / "tensorboard").exists()


def test_missing_matplotlib_warns_once(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setattr(plots_module, "_warned_matplotlib", False)
    with RunLogger(tmp_path, tensorboard=False, plots=True) as log:
        log.log_step(1, {"reward": {"planner": 1.0}})
        with pytest.warns(RuntimeWarning, match="pip install matplotlib"):
            assert log.plot() == []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert log.plot() == []
    assert not (tmp_path / "plots").exists()
