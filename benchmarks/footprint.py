"""Memory and time of a training step, per env at its training preset, with the default model.

    python -m benchmarks.footprint                                    # every env, training
    python -m benchmarks.footprint --env webshop sokoban --commands train sft evaluate
    python -m benchmarks.footprint --model tiny-test --env plan_path  # smoke run (seconds)
    python -m benchmarks.footprint --env sokoban --backends hf vllm   # the generation paths side by side

Each command runs in its own process, exactly as a user runs it (``python -m trainers.at_grpo
--env ENV``: the env's preset picks the algorithm, team, reply lengths and tasks per step),
with only its length cut: one warm-up step and ``--steps`` measured ones, a one-task
validation evaluation before and after, no test evaluation. ``sft`` is ``python -m
trainers.sft --env ENV`` cut the same way (its demonstrations are recorded at the preset's
size), ``evaluate`` is ``python -m benchmarks.evaluate --env ENV --episodes 4 --seeds 0``.

What is measured, per command:

* **peak memory of the process tree**: a sampler in this process reads the PSS of the
  command and every process under it (sandbox runs, a vLLM engine, Ray workers) every 0.25 s
  and keeps the highest sum. PSS shares a page among the processes that map it, so the sum
  is what the machine holds for the whole tree (RSS would count a shared page once per process);
* **peak RSS of its largest process** (the kernel's ``ru_maxrss`` of the command's children);
* **which phase sets the peak**: the command's own process's peak so far as the first step's
  rollout ended and as its update ended (the ``memory/peak_mb/<phase>`` of its metrics.jsonl;
  a warm start's first step reads it after its demonstrations, validation loss, evaluation and
  update, printed under the table);
* **the floor**: the same peak for a process that only imports torch and transformers and
  loads the model (what no command on that model can go under);
* **seconds per step by phase** (generation, env, learner) and **generated tokens/s**: the mean
  over the measured steps of the run's ``metrics.jsonl``; the warm-up step (lazy allocation,
  first-call kernel choices) is left out.

The figures are a property of this machine: run it on an otherwise idle one (seconds are
wall time, and a second heavy process halves them). ``--json PATH`` writes every row as it
finishes, and a sweep longer than a sitting resumes from it: run the same command again and
the rows already in PATH (same model, steps and extra args; failed rows excepted) are kept,
not measured again. Rows of other envs or commands in PATH stay in it, so one file can collect
a sweep made of several commands.

``--backends`` runs each training and evaluation command once per generation backend
(``auto``, the default, is what a user's command picks: it is read back from the command's
output) and prints, per env and command, each backend's step time and peak memory as a ratio
to the first backend's: the measurement behind ``--backend auto``'s choice. ``sft`` trains and
evaluates with transformers whatever the backend, so it runs once.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import envs
from agents.models import DEFAULT_MODEL
from benchmarks.process_memory import tree_pss
from benchmarks.tables import print_table
from trainers.runtime.peak_memory import PEAK_PREFIX

__all__ = ["COMMANDS", "Footprint", "command_line", "main", "measure", "step_phases"]

COMMANDS = ("train", "sft", "evaluate")
SAMPLE_S = 0.25  # reading PSS (smaps) of a tree costs CPU: at 0.1 s it took ~15% of a core
MB = 2**20
PEAK_PHASES = ("rollout", "update")  # the phases whose readings the table shows
EVALUATE_EPISODES = 4


@dataclass
class Footprint:
    """One command's figures (memory in MB, time in seconds)."""

    env: str
    command: str
    argv: list[str]
    backend: str = "hf"
    asked_backend: str = "auto"
    """The ``--backends`` entry this row measured (``backend`` is what the command chose)."""
    peak_tree_mb: float = 0.0
    peak_process_mb: float = 0.0
    wall_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    tokens_per_s: float | None = None
    phase_peak_mb: dict[str, float] = field(default_factory=dict)
    """The command's main process's peak so far as each phase of its first step ended
    (``memory/peak_mb/<phase>`` in its metrics.jsonl): which phase raised it."""
    error: str | None = None


