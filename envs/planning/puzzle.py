"""What a planning env is made of: the ``Puzzle`` protocol (a pure game state and its rules,
an env's ``game.py``), ``PlanningLevel`` (one generated task) and ``PlanningGame`` (the pure
functions of an env's package, which ``PlanningEnv`` in ``envs.planning.base`` plays)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = ["Puzzle", "PlanningLevel", "PlanningGame"]


class Puzzle(Protocol):
    """Pure game state and rules (a planning env's ``game.py``). Moves are hashable."""

    def copy(self) -> Puzzle: ...

    def legal_moves(self) -> list[Any]: ...

    def apply(self, move: Any) -> str | None:
        """Apply a move; return ``None`` if done, else why it is illegal (state unchanged)."""
        ...

    def is_solved(self) -> bool: ...

    def potential(self) -> float:
        """Progress in [0, 1]; exactly 1.0 iff solved."""
        ...

    def key(self) -> Hashable: ...

    def render(self) -> str: ...


@dataclass(frozen=True)
class PlanningLevel:
    """One generated task: the start state (never mutated), its exact solution length and
    a canonical text used to assign it to the train or test split."""

    puzzle: Any
    optimal_moves: int
    fingerprint: str


@dataclass(frozen=True)
class PlanningGame:
    """The pure functions a planning env is made of (its ``game.py``, ``levels.py`` and
    ``prompts.py``), so each env class only declares them and its size arguments.

    Attributes:
        presets: Difficulty name -> frozen params dataclass (sizes, generation knobs).
        generate_level: ``(params, rng) -> PlanningLevel``: a solvable level with its
            optimal solution length.
        solve: ``(puzzle) -> moves | None``: an optimal move list (``None``: unsolvable).
        parse_moves: ``(answer text) -> (moves, error | None)``.
        format_moves: ``(moves) -> text`` in the grammar (what goes inside the tags).
        instructions: ``(role, max_moves_per_turn) -> text``: rules, grammar, the role's job.
        brief_instructions: ``(role) -> (rules, job)`` of the brief prompt style (``None``:
            the env has only the verbose one).
        min_moves: ``(params) -> int``: fewest moves any level of these params needs (``None``:
            unknown); a horizon shorter than that is a configuration no team can win.
        tool_instructions: ``(role) -> (rules, job)`` of the tool team's prompts (roles
            ``tool`` and ``plan``; ``None``: the env has no tool team).
        tool_program: The reference program of the tool team (the tool oracle's answer).
    """

    presets: Mapping[str, Any]
    generate_level: Callable[[Any, np.random.Generator], PlanningLevel]
    solve: Callable[[Any], list[Any] | None]
    parse_moves: Callable[[str], tuple[list[Any], str | None]]
    format_moves: Callable[[list[Any]], str]
    instructions: Callable[[str, int], str]
    brief_instructions: Callable[[str], tuple[str, str]] | None = None
    min_moves: Callable[[Any], int] | None = None
    tool_instructions: Callable[[str], tuple[str, str]] | None = None
    tool_program: str | None = None

    @classmethod
    def from_modules(cls, levels: Any, game: Any, prompts: Any) -> PlanningGame:
        """The game a planning env's package defines by convention: ``levels.PRESETS`` and
        ``levels.generate_level``, ``game.solve``, and ``prompts.parse_moves``,
        ``format_moves``, ``instructions`` (and ``brief_instructions``, ``tool_instructions``
        and ``levels.min_moves`` if they have them), and the package's ``tool_program.py`` (read
        as text, never imported) if there is one."""
        program = Path(game.__file__).with_name("tool_program.py")
        return cls(
            presets=levels.PRESETS,
            generate_level=levels.generate_level,
            solve=game.solve,
            parse_moves=prompts.parse_moves,
            format_moves=prompts.format_moves,
            instructions=prompts.instructions,
            brief_instructions=getattr(prompts, "brief_instructions", None),
            min_moves=getattr(levels, "min_moves", None),
            tool_instructions=getattr(prompts, "tool_instructions", None),
            tool_program=program.read_text() if program.exists() else None,
        )
