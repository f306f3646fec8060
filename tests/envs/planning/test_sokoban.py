"""Sokoban: rules on hand-written boards, solver optimality, parser, generator, env."""

from __future__ import annotations

import copy
import dataclasses
from collections import deque

import numpy as np
import pytest

import envs
from envs.planning.sokoban import game, prompts
from envs.planning.sokoban.game import Sokoban, solve
from envs.planning.sokoban.levels import PRESETS, SokobanParams, generate_level

CORRIDOR = ["#######", "#@_$_.#", "#######"]  # optimal: R R R
OPEN_ROOM = ["######", "#@___#", "#____#", "#__$.#", "######"]


def board(*rows: str) -> Sokoban:
    return Sokoban.from_rows(rows)


def play(puzzle: Sokoban, moves: str) -> Sokoban:
    for move in moves:
        assert puzzle.apply(move) is None, (move, puzzle.render())
    return puzzle


def bfs_optimum(puzzle: Sokoban) -> int | None:
    """Reference: plain BFS over (player, boxes) with no pruning and no heuristic."""
    start = puzzle.copy()
    seen = {start.key()}
    queue = deque([(start, 0)])
    while queue:
        state, depth = queue.popleft()
        if state.is_solved():
            return depth
        for move in state.legal_moves():
            nxt = state.copy()
            nxt.apply(move)
            if nxt.key() not in seen:
                seen.add(nxt.key())
                queue.append((nxt, depth + 1))
    return None


# ---------------------------------------------------------------- rules


def test_walking_moves_only_the_player():
    puzzle = Sokoban.from_rows(OPEN_ROOM)
    boxes = puzzle.boxes
    assert puzzle.apply("R") is None
    assert puzzle.player == (1, 2)
    assert puzzle.apply("D") is None
    assert puzzle.player == (2, 2)
    assert puzzle.boxes == boxes


def test_pushing_moves_the_box():
    puzzle = Sokoban.from_rows(CORRIDOR)
    assert puzzle.apply("R") is None
    assert puzzle.apply("R") is None
    assert puzzle.player == (1, 3)
    assert puzzle.boxes == {(1, 4)}
    assert not puzzle.is_solved()
    assert puzzle.apply("R") is None
    assert puzzle.is_solved()
    assert "*" in puzzle.render()


@pytest.mark.parametrize(
    ("rows", "move", "reason"),
    [
        (["#####", "#@$#.", "#####"], "R", "box would be pushed into a wall"),
        (["######", "#@$$.#", "#.___#", "######"], "R", "another box"),
        (["#####", "#@$.#", "#####"], "L", "walk into a wall"),
        (["#####", "#@$.#", "#####"], "X", "unknown move"),
    ],
)
def test_illegal_move_is_refused_and_leaves_state_unchanged(rows, move, reason):
    puzzle = Sokoban.from_rows(rows)
    before = puzzle.key()
    result = puzzle.apply(move)
    assert result is not None and reason in result
    assert puzzle.key() == before
    assert move not in puzzle.legal_moves()


def test_legal_moves_canonical_order():
    puzzle = board("#####", "#___#", "#_@_#", "#_$.#", "#___#", "#####")
    assert puzzle.legal_moves() == ["U", "D", "L", "R"]
    blocked = board("#####", "#_#_#", "#$@_#", "#.#_#", "#####")
    assert blocked.legal_moves() == ["R"]  # U wall, D wall, L box into wall


def test_board_without_border_wall_is_safe():
    puzzle = board("@$.")
    assert puzzle.legal_moves() == ["R"]
    assert "wall" in puzzle.apply("U")
    assert puzzle.apply("R") is None and puzzle.is_solved()


def test_from_rows_validation():
    with pytest.raises(ValueError, match="one player"):
        board("#$.#")
    with pytest.raises(ValueError, match="boxes but"):
        board("#@$$.#")
    with pytest.raises(ValueError, match="unknown symbol"):
        board("#@$x.#")
    with pytest.raises(ValueError, match="rectangle"):
        board("#@$.#", "##")


