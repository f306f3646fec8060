"""The columns and tasks of ``python -m benchmarks.evaluate``: which envs and difficulties are
evaluated, with which constructor arguments, which team roles they have (checked against
``--roles`` before any model loads) and which held-out tasks each seed plays."""

from __future__ import annotations

from typing import Any

import envs
from benchmarks.eval_config import ConfigError, EvalConfig
from benchmarks.eval_report import Column
from benchmarks.suites import suite_env_ids
from trainers.env_setup import EnvSetup
from trainers.evaluation import check_eval_tasks
from trainers.presets import env_preset
from trainers.records import TaskKey


def select_columns(config: EvalConfig) -> list[Column]:
    """The env columns: ``--env`` ids or the ``--suite``'s envs, times ``--difficulty``
    (none given: the env preset's difficulty, e.g. easy)."""
    try:
        for module in config.imports:
            envs.import_env_module(module)
        env_ids = [envs.spec(e).id for e in config.env] if config.env else suite_env_ids(config.suite)
    except KeyError as err:
        raise ConfigError(f"env: {err.args[0]}") from None
    except ImportError as err:  # envs.EnvModuleError: one line naming the module and the fix
        raise ConfigError(str(err)) from None
    columns = []
    for env_id in dict.fromkeys(env_ids):
        presets = tuple(getattr(type(envs.make(env_id)), "DIFFICULTIES", ()))
        if not presets:
            columns.append(Column(env_id))
            continue
        wanted = config.difficulty or (env_preset(env_id)["env_kwargs"].get("difficulty"),)
        if wanted == ("all",):
            wanted = presets
        unknown = [d for d in wanted if d not in presets and d is not None]
        if unknown:
            raise ConfigError(
                f"difficulty {unknown} is not a preset of {env_id}; its presets: {', '.join(presets)}"
            )
        columns += [Column(env_id, d) for d in wanted]
    return columns


def team_roles(config: EvalConfig, columns: list[Column]) -> dict[str, tuple[str, ...]]:
    """The roles of the main row's team (``--team``) per column label, from an env built with
    the column's arguments (columns whose env has no such team are left out). Fails here, before
    any model loads, on an ``--env-kwargs`` an env does not take.

    Raises:
        ConfigError: An env refuses the ``--env-kwargs``; names the argument and its parameters.
    """
    found = {}
    for column in columns:
        teams = envs.spec(column.env_id).teams
        variant = config.team if teams is None or config.team in teams else next(iter(teams), config.team)
        setup = EnvSetup(column.env_id, variant, column_env_kwargs(config, column))
        try:
            env = setup.make_checked(config.env_kwargs, split="test", hidden=("split", "team", "difficulty"))
        except ImportError:  # an optional extra is missing: the column's cells say so (n/a)
            continue
        if variant == config.team:
            found[column.label] = tuple(env.roles)
    return found


def check_roles(config: EvalConfig, roles: dict[str, tuple[str, ...]]) -> set[str]:
    """The main team's roles over all columns (``roles``: per column label), after checking
    that every ``--roles`` role is one of them (a role that only some envs have is n/a on the
    others).

    Raises:
        ConfigError: A ``--roles`` role no evaluated env's team has; lists the valid ones.
    """
    every = {role for column_roles in roles.values() for role in column_roles}
    named = [item.partition("=")[0] for item in config.roles]
    unknown = [role for role in named if role not in every]
    if unknown:
        where = "; ".join(f"{label}: {', '.join(r)}" for label, r in roles.items()) or "none"
        example = next((r[0] for r in roles.values() if r), None)
        fix = f", e.g. --roles {example}=oracle" if example else f" (no env here has a {config.team!r} team)"
        raise ConfigError(
            f"roles: {', '.join(map(repr, unknown))} "
            + ("is not a role" if len(unknown) == 1 else "are not roles")
            + f" of the {config.team!r} team of the "
            f"evaluated envs (their roles: {where}); name one of those{fix}"
        )
    return every


def column_env_kwargs(config: EvalConfig, column: Column) -> dict[str, Any]:
    """``envs.make`` arguments of a column (team variant aside): the trainer's env preset
    (e.g. easy, ``max_cycles=2``) at the preset's own difficulty, the env's registered
    defaults (a horizon long enough for every level) at other difficulties, then
    ``--env-kwargs``."""
    preset = dict(env_preset(column.env_id)["env_kwargs"])
    if column.difficulty is not None and column.difficulty != preset.get("difficulty"):
        preset = {}
    if column.difficulty is not None:
        preset["difficulty"] = column.difficulty
    return {**preset, **config.env_kwargs}


def seed_tasks(config: EvalConfig, env_id: str, seed: int) -> list[TaskKey]:
    """The held-out tasks seed ``seed`` plays (module docstring); checked to be test tasks."""
    if config.split == "validation":
        seeds = envs.validation_seeds(config.episodes, start=seed * config.episodes)
        tasks = [TaskKey(env_id, "train", s) for s in seeds]
        check_eval_tasks(tasks, validation=True)
        return tasks
    if config.task_seeds:
        seeds = list(config.task_seeds)
    else:
        seeds = envs.heldout_seeds(config.episodes, start=seed * config.episodes)
    tasks = [TaskKey(env_id, "test", s) for s in seeds]
    check_eval_tasks(tasks)
    return tasks


def env_split(config: EvalConfig) -> str:
    """The env split the tasks of ``config.split`` live in (the validation slice is train seeds)."""
    return "train" if config.split == "validation" else "test"
