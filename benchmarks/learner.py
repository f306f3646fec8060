"""One learner step on a recorded AT-GRPO batch, shared-prefix forward on vs off, and at each
micro-batch token budget, in one run.

    python -m benchmarks.learner                      # default model, ~3-5 min on 2 cores
    python -m benchmarks.learner --envs tictactoe --micro-batch-tokens 1024 512 256
    python -m benchmarks.learner --model tiny-test --k 2 --max-new-tokens 4   # smoke run

1. Record a batch: ``tree_rollout`` of the model on the smallest preset of each ``--envs``
   (one cycle, so every sample of a group shares its prompt), K candidates per node.
2. Run one ``Learner.step`` on that same batch twice, each in a fresh subprocess (so peak
   memory is measured cleanly): ``shared_prefix=False`` (K forwards over prompt + response)
   and ``shared_prefix=True`` (one prompt forward per group). Same weights, same batch.
   With several ``--micro-batch-tokens`` (the learner's token budget per forward/backward:
   what its activations scale with), both steps run at each budget, the first the baseline.
3. Print seconds, tokens/s (sum over samples of prompt + response tokens, divided by the
   step time), the step's peak memory above the loaded model, the speed-up, and the bound
   K(P+R)/(P+K*R) computed from the batch's actual mean lengths; with several budgets, each
   one's time and peak memory as a ratio of the first's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.tables import print_table
from trainers.learner import LearnerConfig


def record_batch(model: str, env_ids: list[str], tasks: int, k: int, max_new_tokens: int):
    import envs
    from agents.base import SamplingParams
    from agents.hf import HFPolicy
    from agents.team import Team
    from trainers.records import TaskKey
    from trainers.rollout import tree_rollout

    policy = HFPolicy(model)
    samples = []
    for env_id in env_ids:
        # the smallest preset where the env has presets (games and the ALFWorld/code tasks do not)
        preset = (
            {"difficulty": "easy"} if "easy" in getattr(type(envs.make(env_id)), "DIFFICULTIES", ()) else {}
        )
        env = envs.make(env_id, **preset)
        team = Team.shared(env, policy)
        keys = [TaskKey(env_id, "train", seed) for seed in range(tasks)]
        sampling = SamplingParams(temperature=1.0, max_new_tokens=max_new_tokens, seed=0)
        batch = tree_rollout(
            keys,
            team,
            num_candidates=k,
            sampling=sampling,
            env_kwargs={**preset, "max_cycles": 1},
        )
        samples.extend(batch.samples)
    return samples


# Turn fields that are tuples: JSON reads them back as lists.
_TUPLE_FIELDS = ("prompt_token_ids", "token_ids", "logprobs", "tree_node")


def write_batch(path: Path, samples) -> None:
    """The recorded turns as JSON, for the child processes (plain data: nothing to unpickle)."""
    rows = []
    for turn in samples:
        row = {field.name: getattr(turn, field.name) for field in dataclasses.fields(turn)}
        row["task"] = dataclasses.asdict(turn.task)
        # Any hashable the env chose; the learner never reads it, so its text stands in.
        row["state_key"] = repr(turn.state_key)
        rows.append(row)
    path.write_text(json.dumps(rows))


def read_batch(path: Path) -> list:
    """The turns :func:`write_batch` wrote (``state_key`` as its text)."""
    from trainers.records import TaskKey, Turn

    return [
        Turn(**{**row, "task": TaskKey(**row["task"]), **{name: tuple(row[name]) for name in _TUPLE_FIELDS}})
        for row in json.loads(path.read_text())
    ]


def child(batch_path: str, model: str, shared_prefix: bool, micro_batch_tokens: int, full: bool) -> dict:
    """One learner step (in a fresh process, after a warm-up step on CUDA); prints its
    measurements as JSON. ``full``: train the full weights (as the H100 figures were measured);
    else the LoRA adapter training uses by default."""
    import torch

    import envs
    from agents.hf import HFPolicy
    from agents.team import Team
    from trainers.advantages import AdvantageResult
    from trainers.config import TrainConfig, resolve_config
    from trainers.learner import Learner, LearnerConfig
    from trainers.teams import build_team

    samples = read_batch(Path(batch_path))
    torch.manual_seed(0)
    env = envs.make(samples[0].task.env_id)
    if full:
        policy = HFPolicy(model)
        team = Team.shared(env, policy)
    else:  # the LoRA a training run trains on the frozen model (one adapter: the turns of every env)
        config = TrainConfig(env=samples[0].task.env_id, model=model, policy="shared", backend="hf")
        team = build_team(resolve_config(config), env)
        (policy,) = team.policies
    rng = np.random.default_rng(0)  # fixed non-zero advantages: every sample is trained
    result = AdvantageResult(rng.normal(size=len(samples)) + 0.1, np.ones(len(samples)), {})
    config = LearnerConfig(lr=1e-6, shared_prefix=shared_prefix, micro_batch_tokens=micro_batch_tokens)
    learner = Learner(team, config)
    (unit,) = learner.units  # the recorded turns name the sampler's policy: train them as this unit's
    samples = [dataclasses.replace(turn, policy=unit) for turn in samples]
    with torch.no_grad():  # the weights are read in (paged) by a first forward: not the step's memory
        policy.model(input_ids=torch.tensor([samples[0].prompt_token_ids[:8]], device=policy.device))
    cuda = policy.device.type == "cuda"
    if cuda:
        # A first step on CUDA also builds cuBLAS plans and cuDNN attention graphs for each new
        # shape: an untimed step first (its lr=1e-6 update is below bfloat16's resolution).
        learner.step(samples, result)
        # The timed step's GPU memory, above the loaded model (host RSS barely moves there).
        torch.cuda.synchronize(policy.device)
        torch.cuda.reset_peak_memory_stats(policy.device)
        gpu_baseline = torch.cuda.memory_allocated(policy.device)
    baseline_kb = _current_rss_kb()
    start = time.perf_counter()
    metrics = learner.step(samples, result)[unit]
    if cuda:
        torch.cuda.synchronize(policy.device)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": seconds,
        "device": str(policy.device),
        "peak_extra_mb": max(0, peak_kb - baseline_kb) / 1024,
        "peak_gpu_extra_mb": (
            (torch.cuda.max_memory_allocated(policy.device) - gpu_baseline) / 2**20 if cuda else None
        ),
        "token_forwards": metrics["token_forwards"],
        "prefix_groups": metrics["prefix_groups"],
        "loss": metrics["loss"],
    }


def _current_rss_kb() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument(
        "--envs", default="sokoban-v0,plan_path-v0", help="comma-separated env ids (easy preset)"
    )
    parser.add_argument("--tasks", type=int, default=1, help="tasks per env")
    parser.add_argument("--k", type=int, default=8, help="candidates per (task, turn, agent)")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument(
        "--micro-batch-tokens",
        type=int,
        nargs="+",
        default=[LearnerConfig.micro_batch_tokens],
        help="learner token budgets per forward/backward to compare (the first is the baseline)",
    )
    parser.add_argument(
        "--full-weights",
        action="store_true",
        help="train the full weights (default: a LoRA adapter, as training)",
    )
    parser.add_argument("--child", choices=["on", "off"], help=argparse.SUPPRESS)
    parser.add_argument("--batch", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if min(args.micro_batch_tokens) < 1:
        parser.error("--micro-batch-tokens must be >= 1")
    if args.child:
        budget = args.micro_batch_tokens[0]
        print(json.dumps(child(args.batch, args.model, args.child == "on", budget, args.full_weights)))
        return []

    samples = record_batch(args.model, args.envs.split(","), args.tasks, args.k, args.max_new_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        batch_path = Path(tmp) / "batch.json"
        write_batch(batch_path, samples)
        runs = {}
        for budget in args.micro_batch_tokens:
            for mode in ("off", "on"):
                cmd = [
                    sys.executable,
                    "-m",
                    "benchmarks.learner",
                    "--child",
                    mode,
                    "--batch",
                    str(batch_path),
                ]
                cmd += ["--model", args.model, "--micro-batch-tokens", str(budget)]
                cmd += ["--full-weights"] if args.full_weights else []
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    raise SystemExit(f"benchmarks.learner: the learner step failed:\n{out.stderr[-3000:]}")
                runs[mode, budget] = json.loads(out.stdout.strip().splitlines()[-1])

    prompt_mean = float(np.mean([len(s.prompt_token_ids) for s in samples]))
    response_mean = float(np.mean([len(s.token_ids) for s in samples]))
    tokens = sum(len(s.prompt_token_ids) + len(s.token_ids) for s in samples)
    k = args.k
    bound = k * (prompt_mean + response_mean) / (prompt_mean + k * response_mean)
    budgets = args.micro_batch_tokens
    base = budgets[0]
    rows = []
    for budget in budgets:
        for mode, label in (("off", "plain (K forwards)"), ("on", "shared prefix")):
            run = runs[mode, budget]
            setting = label if len(budgets) == 1 else f"{label}, {budget} tokens"
            rows.append(
                {
                    "setting": setting,
                    "micro_batch_tokens": budget,
                    **run,
                    "tokens_per_s": tokens / run["seconds"],
                }
            )
    speedup = runs["off", base]["seconds"] / runs["on", base]["seconds"]
    print(
        f"Learner step, model={args.model} ({'full weights' if args.full_weights else 'LoRA'}), "
        f"device={runs['off', base]['device']}, envs={args.envs} (easy), "
        f"{len(samples)} samples in groups of K={k}; mean prompt P={prompt_mean:.0f}, "
        f"mean response R={response_mean:.1f} tokens\n"
    )
    gpu = runs["off", base]["peak_gpu_extra_mb"] is not None
    print_table(
        ["setting", "seconds", "tokens/s", "token-forwards", "peak extra MB"]
        + (["peak extra GPU MB"] if gpu else []),
        [
            [r["setting"], f"{r['seconds']:.2f}", f"{r['tokens_per_s']:.0f}"]
            + [f"{r['token_forwards']:.0f}", f"{r['peak_extra_mb']:.0f}"]
            + ([f"{r['peak_gpu_extra_mb']:.0f}"] if gpu else [])
            for r in rows
        ],
    )
    print(f"\nspeed-up (plain time / shared time): {speedup:.2f}x   bound K(P+R)/(P+K*R): {bound:.2f}x")
    print(
        f"losses (must agree): plain {runs['off', base]['loss']:.6f}, shared {runs['on', base]['loss']:.6f}"
    )
    for budget in budgets[1:]:
        for mode, label in (("off", "plain"), ("on", "shared prefix")):
            now, was = runs[mode, budget], runs[mode, base]
            memory = now["peak_extra_mb"] / was["peak_extra_mb"] if was["peak_extra_mb"] else float("nan")
            print(
                f"{label}, {budget} vs {base} tokens: time {now['seconds'] / was['seconds']:.2f}x, "
                f"peak extra memory {memory:.2f}x, loss {now['loss']:.6f} (was {was['loss']:.6f})"
            )
    return [
        *rows,
        {"speedup": speedup, "bound": bound, "prompt_mean": prompt_mean, "response_mean": response_mean},
    ]


if __name__ == "__main__":
    main()
