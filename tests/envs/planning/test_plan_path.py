"""Plan-Path rules (pure game module), generator, grammar and env rewards."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import envs
from envs.planning.plan_path import game, prompts
from envs.planning.plan_path.levels import PRESETS, PlanPathParams, generate_level

ROWS = (
    "...",
    ".#.",
    "...",
)


def board(start=(0, 0), goal=(2, 2), rows=ROWS):
    return game.Board.create(rows, start, goal)


def test_moves_walls_and_edges():
    p = game.PlanPath(board())
    assert p.legal_moves() == ["D", "R"]
    assert p.apply("U") == "that leaves the grid"
    assert p.position == (0, 0)
    assert p.apply("D") is None and p.position == (1, 0)
    assert p.apply("R") == "that cell is a wall" and p.position == (1, 0)
    assert p.apply("X") == "unknown move 'X'"


def test_solved_and_potential():
    p = game.PlanPath(board())
    assert p.distance_to_goal() == 4 and p.potential() == 0.0
    for move in "DDRR":
        assert not p.is_solved()
        assert 0.0 <= p.potential() < 1.0
        p.apply(move)
    assert p.is_solved() and p.potential() == 1.0


def test_solver_is_shortest():
    p = game.PlanPath(board())
    path = game.solve(p)
    assert len(path) == 4
    for move in path:
        assert p.apply(move) is None
    assert p.is_solved()
    assert game.solve(p) == []


def test_unreachable_goal_is_rejected():
    with pytest.raises(ValueError, match="not reachable"):
        game.Board.create((".#.", "##.", "..."), (0, 0), (2, 2))


def test_copy_and_key():
    p = game.PlanPath(board())
    q = p.copy()
    q.apply("D")
    assert p.position == (0, 0) and q.position == (1, 0)
    assert q.board is p.board
    r = game.PlanPath(board())
    for move in "RRDDLLUU":  # around the block and back to a state equal to q's
        r.apply(move)
    r.apply("D")
    assert r.key() == q.key()


def test_render_shows_walker_goal_and_walls():
    text = game.PlanPath(board()).render()
    assert text.splitlines() == ["   012", " 0 A..", " 1 .#.", " 2 ..G"]


@pytest.mark.parametrize(
    "answer,moves",
    [("U D L R", list("UDLR")), ("up, Down;LEFT right", list("UDLR")), ("n s w e", list("UDLR")),
     ("r -> r => d", list("RRD")), ("R.", ["R"])],
)  # fmt: skip
def test_parse_is_tolerant(answer, moves):
    assert prompts.parse_moves(answer) == (moves, None)


@pytest.mark.parametrize("answer", ["", "   ", "U jump", "é", "U" * 3 + "x" * 100_000, "import os"])
def test_parse_errors_do_not_raise(answer):
    moves, error = prompts.parse_moves(answer)
    assert moves == [] and error


@pytest.mark.parametrize("difficulty", sorted(PRESETS))
def test_generator_is_seeded_and_solvable(difficulty):
    params = PRESETS[difficulty]
    for seed in range(10):
        a = generate_level(params, np.random.default_rng(seed))
        b = generate_level(params, np.random.default_rng(seed))
        assert a.fingerprint == b.fingerprint
        puzzle = a.puzzle.copy()
        assert (puzzle.board.height, puzzle.board.width) == (params.height, params.width)
        path = game.solve(puzzle)
        assert len(path) == a.optimal_moves >= params.min_distance
        for move in path:
            assert puzzle.apply(move) is None
        assert puzzle.is_solved()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"height": 1}, "at least 2x2"),
        ({"wall_density": 0.9}, "wall_density"),
        ({"min_distance": 99}, "min_distance"),
    ],
)
def test_params_validation(kwargs, match):
    base = dict(height=5, width=5, wall_density=0.2, min_distance=3)
    with pytest.raises(ValueError, match=match):
        PlanPathParams(**{**base, **kwargs})


def test_env_sizes_follow_the_constructor():
    env = envs.make("plan_path", difficulty="hard", height=12, width=7)
    env.reset(seed=0)
    assert (env.puzzle.board.height, env.puzzle.board.width) == (12, 7)
    with pytest.raises(ValueError, match="difficulty='extreme'"):
        envs.make("plan_path", difficulty="extreme")


def test_planner_reward_scores_plan_on_a_copy_executor_gets_real_progress():
    env = envs.make("plan_path")
    env.reset(seed=0)
    start = env.state_key()
    best = env.solution()
    env.step(f"<answer>{' '.join(best)}</answer>")  # planner: a full optimal plan
    terms = env.infos["planner_0"]["reward_terms"]
    assert terms == {
        "local/plan_progress": pytest.approx(1.0 - env.puzzle.potential()),
        "local/plan_solves": 0.5,
    }
    assert env.state_key() == start  # the planner never moves the walker
    assert "The planner's plan: <answer>" in env.observe("executor_0")["prompt"]
    env.step(f"<answer>{best[0]}</answer>")  # executor: one step
    terms = env.infos["executor_0"]["reward_terms"]
    assert terms["team/progress"] == pytest.approx(1 / env.puzzle.board.max_distance)
    assert env.rewards["planner_0"] == env.rewards["executor_0"] == pytest.approx(terms["team/progress"])


def test_success_and_optimality_terms():
    env = envs.make("plan_path", team="single")
    env.reset(seed=0)
    detour = env.puzzle.legal_moves()[0]
    back = {"U": "D", "D": "U", "L": "R", "R": "L"}[detour]
    env.step(f"<answer>{detour} {back}</answer>")  # two wasted moves
    env.step(env.oracle_response("solver_0"))
    terms = env.infos["solver_0"]["reward_terms"]
    optimal = env.level.optimal_moves
    assert env.success and all(env.terminations.values())
    assert terms["team/success"] == 1.0
    assert terms["team/optimality"] == pytest.approx(0.5 * optimal / (optimal + 2))


def test_illegal_move_keeps_the_legal_prefix_and_penalises():
    env = envs.make("plan_path", team="single")
    env.reset(seed=0)
    first = env.puzzle.legal_moves()[0]
    probe = env.puzzle.copy()
    probe.apply(first)
    blocked = next(m for m in game.MOVES if m not in probe.legal_moves())
    env.step(f"<answer>{first} {blocked} {first}</answer>")
    assert env.puzzle.key() == probe.key()
    info = env.infos["solver_0"]
    assert info["invalid_action"] and info["reward_terms"]["local/invalid"] == -0.1
    assert "move 2" in info["feedback"]


def test_moves_past_the_turn_limit_are_ignored():
    env = envs.make("plan_path", team="single", max_moves_per_turn=1)
    env.reset(seed=0)
    env.step(env.oracle_response("solver_0").replace("</answer>", " U U U</answer>"))
    assert env.moves_made == 1 and "ignored" in env.infos["solver_0"]["feedback"]


def test_a_horizon_no_level_fits_warns_once_at_construction():
    with pytest.warns(UserWarning, match="at least 10 moves.*max_cycles \\* max_moves_per_turn = 2"):
        env = envs.make("plan_path", difficulty="hard", max_cycles=1, max_moves_per_turn=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=0)  # each task does not warn again


def test_a_horizon_only_some_levels_exceed_does_not_warn():
    # Easy Sokoban levels need 6 to 30 moves: one cycle of 10 leaves the longer ones unwinnable,
    # a choice (the training presets make it), not a mistake to warn about on every task.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = envs.make("sokoban", difficulty="easy", max_cycles=1)
        lengths = []
        for seed in range(100):
            env.reset(seed=seed)
            lengths.append(env.level.optimal_moves)
    assert max(lengths) > env.max_moves_per_turn >= min(lengths)


def test_v1_is_the_brief_prompt_and_v0_keeps_the_verbose_one():
    brief, verbose = envs.make("plan_path"), envs.make("plan_path-v0")
    assert brief.prompt_style == "brief" and verbose.prompt_style == "verbose"
    for env in (brief, verbose):
        env.reset(seed=3)
    for agent in ("planner_0", "executor_0"):
        short, long = brief.observe(agent)["prompt"], verbose.observe(agent)["prompt"]
        assert brief.puzzle.render() in short and "Legal moves now:" in short
        assert len(short) < 0.6 * len(long)
        assert "R R D L" not in short  # no example answer for a small model to copy
        step = f"<answer>{' '.join(brief.solution())}</answer>"
        brief.step(step)
        verbose.step(step)
    assert brief.rewards == verbose.rewards  # same rules and rewards, only the text differs
    assert "Result of your last answer:" in brief.observe("planner_0")["prompt"]


def test_prompt_style_is_checked():
    with pytest.raises(ValueError, match="prompt_style='short'"):
        envs.make("plan_path", prompt_style="short")
    with pytest.raises(ValueError, match="no brief prompts"):
        envs.make("sudoku", prompt_style="brief")
