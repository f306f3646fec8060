"""The same task, model and budget through teamgym, TRL's ``GRPOTrainer`` and CoMLRL's
``MAGRPOTrainer``, in one run, with the ratios printed.

    bash benchmarks/peer_runs/install.sh            # once: the peers' own virtualenv, .peers-venv
    python -m benchmarks.peers                      # both tasks, 4 steps per library
    python -m benchmarks.peers --task single --steps 1 --eval-tasks 4   # quickest
    python -m benchmarks.peers --libraries teamgym  # teamgym's side alone (no peers needed)

Two tasks, both easy Plan-Path (``plan_path-v1``, 5x5) for one cycle, scored by teamgym's env
for every library (``benchmarks/peer_runs/task.py``):

* ``single``: one reply writes the whole route (team ``single``): teamgym's GRPO vs TRL's
  ``GRPOTrainer`` (single-agent GRPO, the default choice).
* ``team``: the planner writes a route, then the executor, reading it, the moves (team
  ``mas``, one LoRA adapter per role): teamgym's AT-GRPO vs CoMLRL's ``MAGRPOTrainer``
  (cooperative multi-LLM GRPO). How CoMLRL expresses the hand-over is in
  ``benchmarks/peer_runs/comlrl_magrpo.py``.

The same for every library, where it can be set (what cannot is said in each side's module):
the model weights (the default SmolLM2-135M-Instruct, from teamgym's cache; ``--init``: a warm
start merged in), the prompts token for token (chat template + the ``<answer>`` reply prefix),
the training tasks of every step (teamgym's ``training_tasks``), K, reply length (no stop
string), temperature, top-p, LoRA r/alpha on every linear layer, AdamW at a constant rate
without weight decay, the gradient clip, one optimiser step per step's samples, no KL term,
and torch threads.

Each library trains in its own process (the peers in their own virtualenv, so their pins
cannot break ours); its peak RSS is that process's (``os.wait4``). Per library: seconds per
step and in generation (``generate`` is timed alike in every process: teamgym's own clock,
the peers' ``GenerateMeter``), generated tokens per second of generation, peak RSS, and
held-out success before and after on the same test tasks, evaluated by one function
(``trainers.evaluation.evaluate``, greedy, one episode per task) on each library's trained
adapters. Then the ratios teamgym / peer. A library that cannot run says why in its row.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.tables import print_table

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PEERS_PYTHON = REPO / ".peers-venv" / "bin" / "python"
INSTALL_HINT = "bash benchmarks/peer_runs/install.sh"


@dataclass(frozen=True)
class Side:
    """One library on one task: how to run it (a module of benchmarks.peer_runs) and with what."""

    task: str
    library: str
    module: str
    peer: bool  # runs in the peers' virtualenv


TASKS: dict[str, dict[str, Any]] = {
    "single": {"roles": ["solver"], "team": "single", "algo": "grpo"},
    "team": {"roles": ["planner", "executor"], "team": "mas", "algo": "at_grpo"},
}
SIDES = (
    Side("single", "teamgym", "benchmarks.peer_runs.teamgym_side", peer=False),
    Side("single", "trl", "benchmarks.peer_runs.trl_grpo", peer=True),
    Side("team", "teamgym", "benchmarks.peer_runs.teamgym_side", peer=False),
    Side("team", "comlrl", "benchmarks.peer_runs.comlrl_magrpo", peer=True),
)


# ---------------------------------------------------------------------------- the spec
def model_directory(name: str, out: Path, init: Path | None = None) -> str:
    """A directory every library loads the same weights from: the built-in model's converted
    cache, a directory as given, or (``tiny-test``) the in-process model saved under ``out``;
    with ``init``, the model with that run's one shared LoRA adapter merged in (a warm start
    from ``python -m trainers.sft``), saved under ``out``."""
    from agents.models import load_model, resolve_model

    if init is not None:
        return merged_warm_start(init, out / "model-init")
    resolved = resolve_model(name)
    if Path(resolved).is_dir():
        return str(resolved)
    directory = out / "model"
    if not (directory / "config.json").exists():
        model, tokenizer = load_model(name)
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    return str(directory)


def merged_warm_start(run: Path, directory: Path) -> str:
    """``run``'s trained weights as a plain model directory (its shared adapter merged): every
    library then starts from the warm start and trains fresh adapters on it alike."""
    from trainers.run.trained_team import load_trained_team

    if (directory / "config.json").exists():
        return str(directory)
    trained = load_trained_team(run)
    policies = {id(b.policy): b for b in trained.bindings.values()}
    adapters = {b.adapter for b in trained.bindings.values()}
    if len(policies) != 1 or len(adapters) != 1 or None in adapters:
        raise SystemExit(
            f"--init {run}: needs a run with one shared LoRA adapter (a warm start from "
            "`python -m trainers.sft --policy shared`, its default); this one has adapters "
            f"{sorted(map(str, adapters))} on {len(policies)} model(s)"
        )
    binding = next(iter(trained.bindings.values()))
    policy = binding.policy
    policy.model.set_adapter(binding.adapter)
    merged = policy.model.merge_and_unload()
    merged.save_pretrained(directory)
    policy.tokenizer.save_pretrained(directory)
    return str(directory)


def make_spec(args: argparse.Namespace, task: str) -> dict[str, Any]:
    """The task and budget every side of ``task`` gets (``benchmarks/peer_runs/task.py``)."""
    from trainers.config import TrainConfig, resolve_config
    from trainers.rollout import training_tasks

    kind = TASKS[task]
    env_kwargs = {"difficulty": "easy", "max_cycles": 1}
    config = resolve_config(
        TrainConfig(
            env=args.env, env_kwargs=env_kwargs, team=kind["team"], algo=kind["algo"], model=args.model,
            tasks_per_step=args.tasks_per_step, steps=args.steps, seed=args.seed,
        )
    )  # fmt: skip
    steps = [[t.seed for t in training_tasks(config, step)] for step in range(1, args.steps + 1)]
    return {
        "task": task,
        "env": args.env,
        "env_kwargs": {**env_kwargs, "team": kind["team"]},
        "roles": kind["roles"],
        "prefix": config.response_prefix,
        "steps": steps,
        "model": model_directory(args.model, args.out, args.init),
        "num_generations": args.num_generations,
        "max_new_tokens": args.max_new_tokens,
        "temperature": args.temperature,
        "top_p": 1.0,
        "lr": args.lr,
        "lora_rank": config.lora_rank,
        "lora_alpha": config.lora_alpha,
        "max_grad_norm": config.max_grad_norm,
        "seed": args.seed,
        "threads": args.threads,
        "teamgym": {"algo": kind["algo"], "team": kind["team"]},
    }


# ---------------------------------------------------------------------------- one side
def run_side(side: Side, spec: dict[str, Any], out: Path, peers_python: Path) -> dict[str, Any]:
    """Train ``side`` in its own process; its result.json plus ``peak_rss_gb`` and ``wall_s``,
    or ``{"error": why}``."""
    if side.peer and not peers_python.exists():
        return {"error": f"not run: no peers virtualenv at {peers_python} (install: {INSTALL_HINT})"}
    out.mkdir(parents=True, exist_ok=True)
    spec_path = out / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    python = str(peers_python) if side.peer else sys.executable
    command = [python, "-m", side.module, str(spec_path), str(out)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": str(spec["threads"]),
        "TOKENIZERS_PARALLELISM": "false",
    }
    log = out / "log.txt"
    print(f"[{spec['task']}] {side.library}: training ({shlex.join(command)}; log {log})", flush=True)
    started = time.perf_counter()
    with log.open("w") as stream:
        process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    result_path = out / "result.json"
    if code != 0 or not result_path.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        return {"error": f"failed (exit {code}): {tail[0][:200]} (log {log})"}
    result = json.loads(result_path.read_text())
    result.update(peak_rss_gb=usage.ru_maxrss / 2**20, wall_s=wall)  # ru_maxrss: KiB on Linux
    return result


# ---------------------------------------------------------------------------- evaluation
def trained_team(side: Side, spec: dict[str, Any], result: dict[str, Any] | None) -> Any:
    """The team to evaluate: the base model with zero LoRA adapters (``result`` None: before
    training), teamgym's trained run, or a peer's adapters (PEFT format) on the base model."""
    import envs
    from agents.hf import HFPolicy, LoraSettings
    from agents.team import Team

    env = envs.make(spec["env"], **spec["env_kwargs"])
    if result is not None and side.library == "teamgym":
        from trainers.run.trained_team import load_trained_team

        trained = load_trained_team(result["run_dir"])
        return Team(env.roles, dict(trained.bindings))
    roles = tuple(spec["roles"])
    policy = HFPolicy(spec["model"], adapters=roles, lora=LoraSettings(spec["lora_rank"], spec["lora_alpha"]))
    if result is not None:
        load_peft_adapters(policy, Path(result["adapters"]), roles)
    return Team.per_role(env, policy, response_prefix=spec["prefix"])


def load_peft_adapters(policy: Any, directory: Path, roles: tuple[str, ...]) -> None:
    """Copy each role's adapter (``directory/<role>``, as PEFT's save_pretrained writes it) into
    ``policy``'s adapter of that name; refuses one whose keys do not all match."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    for role in roles:
        weights = load_file(directory / role / "adapter_model.safetensors")
        result = set_peft_model_state_dict(policy.model, weights, adapter_name=role)
        if result.unexpected_keys:
            raise ValueError(
                f"{directory / role}: adapter keys the model lacks: {result.unexpected_keys[:3]}"
            )