def test_render_legend_and_numbers():
    rows = ["#####", "#+$_#", "#*$.#", "#####"]
    text = Sokoban.from_rows(rows).render()
    assert text.splitlines() == ["   01234"] + [f"{r:>2} {row}" for r, row in enumerate(rows)]
    wide = board("############", "#@$._______#", "############")
    assert wide.render().splitlines()[0] == "   012345678901"


def test_potential_bounds_and_one_iff_solved():
    puzzle = Sokoban.from_rows(CORRIDOR)
    values = []
    for move in "RRR":
        values.append(puzzle.potential())
        assert 0.0 <= puzzle.potential() < 1.0
        puzzle.apply(move)
    assert puzzle.is_solved() and puzzle.potential() == 1.0
    assert values == sorted(values)  # pushes toward the target never lower it
    # Random play on generated levels: always in [0, 1], exactly 1 iff solved.
    rng = np.random.default_rng(0)
    for difficulty in PRESETS:
        puzzle = generate_level(PRESETS[difficulty], np.random.default_rng(1)).puzzle.copy()
        for _ in range(200):
            phi = puzzle.potential()
            assert 0.0 <= phi <= 1.0
            assert (phi == 1.0) == puzzle.is_solved()
            moves = puzzle.legal_moves()
            if not moves:
                break
            puzzle.apply(moves[int(rng.integers(len(moves)))])


def test_potential_drops_when_a_box_goes_dead():
    puzzle = board("######", "#____#", "#_$__#", "#_@_.#", "######")
    before = puzzle.potential()
    puzzle.apply("U")  # the box reaches the top row: it can never be pushed down again
    assert puzzle.board.is_dead((1, 2))
    assert puzzle.potential() < before


def test_key_is_equal_for_equal_states_by_different_paths():
    a = play(Sokoban.from_rows(OPEN_ROOM), "RD")
    b = play(Sokoban.from_rows(OPEN_ROOM), "DR")
    assert a.key() == b.key()
    # The same push reached by two routes, then a step back.
    c = play(Sokoban.from_rows(OPEN_ROOM), "DDRRL")
    d = play(Sokoban.from_rows(OPEN_ROOM), "RDDRL")
    assert c.key() == d.key()
    hash(c.key())
    assert a.key() != c.key()


def test_copy_is_independent_and_deepcopy_shares_board():
    puzzle = Sokoban.from_rows(CORRIDOR)
    other = puzzle.copy()
    other.apply("R")
    assert puzzle.player == (1, 1) and other.player == (1, 2)
    clone = copy.deepcopy(puzzle)
    assert clone.board is puzzle.board and clone.key() == puzzle.key()


# ---------------------------------------------------------------- solver


@pytest.mark.parametrize(
    ("rows", "optimum"),
    [
        (["#####", "#@$.#", "#####"], 1),
        (CORRIDOR, 3),
        # The player must walk around the box (4 steps) before pushing it left twice.
        (["#######", "#_____#", "#.@$__#", "#_____#", "#######"], 6),
        (["#####", "#*@_#", "#####"], 0),  # already solved
    ],
)
def test_solver_is_optimal_on_hand_boards(rows, optimum):
    puzzle = Sokoban.from_rows(rows)
    solution = solve(puzzle)
    assert solution is not None and len(solution) == optimum
    assert bfs_optimum(puzzle) == optimum
    play(puzzle, "".join(solution))
    assert puzzle.is_solved()


@pytest.mark.parametrize(
    "rows",
    [
        ["#####", "#$__#", "#_@.#", "#####"],  # box in a non-target corner
        ["######", "#@___#", "#____#", "#.$$.#", "######"],  # two boxes frozen on a wall
        ["######", "#@$__#", "#___.#", "######"],  # box can never leave the top row
    ],
)
def test_solver_returns_none_when_unsolvable(rows):
    puzzle = Sokoban.from_rows(rows)
    assert solve(puzzle) is None
    assert bfs_optimum(puzzle) is None


def test_solver_matches_plain_bfs_on_generated_levels():
    for difficulty in ("easy", "medium"):
        for seed in range(3):
            level = generate_level(PRESETS[difficulty], np.random.default_rng(seed))
            assert bfs_optimum(level.puzzle) == level.optimal_moves == len(solve(level.puzzle))


