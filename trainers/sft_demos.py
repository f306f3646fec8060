"""Which turns a warm start (``trainers.sft``) learns from, as its config names them.

``--demos oracle`` (the default): the env's oracle plays every team of ``--teams`` on the
train-split tasks 0..train_tasks-1, and on the validation slice for the validation loss.
``--demos runs/<run>``: the successful train-split episodes a ``trainers.at_grpo`` run saved,
checked to be of this env and env_kwargs, replayed with the trained team's bindings
(rejection sampling with your own team). The recording itself, one team at a time, is
``trainers.demonstrations``; this module only chooses the tasks and runs and checks them
against the config, so errors name the flag to change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import envs
from agents.team import Team
from trainers.config import ConfigError
from trainers.demonstrations import oracle_demonstrations, replayed_demonstrations
from trainers.records import RecordedEpisode, TaskKey, Turn
from trainers.run.episodes import read_episodes
from trainers.sft_config import SFTConfig

__all__ = ["warm_start_demonstrations"]


def _budgets(config: SFTConfig) -> str:
    roles = ", ".join(f"{role} {n}" for role, n in sorted(config.role_max_new_tokens.items()))
    return f"{config.max_new_tokens} tokens" + (f"; {roles}" if roles else "")


def _oracle_demonstrations(config: SFTConfig, teams: dict[str, Team], tasks: list[int]) -> list[Turn]:
    env_id = envs.spec(config.env).id
    turns: list[Turn] = []
    for variant, team in teams.items():
        keys = [TaskKey(env_id, "train", seed) for seed in tasks]
        found, failed, over_budget = oracle_demonstrations(
            team,
            keys,
            stop=config.stop,
            env_kwargs=config.env_setup(variant).make_kwargs,
            max_new_tokens=config.max_new_tokens,
            role_max_new_tokens=config.role_max_new_tokens,
        )
        if over_budget:
            print(
                f"  {over_budget} oracle episode(s) of team {variant} had a reply longer than its token "
                f"budget ({_budgets(config)}): cut there, as a sampler cuts a reply, they no longer "
                "solve the task; skipped (--max-new-tokens N, or ROLE=N, keeps more of them)",
                file=sys.stderr,
            )
        if out_of_moves := failed - over_budget:
            print(
                f"  {out_of_moves} oracle episode(s) of team {variant} failed (horizon too short); skipped",
                file=sys.stderr,
            )
        turns += found
    return turns


def _successful_episodes(config: SFTConfig, run: str) -> tuple[str, list[RecordedEpisode]]:
    """The team variant of a training run and its successful train-split episodes (checked to
    be of this warm start's env and env_kwargs, so their replies replay)."""
    path = Path(run) / "config.json"
    if (Path(run) / "results.json").is_file():
        raise ConfigError(
            f"--demos {run} is a benchmarks.evaluate directory: it played held-out test tasks, which "
            "are never trained on; pass the run directory of a python -m trainers.at_grpo run"
        )
    if not path.is_file():
        raise ConfigError(f"--demos {run}: no config.json there; pass the run directory of a training run")
    saved = json.loads(path.read_text())
    variant, env_kwargs = saved.get("team", "mas"), saved.get("env_kwargs", {})
    if variant not in config.teams:
        raise ConfigError(
            f"--demos {run} trained the {variant!r} team; add it to --teams (e.g. --teams {variant})"
        )
    if env_kwargs != config.env_kwargs:
        raise ConfigError(
            f"--demos {run} played env_kwargs {env_kwargs}, this warm start uses {config.env_kwargs}; "
            f"pass --env-kwargs '{json.dumps(env_kwargs)}'"
        )
    try:
        episodes = read_episodes([run])
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(f"--demos {run}: {err}") from err
    env_id = envs.spec(config.env).id
    if other := sorted({e.task.env_id for e in episodes} - {env_id}):
        raise ConfigError(f"--demos {run} played {other}, not {env_id}; pass --env {other[0]}")
    # Only training tasks: a held-out task must never become a demonstration.
    return variant, [e for e in episodes if e.success and e.task.split == "train"]


def _replayed_demonstrations(config: SFTConfig, teams: dict[str, Team]) -> tuple[list[Turn], list[Turn]]:
    """Train and validation turns from the successful episodes of ``config.demos``'s runs:
    distinct (task, replies) episodes, replayed with the trained team's bindings. When the
    oracle gives no validation set, the episodes of every 10th task are held out for it."""
    by_variant: dict[str, dict[tuple, RecordedEpisode]] = {}
    for run in config.demos:
        if run != "oracle":
            variant, episodes = _successful_episodes(config, run)
            distinct = by_variant.setdefault(variant, {})
            for episode in episodes:
                distinct.setdefault((episode.task, episode.replies()), episode)
    recorded = [(v, e) for v, distinct in by_variant.items() for e in distinct.values()]
    held_out: set[TaskKey] = set()
    if "oracle" not in config.demos:
        tasks = sorted({episode.task for _, episode in recorded})
        if len(tasks) < 2:
            raise ConfigError(
                f"the runs in --demos hold successful episodes on {len(tasks)} training task(s); a warm "
                "start needs at least 2 (one is held out for the validation loss): train longer, raise "
                "--tasks-per-step, or add 'oracle' to --demos"
            )
        held_out = set(tasks[::10])
    train: list[Turn] = []
    val: list[Turn] = []
    failed = 0
    for variant, team in teams.items():
        mine = [episode for v, episode in recorded if v == variant]
        env_kwargs = config.env_setup(variant).make_kwargs
        for subset, out in ((False, train), (True, val)):
            chosen = [episode for episode in mine if (episode.task in held_out) == subset]
            turns, missed, _ = replayed_demonstrations(team, chosen, stop=config.stop, env_kwargs=env_kwargs)
            out += turns
            failed += missed
    skipped = f"; {failed} did not replay (the env changed) and were skipped" if failed else ""
    replayed = len(recorded) - failed
    print(f"  replayed {replayed} distinct successful episode(s) of the runs{skipped}", file=sys.stderr)
    return train, val


def warm_start_demonstrations(config: SFTConfig, teams: dict[str, Team]) -> tuple[list[Turn], list[Turn]]:
    """(train, validation) demonstration turns from every source of ``config.demos``."""
    train: list[Turn] = []
    val: list[Turn] = []
    if "oracle" in config.demos:
        train += _oracle_demonstrations(config, teams, list(range(config.train_tasks)))
        val += _oracle_demonstrations(config, teams, envs.validation_seeds(config.val_tasks))
    if any(source != "oracle" for source in config.demos):
        replayed_train, replayed_val = _replayed_demonstrations(config, teams)
        train += replayed_train
        val += replayed_val
    return train, val