def evaluate_team(team: Any, spec: dict[str, Any], eval_tasks: int) -> dict[str, float]:
    """The metrics of ``team`` on the first ``eval_tasks`` held-out test tasks of the protocol's
    block (greedy, one episode each, no stop string: as every library generated in training)."""
    from agents.base import SamplingParams
    from trainers.evaluation import evaluate

    sampling = SamplingParams(temperature=0.0, max_new_tokens=spec["max_new_tokens"], stop=(), seed=0)
    result = evaluate(
        team, spec["env"], num_tasks=eval_tasks, sampling=sampling, env_kwargs=spec["env_kwargs"]
    )
    return result.metrics


def held_out_success(team: Any, spec: dict[str, Any], eval_tasks: int) -> float:
    return float(evaluate_team(team, spec, eval_tasks)["success"])


# ---------------------------------------------------------------------------- the report
def summarise(result: dict[str, Any]) -> dict[str, float]:
    steps = result["steps"]
    seconds = sum(s["step_s"] for s in steps)
    generate = sum(s["generate_s"] for s in steps)
    tokens = sum(s["generated_tokens"] for s in steps)
    return {
        "s_per_step": seconds / len(steps),
        "generate_s": generate / len(steps),
        "rest_s": (seconds - generate) / len(steps),
        "tokens_per_s": tokens / max(generate, 1e-9),
        "samples": sum(s["samples"] for s in steps) / len(steps),
        "peak_rss_gb": result["peak_rss_gb"],
    }


