"""Does RL make a warm-started team better, does a team beat one agent, and which algorithm
gets there first? Seeds, error bars, equal wall time.

    python -m benchmarks.learning --warm-minutes 20 --minutes 10 --test-tasks 128 \
        --general medium hard --general-tasks 64 --micro-batch-tokens 1024 --run-name plan_path-walltime \
        --results docs/results/learning-plan_path-walltime.json   # four arms at equal wall time
    python -m benchmarks.learning --init runs/warm-plan_path --arms at_grpo-mas grpo-mas grpo-single \
        --steps 12 --results docs/results/learning-plan_path-heldout.json   # equal samples (12 steps)
    python -m benchmarks.learning --model tiny-test --env tests.trainers.conftest:test/one_token \
        --arms at_grpo-mas grpo-single --sft-steps 4 --steps 2 --seeds 0 1 --max-new-tokens 1 \
        --response-prefix ''   # smoke run

The protocol of the papers' ablations, from warm starts:

0. warm starts: ``trainers.sft`` on oracle demonstrations, one LoRA adapter per team the arms
   use, each trained for ``--sft-steps`` steps or, with ``--warm-minutes M``, for M minutes of
   updates (warm starts of equal minutes); or ``--init RUN``, one warm start for every arm;
1. the arms (``--arms``, default the four of the team-vs-single question), each started from
   the warm start (``trainers.at_grpo --init``) with every training seed of ``--seeds``:
   ``grpo-single`` one role does everything, GRPO on plain episodes (a single-role episode has
   half the turns, so it gets twice the tasks per step); ``at_grpo-mas`` planner + executor
   (one adapter each), AT-GRPO tree rollouts; ``grpo-mas`` the same team on plain episodes;
   ``at_grpo-tool`` / ``grpo-tool`` the tool team (a tool agent's program, a plan agent's
   moves: the planning envs' ``team="tool"``) with AT-GRPO trees / GRPO on plain episodes;
   ``gigpo-single`` / ``grpo-single-1x`` and ``gigpo-mas`` / ``grpo-mas``: GiGPO's ablation
   (ALFWorld, WebShop), anchor-state groups against episode-level groups on the same plain
   episodes and tasks per step;
2. the budget: ``--steps`` training steps per arm (equal samples; the table prints the
   responses each arm sampled, so equal budgets are checked, not assumed), or with
   ``--minutes M`` the same M minutes of training time per arm (the summed rollout + update
   time of its steps; evaluations excluded), ``--steps`` then only a cap. Equal wall time is
   the fair budget between algorithms whose steps cost different amounts (an AT-GRPO step is
   several times cheaper than a GRPO step here), as long as the machine runs at one speed: a
   VM's speed drifts (one arm's identical first step took 345 s, the other's 179 s, an hour
   apart), so ``--chunk-minutes C`` has the arms of a seed take turns, each training C minutes
   at a time (pausing at a checkpoint and resuming), and each cell records its tokens/s;
3. the held-out protocol (docs/evaluation.md, Held-out protocol): the learning curves play
   ``--eval-tasks`` tasks of the train split's validation slice (greedy) before training,
   every ``--eval-every`` steps (with ``--minutes``: every ``--eval-every-minutes`` of
   training time) and at the end, and every choice (lr, K, passes, temperature, reply
   length, budget) is made there; the reported numbers play ``--test-tasks`` held-out test
   tasks of the protocol's block, once before training (per team: the arms of a team start
   from the same weights) and once after. ``--general medium hard`` also plays
   ``--general-tasks`` test tasks at each of those difficulty presets, before (per warm-start
   weights: a warm start trained again on a new checkout is evaluated again) and after (per arm
   and seed): does what was learnt on the training difficulty carry over to boards never
   trained on? Test success is reported as mean +- s.e. over training seeds,
   next to its standard error over the test tasks.

Resumable: every finished (arm, seed) goes into the results JSON (``--results``) at once,
and a rerun of the same command skips them (an interrupted run is resumed from its last
checkpoint; one cut off before its first keeps its finished step-0 evaluations), so a
protocol longer than a session is finished by running the command again; a rerun with
different settings is refused, naming the flag. A team's warm start
(``benchmarks.warm_starts``) is trained when its first unfinished arm runs; the results file
records its steps, so a rerun on a new checkout (the file committed, ``runs/`` gone) trains it
again for exactly those steps. The step-0 evaluations are kept per weights checksum: weights
the file has not seen are evaluated again by their first arm, which records how they compare
with the first warm start's. Prints the table, the
generalisation table, the differences between arms with their standard errors, wall time per
arm and phase, and writes the JSON and a PNG beside it (validation success against training
minutes, or steps, with +- 1 s.e. bands), all over the cells of ``--arms`` x ``--seeds``; with
``--report-only`` it trains nothing and reports those cells the results file has finished
(e.g. a whole protocol after its cells were run one ``--arms ARM --seeds S`` at a time).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import envs
from benchmarks.learning_arms import ARM_TEAMS, ARMS, run_arm, train_arm
from benchmarks.learning_record import pinned_env_id, resume_record, write_record
from benchmarks.learning_report import plot, print_report, summarise
from benchmarks.turns import take_turns
from benchmarks.warm_starts import prepare_warm_start
from trainers.clock import UNCAPPED_STEPS

# The arms of the paper's headline at equal wall time: the single agent with GRPO against the
# teams, the tool team with both algorithms (issue: does the team beat one agent, and is it RL's
# tree grouping or the team that does it).
DEFAULT_ARMS = ("grpo-single", "at_grpo-mas", "at_grpo-tool", "grpo-tool")
# The differences printed (first - second, with their standard error): AT-GRPO's against GRPO on
# the same team, each team against the single agent, and the tool team against the copier team.
COMPARISONS = (
    ("at_grpo-mas", "grpo-mas"),
    ("at_grpo-mas", "grpo-single"),
    ("at_grpo-tool", "grpo-tool"),
    ("at_grpo-tool", "grpo-single"),
    ("grpo-tool", "grpo-single"),
    ("at_grpo-tool", "at_grpo-mas"),
    ("gigpo-single", "grpo-single-1x"),
    ("gigpo-mas", "grpo-mas"),
)


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="plan_path")
    parser.add_argument(
        "--env-kwargs", default="{}", help="JSON, merged over the env preset (trainers/config.py)"
    )
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument(
        "--init", default=None, help="a warm-start run dir every arm starts from (skips step 0)"
    )
    parser.add_argument(
        "--warm-minutes",
        type=float,
        default=0.0,
        help="train each team's warm start for this many minutes of updates (0: --sft-steps steps)",
    )
    # None: trainers.sft's defaults (SFTConfig), the measured warm-start recipe.
    parser.add_argument("--sft-steps", type=int, default=None, help="default: SFTConfig.steps")
    parser.add_argument("--sft-batch-size", type=int, default=None, help="default: SFTConfig.batch_size")
    parser.add_argument("--sft-lr", type=float, default=None, help="default: SFTConfig's (by --lora)")
    parser.add_argument("--sft-train-tasks", type=int, default=None, help="default: SFTConfig.train_tasks")
    parser.add_argument("--arms", nargs="+", default=list(DEFAULT_ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="equal wall time: each arm trains this many minutes (rollout + update); 0: --steps",
    )
    parser.add_argument(
        "--chunk-minutes",
        type=float,
        default=0.0,
        help="with --minutes: the arms of a seed take turns, each training this many minutes at a "
        "time, so that all of them train on the same machine state (0: each arm in one go)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per arm (default 12; with --minutes a cap, default: none)",
    )
    parser.add_argument(
        "--tasks-per-step", type=int, default=4, help="of the team arms (the single arm: twice)"
    )
    parser.add_argument("-K", "--num-generations", type=int, default=4)
    # lr and temperature: the better of (5e-4, 1.0) and (1e-4, 0.7) on the validation slice
    # from the default warm start, AT-GRPO arm, seed 0, 12 steps (docs/results.md).
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument(
        "--micro-batch-tokens",
        type=int,
        default=None,
        help="the learner's token budget (default: training's); a protocol setting, as it sets the step time",
    )
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--max-new-tokens", type=int, default=16, help="of the move replies (a tool's program: its preset)"
    )
    parser.add_argument("--eval-tasks", type=int, default=64, help="validation tasks of the curves")
    parser.add_argument("--eval-every", type=int, default=6, help="steps; 0: only before and after")
    parser.add_argument(
        "--eval-every-minutes",
        type=float,
        default=None,
        help="with --minutes: evaluate every N training minutes (default: --minutes / 2)",
    )
    parser.add_argument(
        "--eval-split",
        choices=["validation"],
        default="validation",
        help="the curves play the validation slice; the test tasks give the numbers",
    )
    parser.add_argument(
        "--test-tasks",
        type=int,
        default=envs.splits.HEADLINE_TEST_TASKS,
        help="held-out test tasks (the protocol's block) before and after each run",
    )
    parser.add_argument(
        "--general",
        nargs="*",
        default=[],
        help="difficulty presets never trained on, played after each run (e.g. medium hard)",
    )
    parser.add_argument("--general-tasks", type=int, default=128, help="test tasks per --general difficulty")
    parser.add_argument("--response-prefix", default="<answer>")
    parser.add_argument("--output-dir", default="runs/learning-benchmark")
    parser.add_argument("--run-name", default=None, help="default: the env's name; a rerun resumes it")
    parser.add_argument("--results", default=None, help="results JSON (default: <run dir>/learning.json)")
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: the table and curves of the results file's finished cells of --arms x --seeds",
    )
    args = parser.parse_args(argv)
    try:  # the version is part of the protocol: a file measured on plan_path-v1 is not resumed on -v2
        args.env = pinned_env_id(args.env)
    except KeyError as error:
        parser.error(f"--env {args.env}: {error.args[0]}")
    if args.test_tasks < 1:
        parser.error("--test-tasks must be >= 1: the benchmark's numbers are the held-out test success")
    if args.minutes < 0 or args.warm_minutes < 0:
        parser.error("--minutes and --warm-minutes must be >= 0 (0: count steps instead)")
    if args.eval_every_minutes is not None and not args.minutes:
        parser.error("--eval-every-minutes needs --minutes (without it, pass --eval-every STEPS)")
    if args.chunk_minutes < 0 or (args.chunk_minutes and not args.minutes):
        parser.error(
            "--chunk-minutes: the arms take turns within an equal-wall-time budget; "
            "pass --minutes, and a chunk > 0"
        )
    if args.init and args.warm_minutes:
        parser.error("--warm-minutes trains the warm starts; --init reuses one: pass one of them")
    if args.init and not args.report_only:  # a results file outlives runs/: say so before any work
        from trainers.run.checkpoint import find_checkpoint

        try:
            find_checkpoint(args.init)
        except (FileNotFoundError, ValueError) as error:
            parser.error(
                f"--init {args.init}: {error} (on a new checkout, train that warm start again first: "
                "docs/results.md gives the trainers.sft command of each benchmark's --init)"
            )

    from trainers.config import TrainConfig

    if args.steps is None:
        args.steps = UNCAPPED_STEPS if args.minutes else 12
    if args.minutes:
        args.eval_every = 0  # the minute marks evaluate
        if args.eval_every_minutes is None:
            args.eval_every_minutes = args.minutes / 2
    out = Path(args.output_dir) / (args.run_name or envs.spec(args.env).name.replace("/", "_"))
    out.mkdir(parents=True, exist_ok=True)
    results = Path(args.results) if args.results else out / "learning.json"
    record = resume_record(results, args, ARM_TEAMS)
    # The file is one protocol, often run a cell at a time (--arms ARM --seeds S): its args name
    # every arm and seed it holds, not only the last command's.
    recorded_arms = set(record.get("args", {}).get("arms", [])) | {r["arm"] for r in record["runs"]}
    recorded_seeds = set(record.get("args", {}).get("seeds", [])) | {r["seed"] for r in record["runs"]}
    record["args"] = {key: value for key, value in vars(args).items() if key != "report_only"}
    record["args"]["arms"] = [name for name in ARMS if name in recorded_arms | set(args.arms)]
    record["args"]["seeds"] = sorted(recorded_seeds | set(args.seeds))
    for key in ("warm_start", "warm_start_min", "warm_start_steps"):
        record.setdefault(key, {})
    base = TrainConfig(
        env=args.env,
        # The arms compare algorithms and teams, and the recorded cells generated with transformers:
        # not --backend auto, which picks vLLM where it is installed.
        backend="hf",
        env_kwargs=json.loads(args.env_kwargs),
        model=args.model,
        steps=args.steps,
        train_minutes=args.minutes,
        eval_every_minutes=args.eval_every_minutes or 0.0,
        tasks_per_step=args.tasks_per_step,
        num_generations=args.num_generations,
        lr=args.lr,
        passes=args.passes,
        **({"micro_batch_tokens": args.micro_batch_tokens} if args.micro_batch_tokens else {}),
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        eval_tasks=args.eval_tasks,
        eval_every=args.eval_every,
        eval_split=args.eval_split,
        test_tasks=args.test_tasks,
        response_prefix=args.response_prefix,
        output_dir=str(out),
        transcripts=2,
        keep_checkpoints=1,
        # an interrupted arm loses at most half its steps (with --minutes: its marks checkpoint)
        checkpoint_every=UNCAPPED_STEPS if args.minutes else max(1, args.steps // 2),
        progress=args.progress,
    )
    done = {(r["arm"], r["seed"]) for r in record["runs"]}
    warm: dict[str, str] = {}  # team -> warm-start run dir, made when its first arm runs
    sums: dict[str, str] = {}  # team -> the checksum of its warm start's weights
    step0 = record.setdefault("step0_by_weights", {})  # weights checksum -> step-0 evaluations
    for seed in args.seeds:
        todo = []
        for name in args.arms:
            if (name, seed) in done:
                print(f"{name} seed {seed}: done (in {results}), skipped")
            elif args.report_only:
                print(f"{name} seed {seed}: not run yet, left out of the report (--report-only)")
            else:
                todo.append(name)
        for name in todo:
            team = ARMS[name][1]
            if team not in warm:
                warm[team], sums[team] = prepare_warm_start(
                    args, out, team, record, lambda: write_record(results, record)
                )
        if args.chunk_minutes:  # the arms take turns; the last turn ends each arm's budget

            def train_to(name: str, mark: float, seed: int = seed) -> None:
                team = ARMS[name][1]
                start = step0.setdefault(sums[team], {})
                train_arm(name, seed, base, record["initial"], warm[team], start, pause_minutes=mark)
                write_record(results, record)  # the step-0 evaluations an arm played

            take_turns(
                todo,
                args.minutes,
                args.chunk_minutes,
                lambda name, seed=seed: out / f"{name}-seed{seed}",
                train_to,
                label=lambda name, seed=seed: f"{name} seed {seed}",
            )
        for name in todo:
            team = ARMS[name][1]
            weights = sums[team]
            start = step0.setdefault(weights, {})
            cell = run_arm(name, seed, base, record["initial"], args, warm[team], weights, start)
            cell["warm_start_weights"] = weights
            record["runs"].append(cell)
            write_record(results, record)  # a finished cell is never run again
    asked = [r for r in record["runs"] if r["arm"] in args.arms and r["seed"] in args.seeds]
    if args.report_only and not asked:
        raise SystemExit(
            f"python -m benchmarks.learning --report-only: {results} has no finished cell of --arms "
            f"{' '.join(args.arms)} x --seeds {' '.join(map(str, args.seeds))}; run the same command "
            "without --report-only first"
        )
    # The report, the file's summary and its curves cover every finished cell of the file, so a
    # command that runs one cell does not leave a table and a PNG of that cell alone.
    summary = summarise(record["runs"], ARM_TEAMS, args.eval_every_minutes or 0.0)
    print_report(summary, args, record["warm_start_min"], COMPARISONS)
    record["summary"] = summary
    write_record(results, record)
    budget = f"{args.minutes:g} training minutes per arm" if args.minutes else f"{args.steps} steps per arm"
    png = plot(summary, results.with_suffix(".png"), f"{args.env}: validation success, {budget}")
    print(f"results: {results}" + (f", curves: {png}" if png else ""))
    return summary


if __name__ == "__main__":
    main()