def test_solver_matches_plain_bfs_on_random_play_states():
    """Solvable and deadlocked states alike: same answer as the unpruned BFS."""
    rng = np.random.default_rng(7)
    params = [PRESETS["medium"], SokobanParams(6, 7, 3, wall_density=0.1, min_moves=1, max_moves=60)]
    unsolvable = 0
    for p in params:
        for seed in range(6):
            puzzle = generate_level(p, np.random.default_rng(seed)).puzzle.copy()
            for step in range(15):
                legal = puzzle.legal_moves()
                if not legal:
                    break
                puzzle.apply(legal[int(rng.integers(len(legal)))])
                if step % 3:
                    continue
                solution, optimum = solve(puzzle), bfs_optimum(puzzle)
                assert (solution is None) == (optimum is None), puzzle.render()
                if solution is not None:
                    assert len(solution) == optimum
                    assert play(puzzle.copy(), "".join(solution)).is_solved()
                unsolvable += optimum is None
    assert unsolvable > 0  # the pruning was exercised


def test_solver_search_limit():
    puzzle = generate_level(PRESETS["hard"], np.random.default_rng(0)).puzzle
    with pytest.raises(game.SearchLimitExceeded):
        solve(puzzle, max_expansions=0)
    assert solve(Sokoban.from_rows(["#####", "#*@_#", "#####"]), max_expansions=0) == []


def test_solver_does_not_mutate_its_input():
    puzzle = Sokoban.from_rows(CORRIDOR)
    before = puzzle.key()
    solve(puzzle)
    assert puzzle.key() == before


# ---------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("answer", "moves"),
    [
        ("U R R D", ["U", "R", "R", "D"]),
        ("u r r d", ["U", "R", "R", "D"]),
        ("  U,R ,  r;d  ", ["U", "R", "R", "D"]),
        ("up, right -> Right => down", ["U", "R", "R", "D"]),
        ("UP Down LEFT right", ["U", "D", "L", "R"]),
        ("UURD", ["U", "U", "R", "D"]),
        ("uurd, LL", ["U", "U", "R", "D", "L", "L"]),
        ("U. R.", ["U", "R"]),
        ("north east south west", ["U", "R", "D", "L"]),
    ],
)
def test_parser_tolerance(answer, moves):
    assert prompts.parse_moves(answer) == (moves, None)


@pytest.mark.parametrize(
    "answer",
    ["", "   ", ", ,", "U R X", "jump", "U R upward", "1 2 3", "x" * 100_000, "上 下", "UÜR", "↑ →"],
)
def test_parser_errors_never_raise(answer):
    moves, error = prompts.parse_moves(answer)
    assert moves == [] and isinstance(error, str) and len(error) < 200


def test_parser_large_valid_input():
    from envs.parsing import MAX_PARSED_CHARS

    moves, error = prompts.parse_moves("U " * 30_000)  # 60,000 characters: under the cap
    assert error is None and len(moves) == 30_000
    moves, error = prompts.parse_moves("U " * 50_000)  # past the cap only its first part is read
    assert error is None and len(moves) == MAX_PARSED_CHARS // 2


def test_format_moves_round_trip():
    assert prompts.format_moves(["U", "R", "R", "D"]) == "U R R D"
    assert prompts.parse_moves(prompts.format_moves(["L", "D"])) == (["L", "D"], None)


def test_instructions_document_the_legend():
    for role in ("planner", "executor", "solver"):
        text = prompts.instructions(role, 7)
        assert "At most 7 moves" in text
        for symbol in "#_.$*@+":
            assert f"'{symbol}'" in text


# ---------------------------------------------------------------- generator


def test_generator_is_deterministic():
    params = PRESETS["medium"]
    a = generate_level(params, np.random.default_rng(42))
    b = generate_level(params, np.random.default_rng(42))
    assert a.fingerprint == b.fingerprint and a.optimal_moves == b.optimal_moves
    assert a.puzzle.key() == b.puzzle.key()
    others = {generate_level(params, np.random.default_rng(s)).fingerprint for s in range(8)}
    assert len(others) > 1


