"""The same training steps on LocalRuntime and on RayRuntime (1 and 2 rollout workers), in one run.

    python -m benchmarks.runtime                          # plan_path preset, the default model, 2 steps each
    python -m benchmarks.runtime --model tiny-test --steps 1   # quickest (the test suite runs this)
    python -m benchmarks.runtime --no-lora                # full weights: published by a gloo broadcast

Each runtime starts from the same weights and plays the same steps of ``python -m
trainers.at_grpo`` (``train_step``: collect, advantages, update, publish). Reported per
runtime: start-up seconds (the local team and learner; for Ray also the private cluster and
its actors), seconds per step and per phase (generate, learn, publish), then one more collect
of a step's tasks alone (rollout throughput: samples per second). Ratios: Ray / local per
step and start-up, and the 2-worker / 1-worker rollout throughput. Last, whether every Ray run
logged the same metrics as the local one (timings aside; the largest difference): 0 with one
rollout worker, float noise with two (the prompts of a generate call differ, so a model's
logprobs may move in the 7th digit).

Needs Ray (``pip install 'teamgym[ray]'``). The actors share this machine's cores with each
other and with this process, so on a small machine Ray's numbers are its overhead, not a
speed-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

from benchmarks.tables import print_table
from trainers.backends import apply_thread_policy
from trainers.config import TrainConfig, resolve_config
from trainers.rollout import step_request, training_sampling
from trainers.runtime import make_runtime
from trainers.runtime.step import MACHINE_METRICS, train_step
from trainers.seeding import seed_everything


def measure(config: TrainConfig, steps: int) -> dict[str, Any]:
    """Start-up, ``steps`` training steps and one extra collect on ``config.runtime``."""
    seed_everything(config.seed)
    started = time.perf_counter()
    runtime = make_runtime(config, config.env_setup.make())
    out: dict[str, Any] = {"start_s": time.perf_counter() - started, "metrics": []}
    try:
        for step in range(1, steps + 1):
            out["metrics"].append(train_step(config, runtime, step)[0])
        request = step_request(config, steps + 1, training_sampling(config))
        started = time.perf_counter()
        batch = runtime.collect(request)
        out["collect_s"] = time.perf_counter() - started
        out["collect_samples"] = len(batch.samples)
    finally:
        runtime.close()
    return out


def _mean(result: dict[str, Any], key: str) -> float:
    values = [m.get(key, 0.0) for m in result["metrics"]]
    return sum(values) / max(len(values), 1)


def metric_gap(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest absolute difference between two runs' logged metrics, timings aside (inf when
    they logged different keys): 0 for the very same floats."""
    gap = 0.0
    for x, y in zip(a["metrics"], b["metrics"], strict=True):
        keys = {k for k in x if not k.startswith(MACHINE_METRICS)}
        if keys != {k for k in y if not k.startswith(MACHINE_METRICS)}:
            return float("inf")
        gap = max([gap, *(abs(float(x[k]) - float(y[k])) for k in keys)])
    return gap


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="plan_path")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--steps", type=int, default=2, help="training steps per runtime")
    parser.add_argument("--tasks-per-step", type=int, default=None, help="default: the env preset")
    parser.add_argument("--threads", type=int, default=None, help="torch threads of every process")
    parser.add_argument(
        "--lora",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="--no-lora: full weights (Ray publishes them by a gloo broadcast instead of the object store)",
    )
    args = parser.parse_args(argv)

    threads = apply_thread_policy(args.threads, print)  # the same count in the driver and every actor
    base = resolve_config(
        TrainConfig(
            env=args.env,
            model=args.model,
            backend="hf",  # the runtimes are compared, on the generation path every run can use
            tasks_per_step=args.tasks_per_step,
            threads=threads,
            progress=False,
        )
    )
    arms = {
        "local": base,
        "ray, 1 worker": dataclasses.replace(base, runtime="ray", rollout_workers=1),
        "ray, 2 workers": dataclasses.replace(base, runtime="ray", rollout_workers=2),
    }
    results = {name: measure(config, args.steps) for name, config in arms.items()}

    print(
        f"\n{args.env}: {base.tasks_per_step} tasks x K={base.num_generations}, {base.max_new_tokens} new "
        f"tokens, model {args.model} ({'LoRA' if args.lora else 'full weights'}), {args.steps} steps per "
        f"runtime, {threads} torch threads per process\n"
    )
    rows = []
    for name, result in results.items():
        rows.append(
            [
                name,
                f"{result['start_s']:.1f}",
                f"{_mean(result, 'time/step'):.1f}",
                f"{_mean(result, 'time/generate'):.1f}",
                f"{_mean(result, 'time/learner'):.1f}",
                f"{_mean(result, 'time/sync'):.3f}",
                f"{result['collect_samples'] / result['collect_s']:.1f}",
            ]
        )
    print_table(
        ["runtime", "start-up s", "s / step", "generate s", "learn s", "publish s", "rollout samples/s"], rows
    )
    local = results["local"]
    for name in ("ray, 1 worker", "ray, 2 workers"):
        ray = results[name]
        print(
            f"\n{name} / local: start-up {ray['start_s'] / local['start_s']:.2f}x, "
            f"step {_mean(ray, 'time/step') / _mean(local, 'time/step'):.2f}x "
            f"(+{_mean(ray, 'time/step') - _mean(local, 'time/step'):.2f} s a step); "
            f"largest metric difference from local: {metric_gap(ray, local):.2g}"
        )
    one, two = results["ray, 1 worker"], results["ray, 2 workers"]
    rate = (two["collect_samples"] / two["collect_s"]) / (one["collect_samples"] / one["collect_s"])
    print(f"rollout throughput, 2 workers / 1 worker: {rate:.2f}x")


if __name__ == "__main__":
    main()
