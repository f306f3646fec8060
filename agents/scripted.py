"""Scripted policies: the oracle (ceiling), heuristic and random (floor) rows of evaluation
tables, and the fixed opponents of games.

They implement the ``Policy`` protocol but read the game state instead of the text: the
rollout (or ``agents.team.Team.prompt_for``) attaches the env and the acting agent to each
``Prompt`` (``Prompt(text, env=env, agent=agent)``). They never mutate the env.

* ``OraclePolicy``: answers ``env.oracle_response(agent)`` (planning envs: the next
  optimal moves from the exact solver). Deterministic, so all samples are equal.
* ``HeuristicPolicy``: answers ``env.heuristic_response(agent)``, a game's rule of thumb
  (the middle rung of an opponent ladder).
* ``RandomPolicy``: answers one uniformly random legal move, ``<answer>MOVE</answer>``,
  drawn from ``env.infos[agent]["legal_moves"]``.

Their generations carry no tokens (``token_ids == logprobs == ()``): they are baselines
and scripted teammates, not policies a learner can update.

``SCRIPTED_POLICIES`` maps the names used on command lines to the classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.base import Generation, Prompt, SamplingParams, as_prompt, check_num_samples

__all__ = ["EnvMethodPolicy", "OraclePolicy", "HeuristicPolicy", "RandomPolicy", "SCRIPTED_POLICIES"]


def _scripted_generation(text: str) -> Generation:
    return Generation(text=text, prompt_token_ids=(), token_ids=(), logprobs=(), finish_reason="stop")


def _check_call(policy_name: str, num_samples: int, adapter: str | None) -> None:
    check_num_samples(num_samples)
    if adapter is not None:
        raise ValueError(
            f"{policy_name} has no adapters, got adapter={adapter!r}; bind it with adapter=None "
            "(e.g. agents.team.RoleBinding(policy) or Team(env, {role: policy}))"
        )


def _env_and_agent(policy_name: str, prompt: str | Prompt) -> tuple[Any, str]:
    """The env and agent attached to a prompt, or a ValueError that says how to attach them."""
    prompt = as_prompt(prompt)
    if prompt.env is None or prompt.agent is None:
        raise ValueError(
            f"{policy_name} reads the game state, but the prompt has no env/agent attached; pass "
            "Prompt(text, env=env, agent=agent) (agents.team.Team.prompt_for does this) instead of "
            "plain text"
        )
    return prompt.env, prompt.agent


class EnvMethodPolicy:
    """A policy that answers what an env method says: ``env.<method>(agent)``. Deterministic,
    so all samples are equal. ``OraclePolicy`` and ``HeuristicPolicy`` are its two uses.

    Args:
        name: Policy name used in logs and records.
    """

    METHOD = ""  # the env method, e.g. "oracle_response"
    WHAT = ""  # what the method is, for the error when an env lacks it
    DEFAULT_NAME = ""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or self.DEFAULT_NAME

    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        """``num_samples`` copies of ``prompt.env.<METHOD>(prompt.agent)`` per prompt.

        Raises:
            ValueError: A prompt without an attached env and agent, or a non-None adapter.
            TypeError: The env has no such method.
        """
        _check_call(self.name, num_samples, adapter)
        results = []
        for prompt in prompts:
            env, agent = _env_and_agent(self.name, prompt)
            method = getattr(env, self.METHOD, None)
            if not callable(method):
                raise TypeError(
                    f"{type(env).__name__} has no {self.WHAT} (no {self.METHOD}(agent) method), so "
                    f"{type(self).__name__} cannot play it; use a model or RandomPolicy instead"
                )
            text = method(agent)
            results.append([_scripted_generation(text) for _ in range(num_samples)])
        return results

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class OraclePolicy(EnvMethodPolicy):
    """The env's exact solver as a policy (``env.oracle_response``): the ceiling of an
    evaluation table, the strongest fixed opponent of a game."""

    METHOD, WHAT, DEFAULT_NAME = "oracle_response", "exact solver / oracle", "oracle"


class HeuristicPolicy(EnvMethodPolicy):
    """A simple rule of thumb as a policy (``env.heuristic_response``): the middle rung of a
    game's opponent ladder, between random and the oracle (tic-tac-toe: win, else block, else
    centre, else a corner; Kuhn poker: bet and call with K, check and call with Q, check and
    fold with J; public goods: give what the predecessors gave on average)."""

    METHOD, WHAT, DEFAULT_NAME = "heuristic_response", "heuristic", "heuristic"


class RandomPolicy:
    """A uniformly random legal move per sample: the floor of an evaluation table.

    Args:
        seed: Seed of the policy's own RNG stream, used when ``sampling.seed`` is None
            (two policies with the same seed give the same answers call after call).
        name: Policy name used in logs and records.
    """

    def __init__(self, seed: int = 0, name: str = "random") -> None:
        self.name = name
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        """For each prompt, ``num_samples`` answers ``<answer>MOVE</answer>`` with MOVE drawn
        uniformly from ``env.infos[agent]["legal_moves"]`` (``<answer></answer>`` if none).

        The RNG is ``np.random.default_rng(prompt.seed)`` for a prompt with its own seed, else
        ``np.random.default_rng(sampling.seed)`` when that seed is set, else the policy's own
        stream.

        Raises:
            ValueError: A prompt without an attached env and agent, or a non-None adapter.
            TypeError: The env does not report ``infos[agent]["legal_moves"]``.
        """
        _check_call(self.name, num_samples, adapter)
        seed = sampling.seed if sampling is not None else None
        rng = np.random.default_rng(seed) if seed is not None else self._rng
        results = []
        for prompt in prompts:
            env, agent = _env_and_agent(self.name, prompt)
            own = as_prompt(prompt).seed
            draw = np.random.default_rng(own) if own is not None else rng
            info = getattr(env, "infos", {}).get(agent)
            if info is None or "legal_moves" not in info:
                raise TypeError(
                    f"{type(env).__name__} reports no infos[{agent!r}]['legal_moves'], which "
                    "RandomPolicy draws from (was the env reset, and is the agent one of its agents?)"
                )
            legal = list(info["legal_moves"])
            group = []
            for _ in range(num_samples):
                move = legal[int(draw.integers(len(legal)))] if legal else ""
                group.append(_scripted_generation(f"<answer>{move}</answer>"))
            results.append(group)
        return results

    def __repr__(self) -> str:
        return f"RandomPolicy(seed={self.seed!r}, name={self.name!r})"


SCRIPTED_POLICIES: dict[str, type] = {
    "oracle": OraclePolicy,
    "heuristic": HeuristicPolicy,
    "random": RandomPolicy,
}
