"""``TwoSeatGame``: what every competitive two-seat game here shares.

Seats ``first_0`` and ``second_0`` (roles ``first``, ``second``; not ``x``/``o``: PEFT takes
an adapter named ``o``, a substring of its ``lora_`` prefix, for one of its own), the games
suite, ``metadata["competitive"]`` (the game pays ``seat/outcome``, whose sign is the
win / draw / loss, so ``benchmarks.evaluate --ladder`` plays it), feedback placed by the
game's own prompt, and ``other(agent)``.
"""

from __future__ import annotations

from typing import ClassVar

from envs.core import TextAECEnv

__all__ = ["TwoSeatGame"]


class TwoSeatGame(TextAECEnv):
    """Base of a competitive two-seat game; a subclass sets ``metadata["name"]`` with
    ``{**TwoSeatGame.metadata, "name": ...}`` and implements the game."""

    metadata: ClassVar[dict] = {**TextAECEnv.metadata, "suite": "games", "competitive": True}
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("first", "second")}
    APPEND_FEEDBACK: ClassVar[bool] = False  # the feedback goes before the final instruction

    def other(self, agent: str) -> str:
        """The other seat's agent."""
        first, second = self.possible_agents
        return second if agent == first else first
