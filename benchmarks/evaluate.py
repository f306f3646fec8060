"""``python -m benchmarks.evaluate``: how good is a team on a benchmark, with numbers a
paper could print.

    python -m benchmarks.evaluate --suite planning --team mas --model smollm2-135m-instruct
    python -m benchmarks.evaluate --env sokoban --model runs/sokoban-at_grpo-mas-20261122-101010
    python -m benchmarks.evaluate --env plan_path --roles planner=oracle --baselines
    python -m benchmarks.evaluate --env sudoku --samples 8 --temperature 0.7 --difficulty all

Rows are teams: by default the baselines (random legal moves, the exact-solver oracle,
the model as a single agent and as the multi-agent team) and the main row (``--team``,
with ``--roles`` overrides such as a scripted planner). Columns are envs: ``--env`` ids or
every registered env of ``--suite`` (an env joins a suite through ``metadata["suite"]``,
so new envs show up without changes here), one column per ``--difficulty``.

Protocol (reproducible, and explicit about what it measures):

* only held-out tasks: seed ``s`` plays tasks ``s*N .. s*N+N-1`` of the protocol's test
  block (``N = --episodes``; the block starts at test index ``envs.HELDOUT_TEST_START``:
  the tasks before it were looked at during development), or the ``--task-seeds`` given;
  a training task raises. ``--split validation`` plays the same blocks of the train
  split's validation slice instead: where choices are made, so the test tasks stay unseen;
* each task is played ``--samples`` k times by the training rollout code (K = 1, no
  selection), all episodes of a (row, env, seed) batched into the same generate calls,
  with sampler seed ``EVAL_SEED + s``; greedy by default;
* every metric is computed per seed, then reported as mean +- standard error over seeds;
  success also carries its standard error over tasks (``success_se``, pooled over the
  seeds' blocks), and the note says how many tasks a number rests on (>= 256 for a
  headline: a task-level s.e. <= 0.031).
  Seed 0 of a checkpoint, with ``--episodes`` equal to its run's ``--eval-tasks``, plays
  that run's held-out tasks with its sampler seed and settings: the numbers it logged.

Output (``<output_dir>/<run_name>/``): ``results.json`` (every cell and seed, the exact
config, package versions, model identity with a weights hash, env ids and kwargs),
``results.md`` (one table per metric), ``plots/*.png``, ``transcripts/`` (a few episodes
per cell), ``episodes/`` (every episode of each cell's first seed, turn by turn) and
``report.html`` (all of it on one offline page: ``trainers.run.report``). The tables are printed
at the end.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import sys
import time
import warnings
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import envs
from agents.base import SamplingParams
from benchmarks.eval_columns import (
    check_roles,
    column_env_kwargs,
    env_split,
    seed_tasks,
    select_columns,
    team_roles,
)
from benchmarks.eval_config import ConfigError, EvalConfig
from benchmarks.eval_report import Cell, Column, markdown_tables, seed_spread, write_plots, write_results
from benchmarks.eval_teams import NotApplicable, PolicyBank, RowSpec, base_model_of, team_rows
from benchmarks.game_probes import GAME_PROBES
from benchmarks.ladder import ladder_metrics
from trainers.backends import AUTO, BACKENDS, apply_thread_policy, check_model_available, choose_backend
from trainers.cli import config_to_dict, parse_overrides
from trainers.env_setup import EnvSetup
from trainers.errors import run_command
from trainers.evaluation import EVAL_SEED, benchmark_metrics, evaluate_tasks
from trainers.presets import env_preset
from trainers.progress import RunProgress
from trainers.rollout import role_sampling_for
from trainers.run.dirs import check_writable_dir
from trainers.run.episodes import EPISODES_DIR, write_episode_file
from trainers.run.files import atomic_write_text
from trainers.run.provenance import git_commit, package_versions
from trainers.run.report import write_report
from trainers.run.transcripts import render_transcripts

__all__ = [
    "EvalResults",
    "check_roles",
    "column_env_kwargs",
    "run_evaluation",
    "select_columns",
    "seed_tasks",
    "team_roles",
    "main",
]


@dataclasses.dataclass
class EvalResults:
    """What ``run_evaluation`` produced: the cells, rows and columns, and where it wrote them."""

    out_dir: Path
    rows: list[str]
    columns: list[Column]
    cells: list[Cell]
    markdown: str

    def cell(self, row: str, env_id: str, difficulty: str | None = None) -> Cell:
        """The cell of ``row`` on ``env_id`` (an id without version matches its latest) at
        ``difficulty`` (None: the env's only column)."""
        env_id = envs.spec(env_id).id
        found = [
            cell
            for cell in self.cells
            if cell.row == row
            and cell.column.env_id == env_id
            and (difficulty is None or cell.column.difficulty == difficulty)
        ]
        if len(found) != 1:
            raise KeyError(
                f"{len(found)} cells match ({row!r}, {env_id!r}, {difficulty!r}); rows: {self.rows}"
            )
        return found[0]


# ---------------------------------------------------------------------------- one cell
def _sampling(config: EvalConfig, env_id: str) -> SamplingParams:
    preset = env_preset(env_id)
    temperature = config.temperature
    if temperature is None:
        temperature = 0.0 if config.samples == 1 else preset["temperature"]
    return SamplingParams(
        temperature=temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens or preset["max_new_tokens"],
        stop=config.stop,
    )


def _role_sampling(config: EvalConfig, sampling: SamplingParams, env_id: str) -> dict[str, SamplingParams]:
    """The roles that sample differently from ``sampling``: ``--temperature ROLE=T``, and
    ``--max-new-tokens ROLE=N`` over the env preset's (a tool agent's program length; a role
    the row's team lacks costs nothing)."""
    lengths = {**env_preset(env_id)["role_max_new_tokens"], **config.role_max_new_tokens}
    return role_sampling_for(sampling, config.role_temperature, lengths)


def _check_role_sampling(config: EvalConfig, columns: Sequence[Column]) -> None:
    """Refuse per-role sampling for a role no team of any evaluated env has (a typo)."""
    named = {*config.role_temperature, *config.role_max_new_tokens}
    known = {
        role
        for column in columns
        for roles in (envs.spec(column.env_id).teams or {}).values()
        for role in roles
    }
    if named and known and (unknown := sorted(named - known)):
        raise ConfigError(
            f"--temperature / --max-new-tokens name roles {unknown} that no evaluated team has; "
            f"roles: {sorted(known)} (write ROLE=VALUE with one of them)"
        )


def _run_cell(
    config: EvalConfig, bank: PolicyBank, spec: RowSpec, column: Column, out_dir: Path, progress: RunProgress
) -> Cell:
    cell = Cell(spec.name, column)
    setup = EnvSetup(column.env_id, spec.variant, column_env_kwargs(config, column))
    started = time.perf_counter()
    variants = envs.spec(column.env_id).teams or {spec.variant: ()}
    progress.phase(f"{spec.name} | {column.label}: building the team")
    try:
        if spec.variant not in variants:
            raise NotApplicable(f"{column.env_id} has no {spec.variant!r} team (it has {sorted(variants)})")
        probe_env = setup.make(split=env_split(config))
        team = bank.team(spec, probe_env)
    except (NotApplicable, ImportError) as err:  # ImportError: the env's optional extra is missing
        cell.skipped = str(err)
    if cell.skipped:
        progress.advance(len(config.seeds))
        return cell
    sampling = _sampling(config, column.env_id)
    if spec.ladder:
        return _run_ladder_cell(
            config, bank, spec, column, setup, probe_env, sampling, cell, progress, started
        )
    probe = GAME_PROBES.get(envs.spec(column.env_id).name)
    for seed in config.seeds:
        tasks = seed_tasks(config, column.env_id, seed)
        progress.phase(f"{spec.name} | {column.label} | seed {seed}: {len(tasks)} tasks")
        batch = evaluate_tasks(
            team,
            tasks,
            episodes_per_task=config.samples,
            sampling=sampling,
            env_kwargs=setup.make_kwargs,
            seed=EVAL_SEED + seed,
            validation=config.split == "validation",
            role_sampling=_role_sampling(config, sampling, column.env_id),
        )
        cell.seeds.append(seed)
        cell.tasks.append([task.seed for task in tasks])
        metrics = benchmark_metrics(batch.episodes)
        if probe is not None:  # a game's own metrics, from the policy asked at chosen states
            probe_sampling = dataclasses.replace(sampling, seed=EVAL_SEED + seed)
            task_seeds = [t.seed for t in tasks]
            metrics.update(probe(team, probe_env, task_seeds, probe_sampling, config.samples, batch.episodes))
        cell.per_seed.append(metrics)
        if seed == config.seeds[0]:
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{spec.name}__{column.label}").strip("_")
            # every episode of the first seed, in full: report.html's transcripts
            write_episode_file(out_dir / EPISODES_DIR / f"{name}.jsonl", batch.episodes, detailed=True)
            if config.transcripts:
                title = f"{spec.name} on {column.label}, seed {seed}"
                text = render_transcripts(seed, batch.episodes, limit=config.transcripts, title=title)
                (out_dir / "transcripts").mkdir(parents=True, exist_ok=True)
                atomic_write_text(out_dir / "transcripts" / f"{name}.md", text)
        success = cell.per_seed[-1].get("success", float("nan"))
        progress.show(f"last: {spec.name} | {column.label} | seed {seed}: success {success:.2f}")
        progress.advance()
    cell.seconds = time.perf_counter() - started
    return cell


# The ladder's opponent-against-opponent results per evaluation setting (``ladder_metrics``'
# fixed_pairs), kept for the process: fixed players repeat their games exactly.
_FIXED_PAIRS: dict[tuple, dict[tuple[str, str], list[float | None]]] = {}


def _run_ladder_cell(
    config: EvalConfig,
    bank: PolicyBank,
    spec: RowSpec,
    column: Column,
    setup: EnvSetup,
    env: Any,
    sampling: SamplingParams,
    cell: Cell,
    progress: RunProgress,
    started: float,
) -> Cell:
    """A ladder row's cell (``benchmarks.ladder``): per seed, the model against every ladder
    opponent in both seats on the seed's tasks, and the round robin's Elo ratings."""
    if len(env.roles) != 2 or not env.metadata.get("competitive"):
        cell.skipped = f"{column.env_id} is not a competitive two-seat game (metadata['competitive'])"
        progress.advance(len(config.seeds))
        return cell
    model = bank.team(dataclasses.replace(spec, ladder=()), env).bindings[env.roles[0]]
    opponents = {}
    for kind in spec.ladder:
        if kind == "pool":
            opponents.update(bank.pool_opponents())
            continue
        try:
            opponents[kind] = bank.team(RowSpec(kind, spec.variant, kind), env).bindings[env.roles[0]]
        except NotApplicable:  # e.g. no exact solver: that rung is left out
            continue
    for seed in config.seeds:
        tasks = seed_tasks(config, column.env_id, seed)
        progress.phase(f"{spec.name} | {column.label} | seed {seed}: {len(tasks)} tasks x both seats")

        def play(team, tasks=tasks, seed=seed):
            batch = evaluate_tasks(
                team, tasks, episodes_per_task=config.samples, sampling=sampling,
                env_kwargs=setup.make_kwargs, seed=EVAL_SEED + seed,
                validation=config.split == "validation",
            )  # fmt: skip
            return batch.episodes

        cell.seeds.append(seed)
        cell.tasks.append([task.seed for task in tasks])
        # everything the fixed players' games depend on: another model's evaluation in this
        # process (benchmarks.selfplay: every run, then the next) reuses them
        games = (column.env_id, json.dumps(setup.make_kwargs, sort_keys=True, default=str), seed,
                 tuple(task.seed for task in tasks), repr(sampling), config.samples, config.split,
                 config.backend, config.response_prefix,
                 tuple(bank.base_model_for(role) for role in env.roles))  # fmt: skip
        fixed = _FIXED_PAIRS.setdefault(games, {})
        cell.per_seed.append(ladder_metrics(play, env, model, opponents, fixed_pairs=fixed))
        progress.advance()
    cell.seconds = time.perf_counter() - started
    return cell


# ---------------------------------------------------------------------------- provenance
def _header(
    config: EvalConfig, bank: PolicyBank, rows: list[RowSpec], columns: list[Column], command: str | None
) -> dict[str, Any]:
    env_info = {}
    for column in columns:
        spec, kwargs = envs.spec(column.env_id), column_env_kwargs(config, column)
        env = envs.make(column.env_id, **kwargs)
        env_info[column.label] = {
            "id": spec.id,
            "version": spec.version,
            "entry_point": spec.entry_point if isinstance(spec.entry_point, str) else repr(spec.entry_point),
            "kwargs": kwargs,
            "max_cycles": getattr(env, "max_cycles", None),
            # what the env says its numbers depend on (WebShop: catalog size and goal type)
            "settings": env.benchmark_settings() if hasattr(env, "benchmark_settings") else {},
            "sampling": dataclasses.asdict(_sampling(config, column.env_id)),
        }
    return {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "config": config_to_dict(config),
        "versions": package_versions(),
        "git_commit": git_commit(),
        "models": bank.identity() if any(row.uses_model for row in rows) else {},
        "envs": env_info,
        "rows": [
            {"name": r.name, "variant": r.variant, "default": r.default, "roles": dict(r.overrides)}
            for r in rows
        ],
        "protocol": {
            "split": config.split,
            "first_task_index": (
                None if config.task_seeds else envs.HELDOUT_TEST_START if config.split == "test" else 0
            ),
            "episodes_per_seed": len(config.task_seeds) or config.episodes,
            "samples_per_task": config.samples,
            "sampler_seed": f"{EVAL_SEED} + seed",
            "se": "standard error over seeds: std(ddof=1) / sqrt(number of seeds); success_se per seed: "
            "over its tasks (trainers.evaluation.task_success_se)",
        },
    }


def _out_dir(config: EvalConfig) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    what = config.suite or "-".join(envs.spec(e).name.replace("/", "_") for e in config.env)
    out = Path(config.output_dir) / (config.run_name or f"{what}-{config.team}-{stamp}")
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"output directory {out} exists and is not empty; pass another --run-name")
    return out


