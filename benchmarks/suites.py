"""Env suites (``--suite``): the registered envs grouped by their ``metadata["suite"]``."""

from __future__ import annotations

import envs
from trainers.errors import ConfigError

__all__ = ["registered_suites", "suite_env_ids"]


def _latest_ids() -> list[str]:
    return sorted({envs.spec(envs.spec(env_id).name).id for env_id in envs.registered_ids()})


def _suite_of(env_id: str) -> str | None:
    # the spec's metadata when it carries the suite, else the env class's (making it imports its module)
    return envs.spec(env_id).metadata.get("suite") or envs.make(env_id).metadata.get("suite")


def registered_suites() -> list[str]:
    """Every suite some registered env belongs to, sorted, then ``all``."""
    return sorted({suite for env_id in _latest_ids() if (suite := _suite_of(env_id))}) + ["all"]


def suite_env_ids(suite: str) -> list[str]:
    """The latest version of every registered env in ``suite`` (``all``: every env).

    Raises:
        ConfigError: No registered env is in ``suite`` (the message lists the suites that have envs).
    """
    latest = _latest_ids()
    if suite == "all":
        return latest
    found = [env_id for env_id in latest if _suite_of(env_id) == suite]
    if not found:
        raise ConfigError(
            f"suite={suite!r} has no registered env; suites with envs: {', '.join(registered_suites())}. "
            "An env joins a suite through metadata['suite'] in its class."
        )
    return found