def report(task: str, rows: dict[str, dict[str, Any]], before: float | None) -> None:
    print(f"\n== {task}: {' vs '.join(rows)}")
    header = ["library", "version", "samples / step", "s / step", "generate s", "rest s", "gen tok/s"]
    header += ["peak RSS GB", "success before", "after"]
    table = []
    for library, result in rows.items():
        if "error" in result:
            table.append([library] + ["-"] * (len(header) - 1))
            continue
        s = summarise(result)
        seconds = [f"{s[key]:.1f}" for key in ("s_per_step", "generate_s", "rest_s", "tokens_per_s")]
        table.append(
            [library, result["version"], f"{s['samples']:.0f}", *seconds, f"{s['peak_rss_gb']:.2f}"]
            + [f"{before:.3f}" if before is not None else "-", f"{result.get('success', float('nan')):.3f}"]
        )
    print_table(header, table)
    for library, result in rows.items():
        if "error" in result:
            print(f"{library}: {result['error']}")
    ours = rows.get("teamgym", {})
    for library, result in rows.items():
        if library == "teamgym" or "error" in result or "error" in ours or not ours:
            continue
        a, b = summarise(ours), summarise(result)
        print(
            f"teamgym / {library}: time per step {a['s_per_step'] / b['s_per_step']:.2f}x "
            f"(generate {a['generate_s'] / max(b['generate_s'], 1e-9):.2f}x, rest "
            f"{a['rest_s'] / max(b['rest_s'], 1e-9):.2f}x), generated tokens/s "
            f"{a['tokens_per_s'] / max(b['tokens_per_s'], 1e-9):.2f}x, peak RSS "
            f"{a['peak_rss_gb'] / b['peak_rss_gb']:.2f}x, held-out success after "
            f"{ours.get('success', float('nan')):.3f} vs {result.get('success', float('nan')):.3f}"
        )


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["single", "team", "both"], default="both")
    parser.add_argument("--libraries", nargs="+", default=["teamgym", "trl", "comlrl"])
    parser.add_argument("--env", default="plan_path-v1")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument(
        "--init", type=Path, default=None, help="a warm start (trainers.sft run) every library starts from"
    )
    parser.add_argument("--steps", type=int, default=4, help="optimiser steps per library")
    parser.add_argument("--tasks-per-step", type=int, default=4)
    parser.add_argument("--num-generations", type=int, default=4, help="K: replies per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--lr",
        type=float,
        default=None,
        help="LoRA learning rate (default teamgym's: 5e-4, 1e-4 with --init)",
    )
    parser.add_argument("--eval-tasks", type=int, default=32, help="held-out test tasks, greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads of every library's process")
    parser.add_argument("--peers-python", type=Path, default=DEFAULT_PEERS_PYTHON)
    parser.add_argument("--out", type=Path, default=Path("runs") / f"peers-{time.strftime('%Y%m%d-%H%M%S')}")
    args = parser.parse_args(argv)
    if args.lr is None:
        args.lr = 1e-4 if args.init else 5e-4

    import torch

    torch.set_num_threads(args.threads)
    tasks = ["single", "team"] if args.task == "both" else [args.task]
    results: dict[str, dict[str, Any]] = {}
    for task in tasks:
        spec = make_spec(args, task)
        sides = [s for s in SIDES if s.task == task and s.library in args.libraries]
        rows: dict[str, dict[str, Any]] = {}
        for side in sides:
            rows[side.library] = run_side(side, spec, args.out / task / side.library, args.peers_python)
        print(f"[{task}] evaluating on {args.eval_tasks} held-out test tasks (greedy)", flush=True)
        before = (
            held_out_success(trained_team(sides[0], spec, None), spec, args.eval_tasks) if sides else None
        )
        for side in sides:
            if "error" not in rows[side.library]:
                team = trained_team(side, spec, rows[side.library])
                rows[side.library]["success"] = held_out_success(team, spec, args.eval_tasks)
        report(task, rows, before)
        results[task] = {"spec": spec, "before": before, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(f"\nresults: {args.out / 'results.json'}")
    return results


if __name__ == "__main__":
    main()