# ---------------------------------------------------------------------------- the run
def run_evaluation(config: EvalConfig, command: str | None = None) -> EvalResults:
    """Evaluate every row on every column (module docstring) and write the results
    (``command``: the command line, recorded in results.json)."""
    columns = select_columns(config)
    roles = check_roles(config, team_roles(config, columns))
    _check_role_sampling(config, columns)
    rows = team_rows(config, roles)
    # A baseline of a team variant no column has (the 'single' row on a suite of games) would
    # be a row of n/a cells: it is left out. The --team rows always stay, to say why they are n/a.
    variants = {v for c in columns for v in (envs.spec(c.env_id).teams or {config.team: ()})}
    rows = [row for row in rows if row.variant in variants or row.variant == config.team]
    uses_model = any(row.uses_model for row in rows)
    if uses_model:  # a table of scripted rows imports no torch
        backend = choose_backend(config.backend, base_model_of(config), config.device)
        config = dataclasses.replace(config, backend=backend.name)  # results.json records the name
    bank = PolicyBank(config)
    if uses_model and (config.adapters or not bank.checkpoint_path):
        check_model_available(config.backend, config.model)
        for role, model in config.role_model.items():
            check_model_available(config.backend, model, role=role)
    check_writable_dir(config.output_dir, "--output-dir")
    out_dir = _out_dir(config)
    cells: list[Cell] = []
    # One unit: a row on a column with one seed (its block of held-out tasks).
    total = len(rows) * len(columns) * len(config.seeds)
    with RunProgress(total, desc="evaluate", unit="eval", enabled=config.progress) as progress:
        progress.phase("choosing CPU threads")
        threads = apply_thread_policy(config.threads, progress.write)  # before torch does any work
        if uses_model:
            progress.write(backend.describe())
        config = dataclasses.replace(config, threads=threads)  # recorded in results.json
        if bank.checkpoint_path and uses_model:
            progress.phase(f"loading {bank.checkpoint_path}")
            bank.trained()  # a run that does not fit the flags fails here, before anything is written
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"cannot create {out_dir} ({err.strerror}); pass --run-name a plain name"
            ) from None
        header = _header(config, bank, rows, columns, command)
        try:
            for column in columns:
                for spec in rows:
                    cells.append(_run_cell(config, bank, spec, column, out_dir, progress))
                    # Finished cells are on disk at once: an interrupted evaluation keeps them.
                    write_results(out_dir, {**header, "complete": False}, cells)
        finally:
            bank.close()  # engines shut down: the process may go on (a notebook, a test)
    note = evaluation_note(config)
    markdown = markdown_tables(cells, [r.name for r in rows], columns, note)
    write_results(out_dir, {**header, "complete": True}, cells, markdown)
    if config.plots:
        write_plots(out_dir, cells, [r.name for r in rows], columns)
    try:
        write_report(out_dir)
    except Exception as error:  # the results are written; a report bug must not hide them
        warnings.warn(f"writing {out_dir}/report.html failed: {error!r}", RuntimeWarning, stacklevel=2)
    return EvalResults(out_dir, [r.name for r in rows], columns, cells, markdown)


