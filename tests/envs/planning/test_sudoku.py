"""Sudoku: rules on hand-written grids, the solver, the grammar, the generator and the
oracle through the AEC loop."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from envs.planning.sudoku import game, prompts
from envs.planning.sudoku.env import SudokuEnv
from envs.planning.sudoku.game import Board, Sudoku, count_solutions, solve
from envs.planning.sudoku.levels import MAX_BLANKS, PRESETS, SudokuParams, generate_level
from tests.envs.conftest import assert_linear_time, hostile_text, timed

# 4x4 with a unique solution:   solution
#   1 . | . 4                   1 2 | 3 4
#   . 4 | 1 .                   3 4 | 1 2
#   2 . | . 3                   2 1 | 4 3
#   . 3 | 2 .                   4 3 | 2 1
SMALL = "1..4 .41. 2..3 .32."
SMALL_SOLUTION = game.parse_grid("1234 3412 2143 4321")

# The classic 9x9 example puzzle (unique solution, known).
CLASSIC = """
53..7.... 6..195... .98....6.
8...6...3 4..8.3..1 7...2...6
.6....28. ...419..5 ....8..79
"""
CLASSIC_SOLUTION = game.parse_grid(
    "534678912 672195348 198342567 859761423 426853791 713924856 961537284 287419635 345286179"
)


@pytest.fixture
def small() -> Sudoku:
    return Sudoku.from_text(SMALL)


@pytest.fixture
def classic() -> Sudoku:
    return Sudoku.from_text(CLASSIC)


# ---------------------------------------------------------------------------- rules
def test_board_holds_clues_and_unique_solution(small: Sudoku) -> None:
    board = small.board
    assert (board.size, board.box_rows, board.box_cols) == (4, 2, 2)
    assert board.solution == SMALL_SOLUTION
    assert len(board.blanks) == 8
    assert Sudoku.from_text(CLASSIC).board.solution == CLASSIC_SOLUTION


def test_legal_fill_writes_the_digit(small: Sudoku) -> None:
    assert small.apply((0, 1, 2)) is None
    assert small.value(0, 1) == 2
    assert small.potential() == pytest.approx(1 / 8)


@pytest.mark.parametrize(
    ("move", "named", "not_named"),
    [
        ((0, 2, 7), "row 1 (at r1c5)", ("column", "box")),  # 7 in row 1 only
        ((0, 3, 8), "column 4 (at r5c4)", ("row", "box")),  # 8 in column 4 only
        ((0, 2, 6), "box of rows 1-3, columns 1-3 (at r2c1)", ("row 1 (", "column 3 (")),
    ],
)
def test_conflict_is_refused_and_named(
    classic: Sudoku, move: game.Move, named: str, not_named: tuple[str, ...]
) -> None:
    before = classic.key()
    reason = classic.apply(move)
    assert reason is not None and named in reason
    assert all(word not in reason for word in not_named)
    assert classic.key() == before


def test_conflict_in_several_units_names_each(small: Sudoku) -> None:
    reason = small.apply((0, 1, 4))  # 4 is in row 1, column 2 and the top-left box
    assert reason is not None
    assert "row 1" in reason and "column 2" in reason and "box" in reason


def test_given_clue_cannot_change(small: Sudoku) -> None:
    reason = small.apply((0, 0, 2))
    assert reason is not None and "given" in reason and "r1c1" in reason
    assert small.value(0, 0) == 1


@pytest.mark.parametrize(
    ("move", "word"),
    [((4, 0, 1), "row 5"), ((-1, 0, 1), "row 0"), ((0, 4, 1), "column 5"), ((0, 1, 0), "digit 0"),
     ((0, 1, 5), "digit 5"), ("r1c2=3", "not a fill"), ((0, 1), "not a fill"),
     ("123", "not a fill"), ((0.0, 1, 2), "not a fill"), (None, "not a fill")],
)  # fmt: skip
def test_out_of_range_or_malformed_move_is_refused(small: Sudoku, move: object, word: str) -> None:
    reason = small.apply(move)
    assert reason is not None and word in reason
    assert small.key() == Sudoku(small.board).key()


def test_player_fill_can_be_overwritten(classic: Sudoku) -> None:
    assert classic.apply((0, 2, 1)) is None  # r1c3=1 breaks no rule, but the solution has 4
    assert classic.value(0, 2) == 1 and classic.potential() == 0.0
    assert classic.apply((0, 2, 1)) is None  # the same digit again: a harmless no-op
    assert classic.apply((0, 2, 4)) is None  # overwrite with the right digit
    assert classic.value(0, 2) == 4
    assert classic.potential() == pytest.approx(1 / len(classic.board.blanks))


def test_legal_moves_agree_with_apply(small: Sudoku) -> None:
    small.apply((0, 1, 2))
    legal = small.legal_moves()
    assert legal == sorted(legal)  # canonical order: row, col, digit
    for r in range(4):
        for c in range(4):
            for d in range(1, 5):
                trial = small.copy()
                assert (trial.apply((r, c, d)) is None) == ((r, c, d) in legal)


def test_solving_fill_by_fill_and_potential(small: Sudoku) -> None:
    moves = solve(small)
    assert moves is not None and len(moves) == 8
    for index, move in enumerate(moves):
        assert not small.is_solved() and small.potential() == pytest.approx(index / 8)
        assert small.apply(move) is None
    assert small.is_solved() and small.potential() == 1.0
    assert small.grid == SMALL_SOLUTION
    assert solve(small) == []


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=30))
def test_potential_in_bounds_and_one_iff_solved(choices: list[int]) -> None:
    puzzle = Sudoku.from_text(SMALL)
    for choice in choices:
        legal = puzzle.legal_moves()
        if not legal:
            break
        assert puzzle.apply(legal[choice % len(legal)]) is None
        value = puzzle.potential()
        assert 0.0 <= value <= 1.0
        assert (value == 1.0) == puzzle.is_solved()
        assert puzzle.is_solved() == (puzzle.grid == SMALL_SOLUTION)


def test_copy_is_independent_and_deepcopy_shares_the_board(small: Sudoku) -> None:
    twin = small.copy()
    twin.apply((0, 1, 2))
    assert small.value(0, 1) == 0 and twin.value(0, 1) == 2
    deep = copy.deepcopy(twin)
    assert deep.board is twin.board and deep.key() == twin.key()
    assert hash(deep.key()) == hash(twin.key())


def test_render_is_readable() -> None:
    text = Sudoku.from_text(SMALL).render()
    lines = text.splitlines()
    assert lines[0].split() == ["1", "2", "3", "4"]
    assert lines[2] == "1 | 1 . | . 4 |"
    assert set(lines[1]) == {" ", "+", "-"}
    big = Sudoku.from_text(CLASSIC).render().splitlines()
    assert len(big) == 1 + 4 + 9  # header, 4 rules, 9 rows
    assert big[2] == "1 | 5 3 . | . 7 . | . . . |"
    assert big[0].split() == [str(c) for c in range(1, 10)]


# ---------------------------------------------------------------------------- solver
def test_count_solutions() -> None:
    assert count_solutions(CLASSIC) == 1
    assert count_solutions(SMALL) == 1
    assert count_solutions("1... .4.. ..4. ...1") == 2  # several: counted up to the limit
    assert count_solutions("." * 16, limit=1000) == 288  # every 4x4 Sudoku grid
    assert count_solutions("11.. .... .... ....") == 0  # clues already conflict
    assert count_solutions(SMALL_SOLUTION) == 1


def test_board_needs_a_unique_solution() -> None:
    with pytest.raises(ValueError, match="several"):
        Board.create("1... .4.. ..4. ...1")
    with pytest.raises(ValueError, match="no solution"):
        Board.create("11.. .... .... ....")
    with pytest.raises(ValueError, match="16"):
        Board.create("123")
    with pytest.raises(ValueError, match="agree"):
        Board.create(SMALL, solution="2143 3412 1234 4321")


def test_solve_classic_and_after_a_wrong_fill(classic: Sudoku) -> None:
    moves = solve(classic)
    assert moves is not None and len(moves) == len(classic.board.blanks)
    for move in moves:
        assert classic.copy().apply(move) is None
    wrong = Sudoku.from_text(CLASSIC)
    assert wrong.apply((0, 2, 1)) is None  # legal, but the solution has 4 there
    assert solve(wrong) is None


# ---------------------------------------------------------------------------- grammar
@pytest.mark.parametrize(
    "text",
    ["r2c3=4", "R2C3 = 4", "r2 c3 = 4", "r2c3:4", "  r2c3=4  ", "r02C03 = 4"],
)
def test_parser_tolerates_case_and_spacing(text: str) -> None:
    assert prompts.parse_moves(text) == ([(1, 2, 4)], None)


def test_parser_reads_several_fills() -> None:
    text = "r1c2=3, R4C4 = 1\nr2 c1:2; r3c3=4 r1c1=1"
    moves, error = prompts.parse_moves(text)
    assert error is None
    assert moves == [(0, 1, 3), (3, 3, 1), (1, 0, 2), (2, 2, 4), (0, 0, 1)]
    assert prompts.format_moves(moves[:2]) == "r1c2=3, r4c4=1"
    assert prompts.parse_moves(prompts.format_moves(moves)) == (moves, None)


def test_parser_out_of_range_numbers_parse_and_are_illegal(small: Sudoku) -> None:
    moves, error = prompts.parse_moves("r0c1=1, r5c5=9, r1c2=0")
    assert error is None and moves == [(-1, 0, 1), (4, 4, 9), (0, 1, 0)]
    assert all(small.apply(move) is not None for move in moves)


@pytest.mark.parametrize(
    ("text", "named"),
    [("r1c2=3, hello", "hello"), ("r1c2=3 r1c2", "r1c2"), ("r1c2=3x", "r1c2=3x"),
     ("(1,2)=3", "(1"), ("r1c2=three", "r1c2=three"), ("r\u0662c1=1", "r\u0662c1=1")],
)  # fmt: skip
def test_parser_names_the_bad_item(text: str, named: str) -> None:
    moves, error = prompts.parse_moves(text)
    assert moves == [] and error is not None and named in error


@pytest.mark.parametrize("text", ["", "   ", ",,, ;\n"])
def test_parser_empty_answer_is_an_error(text: str) -> None:
    moves, error = prompts.parse_moves(text)
    assert moves == [] and error is not None and "no fills" in error


@pytest.mark.parametrize(
    ("prefix", "unit", "suffix"),
    [("", "a", ""), ("r", " ", ""), ("", "r1 c2 ", ""), ("", "\u00e9\u4e2d", ""), ("", "r1c1=1 ", "?"),
     ("", "9", ""), ("r", "1", "c1=1")],
)  # fmt: skip
def test_parser_huge_or_non_ascii_input_errors_in_linear_time(prefix: str, unit: str, suffix: str) -> None:
    moves, error = prompts.parse_moves(hostile_text(unit, 100_000, prefix) + suffix)
    assert moves == [] and error is not None and len(error) < 120
    assert_linear_time(lambda n: timed(prompts.parse_moves, hostile_text(unit, n, prefix) + suffix), unit)


# ---------------------------------------------------------------------------- levels
def test_generator_is_deterministic() -> None:
    for params in PRESETS.values():
        one = generate_level(params, np.random.default_rng(7))
        two = generate_level(params, np.random.default_rng(7))
        assert one.fingerprint == two.fingerprint and one.puzzle.key() == two.puzzle.key()
        other = generate_level(params, np.random.default_rng(8))
        assert other.fingerprint != one.fingerprint


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_have_exact_blanks_and_a_unique_solution(name: str) -> None:
    params = PRESETS[name]
    for seed in range(5):
        level = generate_level(params, np.random.default_rng(seed))
        puzzle = level.puzzle
        assert puzzle.board.size == params.size
        assert puzzle.grid.count(game.EMPTY) == params.num_blanks == level.optimal_moves
        assert count_solutions(puzzle.grid) == 1
        assert solve(puzzle) is not None and len(solve(puzzle)) == params.num_blanks
        assert level.fingerprint == f"sudoku|{params}|" + puzzle.render()
        assert puzzle.potential() == 0.0 and not puzzle.is_solved()


def test_generator_reaches_the_blank_limits() -> None:
    level = generate_level(SudokuParams(size=4, num_blanks=MAX_BLANKS[4]), np.random.default_rng(0))
    assert level.puzzle.grid.count(game.EMPTY) == MAX_BLANKS[4]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [(dict(size=5, num_blanks=3), "size"), (dict(size=4, num_blanks=0), r"num_blanks.*\[1, 12\]"),
     (dict(size=4, num_blanks=13), "num_blanks"), (dict(size=9, num_blanks=57), r"\[1, 56\]"),
     (dict(size=4, num_blanks=2.5), "num_blanks")],
)  # fmt: skip
def test_params_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SudokuParams(**kwargs)


# ---------------------------------------------------------------------------- env
def _run_oracle(env: SudokuEnv, seed: int) -> dict[str, float]:
    """Play the oracle through the AEC loop; the reward terms of the solving step."""
    env.reset(seed=seed)
    terms: dict[str, float] = {}
    for agent in env.agent_iter(max_iter=100):
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else env.oracle_response(agent))
        if agent in env.infos and env.infos[agent]["success"] and not terms:
            terms = env.infos[agent]["reward_terms"]
    assert env.success
    return terms


@pytest.mark.parametrize("team", ["mas", "single"])
@pytest.mark.parametrize("difficulty", sorted(PRESETS))
def test_oracle_solves_every_preset(difficulty: str, team: str) -> None:
    env = envs.make("sudoku", difficulty=difficulty, team=team)
    for seed in range(10):
        terms = _run_oracle(env, seed)
        assert terms["team/success"] == 1.0 and terms["team/optimality"] == 0.5
        assert terms["team/progress"] == pytest.approx(1.0)  # from potential 0 to 1


def test_env_prompt_metadata_and_overrides() -> None:
    env = envs.make("sudoku", render_mode="ansi")
    assert env.metadata["name"] == f"sudoku_v{envs.spec('sudoku').version}" and env.max_moves_per_turn == 81
    assert env.max_cycles == 6
    env.reset(seed=0)
    prompt = env.observe("executor_0")["prompt"]
    assert "Empty cells and allowed digits: r" in prompt and "Legal moves now" not in prompt
    assert env.render() in prompt
    legal = env.infos["executor_0"]["legal_moves"]
    assert legal and all(prompts.parse_moves(move)[1] is None for move in legal)
    assert len(legal) == len(env.puzzle.legal_moves())

    big = SudokuEnv(difficulty="easy", size=9, num_blanks=20)
    big.reset(seed=3)
    assert big.puzzle.board.size == 9 and big.puzzle.grid.count(game.EMPTY) == 20
    with pytest.raises(ValueError, match="difficulty"):
        SudokuEnv(difficulty="expert")
    with pytest.raises(ValueError, match="num_blanks"):
        SudokuEnv(difficulty="hard", size=4)


def test_env_wrong_fill_overwrite_and_clone() -> None:
    env = envs.make("sudoku", difficulty="hard", team="single")
    env.reset(seed=1)
    solution = env.puzzle.board.solution
    # A digit that breaks no rule but is not the solution's (9x9 with 40 blanks has many).
    (row, col), digit = next(
        (cell, d)
        for cell, digits in env.puzzle.candidates().items()
        for d in digits
        if d != solution[cell[0] * 9 + cell[1]]
    )
    right = solution[row * 9 + col]
    env.step(f"<answer>r{row + 1}c{col + 1}={digit}</answer>")
    info = env.infos["solver_0"]
    assert not info["invalid_action"] and info["reward_terms"]["team/progress"] == 0.0
    assert f"r{row + 1}c{col + 1} (now {digit})" in env.observe("solver_0")["prompt"]
    assert env.solution() is None  # no completion any more: the oracle cannot go on
    twin = env.clone()
    env.step(f"<answer>r{row + 1}c{col + 1}={right}</answer>")
    assert env.infos["solver_0"]["reward_terms"]["team/progress"] == pytest.approx(1 / 40)
    assert twin.puzzle.value(row, col) == digit and env.puzzle.value(row, col) == right
    assert twin.state_key() != env.state_key() and twin.puzzle.board is env.puzzle.board
    assert env.solution() is not None and twin.solution() is None


def test_env_illegal_fill_is_penalized_and_named() -> None:
    env = envs.make("sudoku", team="single")
    env.reset(seed=2)
    board = env.puzzle.board
    given = next(i for i in range(16) if board.givens[i])
    row, col = divmod(given, 4)
    env.step(f"<answer>r{row + 1}c{col + 1}=1</answer>")
    info = env.infos["solver_0"]
    assert info["invalid_action"] and "given clue" in info["feedback"]
    assert info["reward_terms"]["local/invalid"] < 0
