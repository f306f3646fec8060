"""How a run's env is built: ``EnvSetup`` (env id, team variant, other ``envs.make``
arguments) and ``make_task_env`` (a fresh env reset to one task).

Training rollouts, evaluations, warm starts, ``load_trained_team`` and the benchmarks build a
run's env only through these, so they cannot drift apart. A constructor error caused by the
user's ``--env-kwargs`` becomes a ``ConfigError`` that names the argument and lists what the
env accepts.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import envs
from trainers.errors import ConfigError
from trainers.records import TaskKey

__all__ = ["EnvSetup", "make_task_env"]


@dataclass(frozen=True)
class EnvSetup:
    """The env a run plays: its registered id, its team variant (the env's ``team`` argument:
    which roles act, e.g. ``mas`` or ``single``) and the other ``envs.make`` arguments.

    Training rollouts, evaluations, warm starts, ``load_trained_team`` and the benchmarks
    build a run's env only through this (``make``, or ``make_kwargs`` handed to the rollouts,
    which build each task's env with ``make_task_env``), so they cannot drift apart.
    """

    env_id: str
    variant: str = "mas"
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def make_kwargs(self) -> dict[str, Any]:
        """``envs.make`` arguments (the variant as ``team``); the rollouts' ``env_kwargs``."""
        return {"team": self.variant, **self.kwargs}

    def make(self, split: str = "train"):
        """A fresh env of this setup (not reset) on ``split``'s tasks."""
        return envs.make(self.env_id, split=split, **self.make_kwargs)

    def make_checked(
        self,
        given: Mapping[str, Any],
        split: str = "train",
        option: str = "--env-kwargs",
        hidden: Sequence[str] = ("split", "team"),
    ):
        """:meth:`make`, where a ``TypeError`` or ``ValueError`` of the env's constructor is
        blamed on ``given`` (the env arguments the user passed in ``option``), when there are
        any: a ``ConfigError`` naming the unknown or bad argument and the env's parameters
        (less ``hidden``, the ones the command sets itself). Without ``given`` the error stays
        what it was (a preset's arguments are the env's own business).

        Raises:
            ConfigError: See above.
        """
        try:
            return self.make(split)
        except (TypeError, ValueError) as err:
            if not given:
                raise
            raise ConfigError(_env_kwargs_problem(self, given, split, option, hidden, err)) from err


def _env_parameters(env: Any) -> dict[str, Any] | None:
    """Keyword arguments of ``type(env)``'s constructor chain with their defaults (plus the fields
    of ``env.params``, an env's sizes when they are a dataclass); None when the chain ends in
    ``**kwargs`` that go nowhere known (any name may be right)."""
    found: dict[str, Any] = {}
    for klass in type(env).__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]  # less self
        for p in params:
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                found.setdefault(p.name, None if p.default is p.empty else p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    else:
        return None
    params = getattr(env, "params", None)
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        for f in dataclasses.fields(params):
            found.setdefault(f.name, getattr(params, f.name))
    return found


def _wrong_type(value: Any, default: Any) -> str | None:
    """The type ``value`` should have had, judging by a scalar ``default`` (None: fits, or unknown)."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(default, int):
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if isinstance(default, float):
        return None if isinstance(value, int | float) and not isinstance(value, bool) else "a number"
    if isinstance(default, str):
        return None if isinstance(value, str) else "a string"
    return None


def _env_kwargs_problem(
    setup: EnvSetup, given: Mapping[str, Any], split: str, option: str, hidden: Sequence[str], err: Exception
) -> str:
    """The one-line message of a constructor error caused by the user's env arguments ``given``."""
    name = envs.spec(setup.env_id).id
    try:  # the same env without the user's arguments: what it accepts
        parameters = _env_parameters(EnvSetup(setup.env_id, setup.variant).make(split))
    except (TypeError, ValueError):
        parameters = None
    if parameters is not None:
        listed = ", ".join(sorted(p for p in parameters if p not in hidden))
        unknown = sorted(set(given) - set(parameters))
        if unknown:
            has = "has no parameter " + ", ".join(map(repr, unknown))
            return f"{option}: {name} {has}; its parameters are: {listed}"
        for key, value in given.items():
            expected = _wrong_type(value, parameters[key])
            if expected is not None:
                return (
                    f"{option}: {name} takes {key} as {expected} (default {parameters[key]!r}), "
                    f"not {value!r}; e.g. {option} '{json.dumps({key: parameters[key]})}'"
                )
    return f"{option} {json.dumps(dict(given), default=repr)}: {name} refused them: {err}"


def make_task_env(task: TaskKey, env_kwargs: Mapping[str, Any] | None = None):
    """A fresh env reset to ``task`` (``envs.make(env_id, split=..., **env_kwargs)``)."""
    env = envs.make(task.env_id, split=task.split, **dict(env_kwargs or {}))
    env.reset(seed=task.seed)
    return env