def evaluation_note(config: EvalConfig) -> str:
    """What the tables' numbers rest on: the seeds, the tasks (which ones, how many), the
    two standard errors, and a warning when there are too few tasks for a headline."""
    tasks = len(config.task_seeds) or config.episodes
    spread = seed_spread(config.seeds)
    if config.split == "validation":
        where = "validation-slice tasks (train split, never trained on)"
    elif config.task_seeds:
        where = "test tasks (--task-seeds)"
    else:
        first = envs.HELDOUT_TEST_START
        where = f"held-out test tasks (seed s: test index {first} + s*{tasks} on)"
    distinct = tasks if config.task_seeds else tasks * len(config.seeds)
    note = (
        f"{spread[0].upper()}{spread[1:]}; each seed: {tasks} {where} x {config.samples} sample(s). "
        f"Success also shows [± s.e. over the {distinct} tasks]. n/a: the team cannot play that env."
    )
    if config.split == "test" and distinct < envs.splits.HEADLINE_TEST_TASKS:
        note += (
            f" {distinct} tasks are fewer than the {envs.splits.HEADLINE_TEST_TASKS} a headline number needs "
            f"(task-level s.e. up to {0.5 / distinct**0.5:.3f}); e.g. --episodes 256 --seeds 0."
        )
    return note