@pytest.mark.parametrize("difficulty", sorted(PRESETS))
def test_presets_generate_solvable_levels(difficulty):
    params = PRESETS[difficulty]
    for seed in range(10):
        level = generate_level(params, np.random.default_rng(seed))
        puzzle = level.puzzle
        assert level.fingerprint == f"sokoban|{params}|" + puzzle.render()
        assert (puzzle.board.height, puzzle.board.width) == (params.height, params.width)
        assert len(puzzle.boxes) == len(puzzle.board.targets) == params.num_boxes
        rows = puzzle.render().splitlines()[1:]
        assert all(set(row[3:]) == {"#"} for row in (rows[0], rows[-1]))
        assert all(row[3] == "#" and row[-1] == "#" for row in rows)
        assert not puzzle.is_solved()
        solution = solve(puzzle)
        assert solution is not None and len(solution) == level.optimal_moves
        assert params.min_moves <= level.optimal_moves <= params.max_moves
        replay = play(puzzle.copy(), "".join(solution))
        assert replay.is_solved()
        assert not puzzle.is_solved()  # the level's start state is never mutated


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (dict(height=4), "height"),
        (dict(width=13), "width"),
        (dict(num_boxes=0), "num_boxes"),
        (dict(num_boxes=5), "num_boxes"),
        (dict(wall_density=0.5), "wall_density"),
        (dict(wall_density=-0.1), "wall_density"),
        (dict(reverse_steps=0), "reverse_steps"),
        (dict(straight_pull_probability=1.5), "straight_pull_probability"),
        (dict(min_moves=0), "min_moves"),
        (dict(min_moves=10, max_moves=5), "max_moves"),
    ],
)
def test_params_validation_names_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(PRESETS["easy"], **overrides)


def test_params_other_sizes():
    params = SokobanParams(height=5, width=9, num_boxes=2, min_moves=2, max_moves=60)
    level = generate_level(params, np.random.default_rng(3))
    assert len(solve(level.puzzle)) == level.optimal_moves


# ---------------------------------------------------------------- env


def run_oracle(env, seed: int) -> bool:
    env.reset(seed=seed)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else env.oracle_response(agent))
    return env.success


@pytest.mark.parametrize("team", ["mas", "single"])
@pytest.mark.parametrize("difficulty", sorted(PRESETS))
def test_env_oracle_solves_every_preset(difficulty, team):
    env = envs.make("sokoban", difficulty=difficulty, team=team)
    assert env.metadata["name"] == f"sokoban_v{envs.spec('sokoban').version}"  # make("sokoban"): the latest
    for seed in range(10):
        assert run_oracle(env, seed), (difficulty, team, seed)


def test_env_observation_step_and_clone():
    env = envs.make("sokoban", render_mode="ansi")
    env.reset(seed=0)
    prompt = env.observe("executor_0")["prompt"]
    assert env.render() in prompt and "Legal moves now:" in prompt
    assert env.infos["planner_0"]["legal_moves"] == env.puzzle.legal_moves()
    clone = env.clone()
    assert clone.puzzle.board is env.puzzle.board and clone.level is env.level
    assert clone.state_key() == env.state_key()
    # Planner: any text; executor commits one legal move, then a wall bump.
    env.step("<answer>U</answer>")
    move = env.puzzle.legal_moves()[0]
    env.step(f"<answer>{move}</answer>")
    assert env.state_key() != clone.state_key()
    assert env.infos["executor_0"]["invalid_action"] is False
    env.step("<answer>nonsense</answer>")
    assert env.infos["planner_0"]["invalid_action"] is True


def test_env_overrides_and_bad_difficulty():
    env = envs.make("sokoban", difficulty="medium", num_boxes=1, height=6, min_moves=4)
    assert env.params == dataclasses.replace(PRESETS["medium"], num_boxes=1, height=6, min_moves=4)
    env.reset(seed=5)
    assert len(env.puzzle.boxes) == 1
    with pytest.raises(ValueError, match="difficulty"):
        envs.make("sokoban", difficulty="brutal")
    with pytest.raises(ValueError, match="num_boxes"):
        envs.make("sokoban", num_boxes=9)


def test_env_solution_none_after_deadlock():
    env = envs.make("sokoban")
    env.reset(seed=0)
    env.puzzle = Sokoban.from_rows(["#####", "#$__#", "#_@.#", "#####"])
    assert env.solution() is None
    assert game.solve(env.puzzle) is None