def command_line(
    command: str, env: str, model: str, out: Path, steps: int, extra: Sequence[str] = ()
) -> list[str]:
    """The command as a user types it, cut to one warm-up and ``steps`` measured steps
    (``extra``: more of its flags, e.g. ``--backend vllm``)."""
    common = ["--env", env, "--model", model, "--output-dir", str(out), *extra]
    short = ["--steps", str(steps + 1), "--eval-every", "0", "--eval-tasks", "1", "--test-tasks", "0"]
    if command == "train":
        return ["trainers.at_grpo", *common, "--run-name", "run", *short, "--no-progress"]
    if command == "sft":  # the validation loss once, at the end
        return [
            "trainers.sft",
            *common,
            "--run-name",
            "run",
            *short,
            "--val-every",
            str(steps + 1),
            "--no-progress",
        ]
    if command == "evaluate":
        return ["benchmarks.evaluate", *common, "--episodes", str(EVALUATE_EPISODES), "--seeds", "0"]
    raise ValueError(f"command {command!r} is not one of {COMMANDS}")


def measure(argv: list[str], log: Path, cwd: Path | None = None) -> tuple[float, float, float, int]:
    """Runs ``python -m argv`` with its output in ``log``; ``(peak tree PSS MB, peak RSS MB of its
    largest process, wall seconds, exit code)``."""
    peak = [0]
    started = time.perf_counter()
    with log.open("w") as stream:
        process = subprocess.Popen(
            [sys.executable, "-m", *argv], stdout=stream, stderr=subprocess.STDOUT, cwd=cwd, env=_quiet_env()
        )
        done = threading.Event()

        def sample() -> None:
            while not done.wait(SAMPLE_S):
                peak[0] = max(peak[0], tree_pss(process.pid))

        sampler = threading.Thread(target=sample, name="footprint-sampler", daemon=True)
        sampler.start()
        # wait4 reaps the command and gives its own resource usage (not the other children's of
        # this process); the sampler stops once the process is gone.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        sampler.join()
    wall = time.perf_counter() - started
    # ru_maxrss (KiB on Linux) from wait4 is the largest of the command's own peak and those of
    # the descendants it reaped (the kernel reports the zombie's RUSAGE_BOTH).
    largest = usage.ru_maxrss / 1024
    return peak[0] / MB, largest, wall, process.returncode


