"""Tic-tac-toe: rules, the exact minimax oracle, seat outcomes and the env contract."""

from __future__ import annotations

import functools

import pytest

import envs
from envs.games.tictactoe import game
from envs.splits import split_seeds
from tests.envs.conftest import play_oracle


def _reachable() -> set[tuple[str, str]]:
    """Every (board, side to move) reachable from the empty board by alternating play."""
    seen, frontier = set(), [(game.EMPTY, "X")]
    while frontier:
        board, mark = frontier.pop()
        if (board, mark) in seen:
            continue
        seen.add((board, mark))
        frontier += [(game.play(board, c, mark), game.other(mark)) for c in game.legal_cells(board)]
    return seen


def test_the_classic_counts_and_values():
    assert len(_reachable()) == 5478  # the well-known number of legal tic-tac-toe positions
    assert game.value(game.EMPTY, "X") == 0  # perfect play draws
    assert game.value("X...O....", "X") == 0
    assert game.value("XO.......", "X") == 1  # O's edge reply next to X's corner loses
    assert game.winner("XXXOO....") == "X" and game.winner("XOXOXOOXO") is None
    assert game.legal_cells("XXXOO....") == []  # nothing to play once a line is full


def test_play_refuses_illegal_cells():
    with pytest.raises(ValueError, match="cell 1"):
        game.play("X........", 1, "O")
    with pytest.raises(ValueError):
        game.play(game.EMPTY, 10, "X")


@functools.cache
def _worst_for(board: str, mark: str, oracle: str) -> int:
    """The oracle's worst result (its side) when it plays its first best cell and the other
    side tries every reply."""
    if game.is_over(board):
        won = game.winner(board)
        return 0 if won is None else (1 if won == oracle else -1)
    cells = game.best_cells(board, mark)[:1] if mark == oracle else game.legal_cells(board)
    return min(_worst_for(game.play(board, c, mark), game.other(mark), oracle) for c in cells)


def test_minimax_never_does_worse_than_the_game_value_from_any_reachable_state():
    for board, mark in _reachable():
        if game.is_over(board):
            continue
        for oracle in ("X", "O"):
            assert _worst_for(board, mark, oracle) >= game.mover_value(board, mark, oracle), (board, mark)


def _play(env, moves: list[int]) -> None:
    for cell in moves:
        env.step(f"<answer>{cell}</answer>")


def test_a_game_record_replays_to_the_seat_outcomes():
    env = envs.make("tictactoe")
    env.reset(seed=split_seeds("train", 1)[0])
    # Replay a known game from the opening X 1, O 5: X 2, O blunders to 9, X 3 takes the top row.
    env.board = "X...O...."
    _play(env, [2, 9, 3])
    assert env.board == "XXX.O...O" and all(env.terminations.values())
    assert env.infos["first_0"]["reward_terms"] == {"seat/outcome": 1.0}
    assert env.infos["second_0"]["reward_terms"] == {"seat/outcome": -1.0}
    assert env.success  # played to the end


def test_a_taken_cell_is_invalid_and_loses_the_turn():
    env = envs.make("tictactoe")
    env.reset(seed=split_seeds("train", 1)[0])
    taken = next(i + 1 for i, mark in enumerate(env.board) if mark != ".")
    board = env.board
    env.step(f"<answer>{taken}</answer>")
    assert env.infos["first_0"]["invalid_action"] and env.board == board
    assert "taken" in env.infos["first_0"]["feedback"] and env.agent_selection == "second_0"
    env.step("no number at all")
    assert env.infos["second_0"]["invalid_action"] and "No cell number" in env.infos["second_0"]["feedback"]
    prompt = env.observe("first_0")["prompt"]
    assert "Free cells:" in prompt and prompt.endswith("<answer>N</answer>.")


def test_the_minimax_reward_marks_blunders():
    env = envs.make("tictactoe", minimax_reward=True)
    env.reset(seed=split_seeds("train", 1)[0])
    env.board = "XO......."  # X to move; X can win with best play
    best = game.best_cells(env.board, "X")[0]
    clone = env.clone()
    env.step(f"<answer>{best}</answer>")
    assert env.infos["first_0"]["reward_terms"]["local/minimax"] == 0.0
    blunder = next(c for c in game.legal_cells(clone.board) if c not in game.best_cells(clone.board, "X"))
    clone.step(f"<answer>{blunder}</answer>")
    assert clone.infos["first_0"]["reward_terms"]["local/minimax"] < 0


@pytest.mark.parametrize("split", ["train", "test"])
def test_oracle_against_oracle_reaches_the_value_of_each_opening(split):
    for seed in split_seeds(split, 40):
        env = envs.make("tictactoe", split=split)
        env.reset(seed=seed)
        opening = env.board
        play_oracle(env, seed)
        won = game.winner(env.board)
        outcome = 0 if won is None else (1 if won == "X" else -1)
        assert outcome == game.value(opening, "X"), opening


def test_openings_are_split_and_the_opening_option_is_checked():
    boards = {}
    for split in ("train", "test"):
        env = envs.make("tictactoe", split=split)
        found = set()
        for seed in split_seeds(split, 300):
            env.reset(seed=seed)
            found.add(env.opening)
            assert sum(m != "." for m in env.opening) == 2 and not game.is_over(env.opening)
        boards[split] = found
    assert not boards["train"] & boards["test"]
    assert len(boards["train"] | boards["test"]) == 72  # every 2-ply opening, each in one split
    with pytest.raises(ValueError, match="opening_plies"):
        envs.make("tictactoe", opening_plies=0)
    four = envs.make("tictactoe", opening_plies=4)
    four.reset(seed=3)
    assert sum(m != "." for m in four.board) == 4


def test_registered_in_the_games_suite():
    spec = envs.spec("tictactoe")
    assert spec.id == "tictactoe-v0" and spec.teams == {"mas": ("first", "second")}
    assert type(envs.make("tictactoe")).metadata["suite"] == "games"
