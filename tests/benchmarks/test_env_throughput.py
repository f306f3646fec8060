"""The throughput benchmark runs and prints its tables (figures themselves are not asserted)."""

from __future__ import annotations

import re

import pytest

from benchmarks import env_throughput
from envs.alfworld.pddl import pddl_available
from envs.games.spiel import spiel_available


@pytest.mark.slow
def test_quick_run_prints_every_env_and_preset(capsys):
    env_throughput.main(["--quick", "--no-gym-sokoban"])
    out = capsys.readouterr().out
    for env_id in env_throughput.BUILTIN:
        for preset in ("easy", "medium", "hard"):
            assert re.search(rf"{env_id}\s+{preset}\s+\d+", out), (env_id, preset)
    for env_id in env_throughput.GAMES:
        assert re.search(rf"{env_id}\s+\d+\s+\d+\.\d", out), env_id  # steps/s and clone us
    if spiel_available():  # ours next to the OpenSpiel engine, with the ratio
        for env_id, (game, _) in env_throughput.OPENSPIEL_TWINS.items():
            assert re.search(rf"{env_id}\s+{game}\s+\d+\s+\d+\s+\d+\.\d+", out), env_id
    else:
        assert "OpenSpiel comparison skipped: pip install 'teamgym[spiel]'" in out
    for what in ("reset", "step"):  # ALFWorld: our engine, and the real one when installed
        real = r"\d[\d.]*\s+[\d,]+x" if pddl_available() else r"n/a\s+n/a"
        assert re.search(rf"{what}\s+\d+\.\d+\s+{real}", out), what


@pytest.mark.slow
def test_gym_sokoban_side_by_side(tmp_path, monkeypatch, capsys):
    """Downloads gym-sokoban's sdist from PyPI (reachable in CI) and prints the ratio."""
    monkeypatch.setenv("TEAMGYM_CACHE", str(tmp_path))
    room_utils = env_throughput.load_room_utils(None)
    assert (tmp_path / "gym_sokoban_0.0.6_room_utils.py").exists()
    rows = env_throughput.compare_sokoban_generators(room_utils, levels=3)
    assert [row["preset"] for row in rows] == ["easy", "medium", "hard"]
    for row in rows:
        assert row["teamgym_s"] > 0 and row["gym_sokoban_s"] > 0
        # gym-sokoban rooms are solvable by construction: our converter + exact solver agree.
        assert row["gym_sokoban_solved"] == 3 - row["gym_sokoban_failures"]
        assert row["teamgym_opt_moves"] >= 6


def test_gym_sokoban_room_conversion():
    import numpy as np

    structure = np.array([[0, 0, 0, 0, 0], [0, 1, 1, 2, 0], [0, 0, 0, 0, 0]])
    state = np.array([[0, 0, 0, 0, 0], [0, 5, 4, 2, 0], [0, 0, 0, 0, 0]])
    assert env_throughput.gym_sokoban_room_to_rows(structure, state) == ["#####", "#@$.#", "#####"]
