"""What every check works on: ``EnvUnderCheck`` (how to build the env for one team variant),
``Skip`` (a check that does not apply), and ``step_texts`` (feeding action texts while
checking rewards and observations), which the hostile-input checks and the test suite use."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from envs.core import TextAECEnv
from envs.registration import EnvSpec
from envs.splits import split_range


class Skip(Exception):
    """Raised by a check that does not apply to this env (the message says why)."""


@dataclass(frozen=True)
class EnvUnderCheck:
    """How to build the env being checked for one team variant (``make(**overrides)``)."""

    label: str
    team: str
    split: str
    constructor: Callable[..., Any]
    env_kwargs: dict[str, Any] = field(default_factory=dict)

    def make(self, **overrides: Any) -> TextAECEnv:
        kwargs = {**self.env_kwargs, "team": self.team, "split": self.split, **overrides}
        build = self.constructor.make if isinstance(self.constructor, EnvSpec) else self.constructor
        return build(**kwargs)

    def seed(self, n: int) -> int:
        """The ``n``-th task seed of the split (0, 1, ... on train)."""
        return split_range(self.split)[n]

    @property
    def has_oracle(self) -> bool:
        return callable(getattr(self.make(), "oracle_response", None))


def step_texts(env: TextAECEnv, texts: Iterable[Any]) -> None:
    """Feed ``texts`` as the acting agents' actions; after each, every reward is finite and
    every observation inside its space."""
    for text in texts:
        if not env.agents:
            break
        agent = env.agent_selection
        env.step(None if (env.terminations[agent] or env.truncations[agent]) else text)
        for other in env.agents:
            assert math.isfinite(env.rewards[other]), f"reward of {other} is {env.rewards[other]}"
            obs = env.observe(other)
            assert env.observation_space(other).contains(obs), f"observation of {other} is outside its space"
