"""The play demo: one episode per call, every turn printed, a summary dict returned."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.play import main
from tests.conftest import SUBPROCESS_TIMEOUT_S

REPO = Path(__file__).resolve().parents[2]


def test_scripted_team_solves_plan_path_and_prints_each_turn(capsys):
    summary = main(["--env", "plan_path", "--team", "scripted"])
    out = capsys.readouterr().out
    assert summary["success"] is True
    assert summary["env"] == "plan_path-v2" and summary["team"] == "scripted"
    assert set(summary["rewards"]) == {"planner_0", "executor_0"}
    assert summary["rewards"]["executor_0"] > 0
    assert out.count("=== turn ") == summary["turns"] >= 2
    for piece in (
        "turn 1: planner_0 (oracle)",
        "turn 2: executor_0",
        "prompt:",
        "    Legal moves now:",
        "response:",
        "<answer>",
        "terms: local/plan_progress",
        "feedback:",
        "success: True",
        "total reward: planner_0=",
        f"turns: {summary['turns']}",
    ):
        assert piece in out


@pytest.mark.parametrize("env_id", ["sokoban", "sudoku"])
def test_scripted_single_variant_and_random_team(env_id, capsys):
    assert main(["--env", env_id, "--team", "scripted", "--team-variant", "single", "--seed", "2"])["success"]
    assert "solver_0" in capsys.readouterr().out
    summary = main(["--env", env_id, "--team", "random", "--difficulty", "easy", "--max-cycles", "2"])
    assert summary["turns"] == 4 or summary["success"]


def test_model_team_plays_an_episode_with_tiny_model(capsys):
    summary = main(
        [
            "--env",
            "plan_path",
            "--team",
            "model",
            "--model",
            "tiny-test",
            "--max-new-tokens",
            "16",
            "--max-cycles",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert summary["turns"] >= 1 and isinstance(summary["success"], bool)
    assert "turn 1: planner_0 (tiny-test)" in out and "episode over" in out


def test_unknown_env_exits_2_with_a_helpful_message(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--env", "sokobn", "--team", "scripted"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "No env registered as 'sokobn'" in err and "Did you mean 'sokoban-v2'" in err


def test_bad_env_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--env", "sokoban", "--difficulty", "impossible"])
    assert exit_info.value.code == 2
    assert "difficulty='impossible'" in capsys.readouterr().err


def test_help_and_module_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "agents.play", "--env", "plan_path", "--team", "scripted"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr
    assert "success: True" in result.stdout
    helptext = subprocess.run(
        [sys.executable, "-m", "agents.play", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
    ).stdout
    for flag in (
        "--env",
        "--team",
        "--difficulty",
        "--seed",
        "--team-variant",
        "--model",
        "--max-new-tokens",
        "--temperature",
    ):
        assert flag in helptext
