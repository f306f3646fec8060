"""``check_env``: is an environment conformant? teamgym's counterpart of Gymnasium's ``check_env``.

    python -m envs.check mylab.envs:mylab/guess          # every team variant, train split
    python -m envs.check sokoban --team mas --split test

    >>> report = envs.check_env("mylab/guess")           # or check_env(GuessEnv, env_kwargs={...})
    >>> print(report)
    >>> report.raise_for_failures()

One definition of "conformant", shared with teamgym's own test suite (which runs every
check below on every registered env). Per team variant:

* PettingZoo's own tools: ``api_test``, ``seed_test``, ``parallel_api_test`` (on the
  turn-based parallel view) and ``render_test``, with no warnings beyond the known ones
  every Text-space env triggers. They reset with seeds 0 and 42: those are mapped into the
  env's split (the ``n``-th seed of the split), so a ``split="test"`` env is checked too;
* the info contract at reset; spaces and observations not shared between envs or agents;
* ``clone()`` (an independent copy), pickling, determinism of a seeded episode, an unseeded
  reset continuing the seeded stream;
* truncation after ``max_cycles``; ``reward = alpha * team + local + seat``; both invalid-action
  modes (under ``"penalize"``: state unchanged, or the env's ``_forced_move`` played);
  non-text actions; hostile and fuzzed action text (never an exception, rewards
  finite, observations inside their space);
* splits: the env refuses the other split's seeds, and train and test tasks share no
  content (``TextAECEnv.task_fingerprint``);
* ``oracle_response`` (when the env has one) solves tasks of every ``DIFFICULTIES`` preset.

Every check runs even when an earlier one fails; an exception inside the env is reported
as that check's failure with the env's own frame, never raised out of ``check_env``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envs.checks import CHECKS, EnvUnderCheck, Skip
from envs.registration import EnvSpec, spec
from envs.splits import SPLITS, split_range

__all__ = [
    "CHECKS",
    "CheckReport",
    "CheckResult",
    "EnvUnderCheck",
    "check_env",
    "run_check",
    "subjects",
    "main",
]

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True)
class CheckResult:
    """One check on one team variant: ``status`` and what was seen (``detail``)."""

    check: str
    team: str
    status: Status
    detail: str = ""


@dataclass
class CheckReport:
    """Everything ``check_env`` found about one env: ``print(report)`` for the table."""

    env: str
    split: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No check failed (skipped ones do not count against the env)."""
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    def raise_for_failures(self) -> None:
        """Raise ``AssertionError`` with the report when any check failed."""
        if not self.passed:
            raise AssertionError(f"{self.env} is not conformant:\n{self}")

    def __str__(self) -> str:
        lines = [f"check_env {self.env} (split {self.split})"]
        width = max((len(r.check) for r in self.results), default=0)
        for team in dict.fromkeys(r.team for r in self.results):
            lines.append(f"  team {team}:")
            for r in (r for r in self.results if r.team == team):
                detail = r.detail.replace("\n", "\n" + " " * (width + 12))
                lines.append(f"    {r.status.upper():4}  {r.check:{width}}  {detail}".rstrip())
        counts = {s: sum(r.status == s for r in self.results) for s in ("pass", "fail", "skip")}
        lines.append(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- running
def _env_frame(err: BaseException) -> str:
    """Where in the env's code an exception was raised (the last frame outside teamgym's
    checks and PettingZoo's tools), e.g. ``guess_env.py:31 in _act``."""
    frames = traceback.extract_tb(err.__traceback__)
    outside = [
        f
        for f in frames
        if not re.search(r"(envs/check\.py|envs/checks/|pettingzoo/|gymnasium/)", f.filename)
    ]
    if not outside:
        return ""
    frame = outside[-1]
    return f" (at {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} in {frame.name})"


def run_check(name: str, subject: EnvUnderCheck) -> CheckResult:
    """Run one check; every outcome, an exception in the env included, becomes a result."""
    try:
        detail = CHECKS[name](subject)
    except Skip as skip:
        return CheckResult(name, subject.team, "skip", str(skip))
    except AssertionError as err:
        message = str(err) or "assertion failed"
        return CheckResult(name, subject.team, "fail", message + _env_frame(err.__cause__ or err))
    except Exception as err:  # noqa: BLE001 - a crashing env is a finding, not a crash of the checker
        return CheckResult(name, subject.team, "fail", f"{type(err).__name__}: {err}{_env_frame(err)}")
    return CheckResult(name, subject.team, "pass", detail)


def subjects(
    env: str | type | EnvSpec,
    *,
    teams: Sequence[str] | None = None,
    split: str = "train",
    env_kwargs: dict[str, Any] | None = None,
) -> list[EnvUnderCheck]:
    """The env to check once per team variant (``teams``: all of the class's ``TEAMS``)."""
    split_range(split)  # validates the split name
    if isinstance(env, str):
        env = spec(env)
    if isinstance(env, EnvSpec):
        label, variants = env.id, env.teams
    else:
        label, variants = getattr(env, "__name__", repr(env)), getattr(env, "TEAMS", None)
    if not variants:
        raise ValueError(f"{label}: the env class declares no TEAMS (variant -> roles); check_env needs them")
    unknown = [t for t in teams or () if t not in variants]
    if unknown:
        raise ValueError(f"{label} has no team {unknown}; its teams: {', '.join(variants)}")
    return [EnvUnderCheck(label, team, split, env, dict(env_kwargs or {})) for team in teams or variants]


def check_env(
    env: str | type | EnvSpec,
    *,
    teams: Sequence[str] | None = None,
    split: str = "train",
    env_kwargs: dict[str, Any] | None = None,
    checks: Sequence[str] | None = None,
) -> CheckReport:
    """Run every conformance check (module docstring) on an env, once per team variant.

    Args:
        env: A registered id (``"mylab/guess"``, ``"module:id"``), an ``EnvSpec`` or an env class.
        teams: Team variants to check (None: every variant in the class's ``TEAMS``).
        split: The split the env is made for (``"test"`` checks it on test seeds).
        env_kwargs: Constructor arguments for every env the checks build (sizes, say).
        checks: Names from ``CHECKS`` (None: all).

    Returns:
        A ``CheckReport``: ``print`` it, test ``.passed``, or call ``.raise_for_failures()``.
    """
    names = list(checks or CHECKS)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown checks {unknown}; checks: {', '.join(CHECKS)}")
    todo = subjects(env, teams=teams, split=split, env_kwargs=env_kwargs)
    report = CheckReport(todo[0].label, split)
    for subject in todo:
        report.results += [run_check(name, subject) for name in names]
    return report


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f'not JSON ({err}); e.g. \'{{"difficulty": "hard"}}\'') from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('must be a JSON object, e.g. \'{"difficulty": "hard"}\'')
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m envs.check",
        description="Check that an env is conformant (envs.check_env); exit status 1 if a check fails.",
    )
    parser.add_argument("env", help="env id, or module:id to import the module that registers it first")
    parser.add_argument("--team", nargs="+", help="team variants to check (default: all)")
    parser.add_argument("--split", choices=SPLITS, default="train", help="the split the env is made for")
    parser.add_argument("--env-kwargs", type=_json_object, default={}, help="constructor arguments as JSON")
    parser.add_argument("--checks", nargs="+", choices=list(CHECKS), help="run only these checks")
    args = parser.parse_args(argv)
    try:
        report = check_env(
            args.env, teams=args.team, split=args.split, env_kwargs=args.env_kwargs, checks=args.checks
        )
    except (KeyError, ValueError, ImportError) as err:
        print(f"python -m envs.check: error: {err.args[0] if err.args else err}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
