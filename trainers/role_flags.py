"""The per-role flags of a training run, parsed and checked against the team's roles:
``--roles ROLE=POLICY`` (scripted roles), ``--frozen ROLE[=RUN]`` (roles that play but never
train) and the per-role values (``--temperature/--max-new-tokens/--model ROLE=VALUE``).

Errors name the role and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agents.scripted import SCRIPTED_POLICIES
from trainers.config_fields import parse_role_policies
from trainers.errors import ConfigError

__all__ = [
    "check_role_names",
    "check_scripted_roles",
    "frozen_roles",
    "scripted_roles",
]


def scripted_roles(items: Sequence[str]) -> dict[str, str]:
    """``--roles`` items ``ROLE=POLICY`` as role -> scripted policy name, checked."""
    example = "--roles second=random (the model plays every role not named)"
    return parse_role_policies(items, tuple(SCRIPTED_POLICIES), example)


def frozen_roles(items: Sequence[str]) -> dict[str, str | None]:
    """``--frozen`` items ``ROLE`` / ``ROLE=RUN`` as role -> the run whose weights it plays (None:
    ``--init``'s, else its base model), checked."""
    found: dict[str, str | None] = {}
    for item in items:
        role, sep, run = item.partition("=")
        if not re.fullmatch(r"[a-z][a-z0-9]*", role) or (sep and not run):
            raise ConfigError(
                f"frozen: {item!r} is not ROLE or ROLE=RUN; e.g. --frozen executor, --frozen executor=runs/w"
            )
        if role in found:
            raise ConfigError(f"frozen: each role may be named once, got {list(items)}")
        found[role] = run or None
    return found


def check_scripted_roles(
    scripted: Mapping[str, str], roles: Sequence[str], frozen: Mapping[str, str | None] | None = None
) -> None:
    """Every scripted (``--roles``) and frozen (``--frozen``) role is one of the team's, none is
    both, and at least one role is left to train."""
    frozen = frozen or {}
    for flag, named in (("roles", scripted), ("frozen", frozen)):
        unknown = [role for role in named if role not in roles]
        if unknown:
            raise ConfigError(f"{flag}: {unknown} not in the team's roles {list(roles)}; name one of those")
    both = sorted(set(scripted) & set(frozen))
    if both:
        raise ConfigError(f"frozen: {both} scripted too (--roles); a role is played by one or the other")
    if set(roles) <= set(scripted) | set(frozen):
        what = "scripted" if not frozen else "scripted or frozen"
        raise ConfigError(
            f"roles: every role ({list(roles)}) is {what}, so nothing would train; leave one to the model"
        )


def check_role_names(config: Any, roles: tuple[str, ...], team: str) -> None:
    """Refuse per-role values (``role_temperature``, ``role_max_new_tokens``, ``role_model``) for
    roles that ``team`` (its roles: ``roles``) does not have (a typo would otherwise change
    nothing, silently)."""
    for name in ("role_temperature", "role_max_new_tokens", "role_model"):
        unknown = sorted(set(getattr(config, name, {}) or {}) - set(roles))
        if unknown:
            flag = "--" + name.removeprefix("role_").replace("_", "-")
            raise ConfigError(
                f"{flag} names {unknown}, not roles of {config.env} team {team!r}: its roles are "
                f"{list(roles)} (write {flag} ROLE=VALUE with one of them)"
            )
