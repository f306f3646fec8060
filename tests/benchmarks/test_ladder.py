"""``benchmarks.ladder``: both-seat pairings, win/draw/loss against each opponent, Elo."""

from __future__ import annotations

import math

import pytest

import envs
from agents.base import SamplingParams
from agents.scripted import HeuristicPolicy, OraclePolicy, RandomPolicy
from agents.team import RoleBinding
from benchmarks.evaluate import main
from benchmarks.ladder import bradley_terry_elo, ladder_metrics
from envs.games.tictactoe import game
from trainers.evaluation import evaluate_tasks, test_tasks


def test_elo_of_known_scores():
    # 75 points of 100 (+ one virtual draw): 400 log10(75.5 / 25.5).
    ratings = bradley_terry_elo({("a", "random"): (75.0, 100)})
    assert ratings["random"] == 0.0
    assert ratings["a"] == pytest.approx(400 * math.log10(75.5 / 25.5), abs=0.5)
    # A player that never loses still gets a finite rating, above one that does.
    ratings = bradley_terry_elo({("perfect", "random"): (40.0, 40), ("good", "random"): (30.0, 40)})
    assert math.isfinite(ratings["perfect"]) and ratings["perfect"] > ratings["good"] > 0


def _play(env_id: str, n: int):
    def play(team):
        return evaluate_tasks(team, test_tasks(env_id, n), sampling=SamplingParams(seed=0)).episodes

    return play


def test_the_minimax_oracle_never_loses_on_the_tictactoe_ladder():
    env = envs.make("tictactoe", split="test")
    opponents = {"random": RoleBinding(RandomPolicy(seed=0)), "heuristic": RoleBinding(HeuristicPolicy())}
    metrics = ladder_metrics(_play("tictactoe-v0", 12), env, RoleBinding(OraclePolicy()), opponents)
    # An opening of two random plies can already be lost for one seat; minimax loses nothing else.
    lost_seats = 0
    for task in test_tasks("tictactoe-v0", 12):
        env.reset(seed=task.seed)
        lost_seats += game.value(env.board, "X") != 0  # lost for O if +1, for X if -1
    for opponent in opponents:
        assert metrics[f"vs/{opponent}/loss"] <= lost_seats / 24
        rates = [metrics[f"vs/{opponent}/{r}"] for r in ("win", "draw", "loss")]
        assert sum(rates) == pytest.approx(1.0)
    assert metrics["vs/random/win"] > 0.5
    assert metrics["elo/model"] > metrics["elo/heuristic"] > metrics["elo/random"] == 0.0


def test_a_ladder_needs_two_seats():
    env = envs.make("everyone_contributes", split="test")
    with pytest.raises(ValueError, match="two-seat"):
        ladder_metrics(_play("everyone_contributes-v0", 1), env, RoleBinding(OraclePolicy()), {})


def test_evaluate_prints_the_ladder_and_elo_tables(tmp_path):
    args = "--env tictactoe everyone_contributes --model tiny-test --baselines --ladder random oracle"
    args += " --episodes 2 --seeds 0 1 --max-new-tokens 2 --no-progress --run-name lad"
    results = main([*args.split(), "--output-dir", str(tmp_path)])
    markdown = (results.out_dir / "results.md").read_text()
    assert "### ladder: the model's win / draw / loss" in markdown and "### Elo on the ladder" in markdown
    cell = results.cell("tiny-test ladder", "tictactoe")
    assert cell.mean["vs/oracle/win"] == 0.0  # nobody beats minimax
    assert "elo/model" in cell.mean and cell.mean["elo/random"] == 0.0
    assert results.cell("tiny-test ladder", "everyone_contributes").skipped  # not a two-seat game


def test_fixed_players_games_are_played_once_and_a_model_s_every_time():
    env = envs.make("tictactoe", split="test")
    opponents = {"random": RoleBinding(RandomPolicy(seed=0)), "heuristic": RoleBinding(HeuristicPolicy())}
    played = []

    def play(team):
        played.append(tuple(sorted(type(b.policy).__name__ for b in team.bindings.values())))
        return _play("tictactoe-v0", 6)(team)

    fixed: dict = {}
    first = ladder_metrics(play, env, RoleBinding(OraclePolicy()), opponents, fixed_pairs=fixed)
    assert len(played) == 6 and set(fixed) == {("random", "heuristic")}  # 3 pairings x 2 seats
    second = ladder_metrics(play, env, RoleBinding(OraclePolicy()), opponents, fixed_pairs=fixed)
    assert len(played) == 10 and second == first  # the model's 4 games again, random v heuristic kept
    assert ("HeuristicPolicy", "RandomPolicy") not in played[6:]
    assert ladder_metrics(play, env, RoleBinding(OraclePolicy()), opponents) == first  # not memoised: same