def _quiet_env() -> dict[str, str]:
    return {
        **os.environ,
        "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def _measured_steps(run_dir: Path, warmup: int) -> list[dict]:
    """The lines of ``run_dir/metrics.jsonl`` after the first ``warmup`` steps."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row for row in rows if row.get("step", 0) > warmup]


def step_phases(run_dir: Path, warmup: int = 1) -> tuple[dict[str, float], float | None]:
    """Mean seconds per step by phase, and mean generated tokens/s, over the steps of
    ``run_dir/metrics.jsonl`` after the first ``warmup``."""
    rows = _measured_steps(run_dir, warmup)
    if not rows:
        return {}, None
    phases = {}
    for key in ("time/generate", "time/env", "time/learner", "time/step"):
        values = [row[key] for row in rows if key in row]
        if values:
            phases[key.removeprefix("time/")] = sum(values) / len(values)
    rates = [row["tokens_per_s"] for row in rows if row.get("tokens_per_s")]
    return phases, (sum(rates) / len(rates) if rates else None)


def phase_peaks(run_dir: Path) -> dict[str, float]:
    """The process's peak so far as each phase of the first step ended (``memory/peak_mb/<phase>``):
    the first rollout and the first update each set their level there (later steps start from
    the memory the process kept, and the run's overall peak is the process column)."""
    rows = _measured_steps(run_dir, warmup=0)
    first = rows[0] if rows else {}
    return {k.removeprefix(PEAK_PREFIX): v for k, v in first.items() if k.startswith(PEAK_PREFIX)}


def measure_command(
    command: str,
    env: str,
    model: str,
    steps: int,
    workdir: Path,
    extra: Sequence[str] = (),
    backend: str = "auto",
) -> Footprint:
    """One command's row; ``backend``: the ``--backend`` it is given (``auto``: none, as a user
    types it; the row records the backend the command reports it chose)."""
    chosen = [] if backend == "auto" or command == "sft" else ["--backend", backend]
    out = workdir / f"{env}-{command}" / (backend if command != "sft" else "hf")
    argv = command_line(command, env, model, out, steps, [*chosen, *extra])
    row = Footprint(
        env=env, command=command, argv=argv, asked_backend="auto" if command == "sft" else backend
    )
    # A stopped earlier measurement of this row (a rerun of a --workdir sweep) left its run
    # directory, which the command would refuse to write into: the row is measured afresh.
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    log = out / "log.txt"
    print(f"[{env}] {command}: python -m {shlex.join(argv)}", flush=True)
    row.peak_tree_mb, row.peak_process_mb, row.wall_s, code = measure(argv, log)
    if code != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        row.error = f"exit {code}: {tail[0][:300]} (log {log})"
    elif command != "evaluate":
        row.phases, row.tokens_per_s = step_phases(out / "run")
        row.phase_peak_mb = phase_peaks(out / "run")
    row.backend = "hf" if command == "sft" else reported_backend(log) or backend
    outcome = f"failed ({row.error})" if row.error else f"peak tree PSS {_mb(row.peak_tree_mb)} MB"
    print(f"[{env}] {command}: {outcome}, largest process {_mb(row.peak_process_mb)} MB, {row.wall_s:.0f} s")
    return row


def reported_backend(log: Path) -> str | None:
    """The backend a command says it chose (its ``backend: NAME (why)`` line), if any."""
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("backend: "):
            return line.removeprefix("backend: ").split(" ", 1)[0]
    return None


def measure_floor(model: str, workdir: Path) -> Footprint:
    """The bare loaded model: a process that imports torch and transformers and loads it."""
    argv = ["benchmarks.footprint", "--bare-model", model]
    row = Footprint(env="-", command="bare model", argv=argv)
    row.peak_tree_mb, row.peak_process_mb, row.wall_s, code = measure(argv, workdir / "bare-model.txt")
    if code != 0:
        row.error = f"exit {code} (log {workdir / 'bare-model.txt'})"
    return row


def _load_only(model: str) -> None:
    from agents.models import load_model

    load_model(model)
    time.sleep(3 * SAMPLE_S)  # long enough for the sampler to see the loaded process


def _mb(value: float) -> str:
    return f"{value:,.0f}"


def print_rows(rows: list[Footprint], floor: Footprint, budget_mb: float) -> None:
    print(
        f"\nfloor (the bare model, {floor.argv[-1]}): peak tree PSS {_mb(floor.peak_tree_mb)} MB, "
        f"RSS {_mb(floor.peak_process_mb)} MB\n"
    )
    table = []
    for row in rows:
        if row.error:
            table.append([row.env, row.command, row.backend, "failed", *[""] * 9])
            continue
        p = row.phases
        seconds = [f"{p[k]:.1f}" if k in p else "-" for k in ("step", "generate", "env", "learner")]
        table.append(
            [
                row.env,
                row.command,
                row.backend,
                _mb(row.peak_tree_mb),
                _mb(row.peak_process_mb),
                " / ".join(_mb(row.phase_peak_mb[k]) if k in row.phase_peak_mb else "-" for k in PEAK_PHASES),
                f"{row.peak_tree_mb / floor.peak_tree_mb:.1f}x" if floor.peak_tree_mb else "-",
                *seconds,
                f"{row.tokens_per_s:.0f}" if row.tokens_per_s else "-",
                "yes" if row.peak_tree_mb <= budget_mb else f"NO (> {budget_mb / 1024:.0f} GB)",
            ]
        )
    header = ["env", "command", "backend", "tree MB", "process MB", "rollout / update MB", "x floor",
              "s/step", "generate", "env s", "learner", "tokens/s", "within"]  # fmt: skip
    print_table(header, table)
    for line in backend_ratios(rows):
        print(line)
    for row in rows:  # a warm start's phases are not a training step's: said in full
        others = [k for k in row.phase_peak_mb if k not in PEAK_PHASES]
        if others:
            readings = ", ".join(f"{k} {_mb(v)}" for k, v in row.phase_peak_mb.items())
            print(f"{row.env} {row.command}: peak of its main process as each phase ended: {readings} MB")
    for row in rows:
        if row.error:
            print(f"{row.env} {row.command} failed: {row.error}")


def backend_ratios(rows: list[Footprint]) -> list[str]:
    """Per env and command measured with several backends: each one's seconds per step (or the
    whole command's wall time, for evaluate) and peak tree memory over the first one's."""
    lines = []
    groups: dict[tuple[str, str], list[Footprint]] = {}
    for row in rows:
        if not row.error:
            groups.setdefault((row.env, row.command), []).append(row)
    for (env, command), group in groups.items():
        first = group[0]
        for other in group[1:]:
            if other.backend == first.backend:
                continue
            time_key = "step" if command != "evaluate" else None
            was = first.phases.get(time_key) if time_key else first.wall_s
            now = other.phases.get(time_key) if time_key else other.wall_s
            timing = f"{'s/step' if time_key else 'wall s'} {now / was:.2f}x" if was and now else "time -"
            memory = (
                f"tree memory {other.peak_tree_mb / first.peak_tree_mb:.2f}x" if first.peak_tree_mb else ""
            )
            lines.append(f"{env} {command}: {other.backend} / {first.backend}: {timing}, {memory}")
    return lines


def sweep_setting(args: argparse.Namespace) -> dict:
    """What the rows of one --json file must share to be comparable."""
    return {"model": args.model, "steps": args.steps, "extra_args": shlex.split(args.extra_args)}


def load_sweep(path: Path, setting: dict) -> tuple[Footprint | None, list[Footprint]]:
    """The floor and the finished rows an earlier run of the same sweep wrote to ``path``
    (nothing when the file does not exist). A file of another setting is refused, naming it."""
    if not path.is_file():
        return None, []
    try:
        record = json.loads(path.read_text())
        saved = {key: record[key] for key in setting}
        rows = [Footprint(**row) for row in record["rows"]]
        floor = Footprint(**record["floor"]) if record.get("floor") else None
    except (ValueError, KeyError, TypeError) as err:
        raise SystemExit(
            f"--json {path}: not a footprint sweep this version can continue ({err!r}); pass a new path"
        ) from err
    if saved != setting:
        differ = ", ".join(
            f"{key} {saved[key]!r} (now {setting[key]!r})" for key in setting if saved[key] != setting[key]
        )
        raise SystemExit(
            f"--json {path} holds a sweep with {differ}; rerun with its flags to continue it, "
            "or pass a new path"
        )
    floor = None if floor is None or floor.error else floor
    return floor, [row for row in rows if row.error is None]


def save_sweep(path: Path, setting: dict, floor: Footprint, rows: list[Footprint]) -> None:
    """Every row so far, written whole (a temp file, then a rename: a stop never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**setting, "floor": asdict(floor), "rows": [asdict(row) for row in rows]}
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1) + "\n")
    partial.replace(path)


def main(argv: list[str] | None = None) -> list[Footprint]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.footprint", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--env", nargs="+", default=None, help="envs (default: every registered one)")
    parser.add_argument("--commands", nargs="+", default=["train"], choices=COMMANDS)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--steps", type=int, default=2, help="measured steps after the warm-up step")
    parser.add_argument(
        "--backends",
        nargs="+",
        default=["auto"],
        choices=["auto", "hf", "vllm"],
        help="generation backends to run train and evaluate with (auto: what the command picks by itself)",
    )
    parser.add_argument(
        "--extra-args", default="", help="more flags for every command, e.g. --extra-args='--backend vllm'"
    )
    parser.add_argument("--budget-gb", type=float, default=3.0, help="the bound the 'within' column checks")
    parser.add_argument("--workdir", type=Path, default=None, help="run directories (default: a temp dir)")
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="write every row here as it finishes; a rerun keeps the rows in it",
    )
    parser.add_argument("--bare-model", default=None, help=argparse.SUPPRESS)  # the floor's own process
    args = parser.parse_args(argv)
    if args.bare_model:
        _load_only(args.bare_model)
        return []
    if importlib.util.find_spec("psutil") is None:
        parser.error("the tree reading needs psutil: pip install psutil (it is in the dev extra)")
    names = args.env or envs.registered_names()
    unknown = sorted(set(names) - set(envs.registered_names()))
    if unknown:
        parser.error(
            f"--env {' '.join(unknown)}: not registered; choose from {' '.join(envs.registered_names())}"
        )
    if args.steps < 1:
        parser.error(f"--steps {args.steps}: at least 1 measured step")
    setting = sweep_setting(args)
    floor, finished = load_sweep(args.json, setting) if args.json else (None, [])
    kept = {(row.env, row.command, row.asked_backend): row for row in finished}
    plan = [
        (env, command, backend)
        for env in names
        for command in args.commands
        for backend in (["auto"] if command == "sft" else args.backends)
    ]
    rows: list[Footprint] = []
    with tempfile.TemporaryDirectory(prefix="teamgym-footprint-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        floor = floor or measure_floor(args.model, workdir)
        extra = shlex.split(args.extra_args)
        for env, command, backend in plan:
            if (env, command, backend) in kept:
                print(f"[{env}] {command} ({backend}): kept from {args.json}", flush=True)
                rows.append(kept.pop((env, command, backend)))
                continue
            rows.append(measure_command(command, env, args.model, args.steps, workdir, extra, backend))
            if args.json:  # the rows of this plan so far, then the file's other rows
                save_sweep(args.json, setting, floor, [*rows, *kept.values()])
    if args.json:
        save_sweep(args.json, setting, floor, [*rows, *kept.values()])
    print_rows(rows, floor, args.budget_gb * 1024)
    if args.json:
        print(f"rows: {args.json}")
    return rows


if __name__ == "__main__":
    main()