def main(argv: Sequence[str] | None = None) -> EvalResults:
    """Command-line entry point: parse, evaluate, print the tables and where they were written.

    A configuration mistake exits with status 2 and one line on stderr (``--debug`` or
    ``TEAMGYM_DEBUG=1``: its traceback instead); an interrupt exits with 130.
    """
    return run_command("python -m benchmarks.evaluate", argv, _main)


def _main(args: list[str]) -> EvalResults:
    overrides = parse_overrides(
        EvalConfig,
        args,
        prog="python -m benchmarks.evaluate",
        description=(__doc__ or "").split("\n\n")[0],
        epilog="Fields left at None take the env's training preset (its TRAINING, envs.TrainingPreset).",
        aliases={"imports": ["--import"]},
        debug_option=True,
        choices={"env": envs.registered_names(), "backend": [AUTO, *BACKENDS]},
    )
    config = EvalConfig(**overrides)
    try:
        results = run_evaluation(config, command=shlex.join(["python", "-m", "benchmarks.evaluate", *args]))
    except KeyboardInterrupt:
        print("\ninterrupted: the finished cells are in results.json (complete: false)", file=sys.stderr)
        raise SystemExit(130) from None
    print(results.markdown)
    print(f"results: {results.out_dir / 'results.json'} (tables: results.md, page: report.html)")
    return results


if __name__ == "__main__":
    main()
