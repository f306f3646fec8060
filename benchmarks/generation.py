"""Generation throughput of the HF backend: one sequence vs a batch, and thread counts
beside a competing load, measured in one run.

    python -m benchmarks.generation                       # default model, ~3-4 min on 2 cores
    python -m benchmarks.generation --model tiny-test --max-new-tokens 16   # smoke run

Rows (same prompts: real Sokoban observations, same sampling: temperature 1, no stop
strings, EOS ignored so every sequence generates exactly ``--max-new-tokens`` tokens):

* ``1 x 1``: one prompt, one sample (how a naive agent loop calls a model);
* ``8 x 4``: 8 prompts x 4 samples in one call (an AT-GRPO turn: K samples per prompt,
  the prompt encoded once and shared through the KV cache);
* ``8 x 4 transformers generate``: the same batch through ``model.generate`` (prompts
  repeated K times), the baseline for our decode loop.

The ratio printed is tokens/s of a row over tokens/s of ``1 x 1``. These rows run at the
thread count ``agents.threads`` chooses (printed above the table).

Second table, threads x load: the ``1 x 1`` row again with torch at each ``--threads``
count while ``--load`` other processes each keep one core busy (a Python busy loop, started
and stopped by the benchmark), and the count the automatic thread policy picks under that
load. The ratio is tokens/s over torch's default (one thread per allotted CPU) under the
same load: on 2 cores with one busy, 2 threads collapse and 1 thread does not.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

import envs
from agents.base import SamplingParams
from agents.hf import HFPolicy
from agents.models import DEFAULT_MODEL
from agents.threads import ThreadChoice, choose_threads, configure_threads
from benchmarks.tables import print_table


def sokoban_prompts(n: int) -> list[str]:
    prompts = []
    for seed in range(n):
        env = envs.make("sokoban")
        env.reset(seed=seed)
        prompts.append(env.observe("planner_0")["prompt"])
    return prompts


def time_policy(
    policy: HFPolicy, prompts: list[str], samples: int, sampling: SamplingParams
) -> tuple[int, float]:
    """(generated tokens, seconds) for one ``generate`` call."""
    start = time.perf_counter()
    groups = policy.generate(prompts, num_samples=samples, sampling=sampling)
    seconds = time.perf_counter() - start
    return sum(len(g.token_ids) for group in groups for g in group), seconds


def time_transformers_generate(policy: HFPolicy, prompts: list[str], samples: int, max_new_tokens: int):
    """(generated tokens, seconds) for ``model.generate`` on the same left-padded batch."""
    import torch

    ids = [policy.prompt_token_ids(p) for p in prompts]
    width = max(map(len, ids))
    pad = policy.tokenizer.pad_token_id
    # On the policy's device: a CPU batch beside a CUDA model is an error in generate.
    input_ids = torch.tensor([[pad] * (width - len(x)) + x for x in ids], device=policy.device)
    mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids], device=policy.device)
    torch.manual_seed(0)
    _synchronize(policy)
    start = time.perf_counter()
    with torch.inference_mode():
        out = policy.model.generate(
            input_ids=input_ids,
            attention_mask=mask,
            do_sample=True,
            temperature=1.0,
            top_p=1.0,
            top_k=0,
            num_return_sequences=samples,
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            pad_token_id=pad,
        )
    _synchronize(policy)  # CUDA kernels run asynchronously: time them to the end
    seconds = time.perf_counter() - start
    return (out.shape[1] - width) * out.shape[0], seconds


def _synchronize(policy: HFPolicy) -> None:
    if policy.device.type == "cuda":
        import torch

        torch.cuda.synchronize(policy.device)


@contextlib.contextmanager
def competing_load(processes: int) -> Iterator[None]:
    """``processes`` busy-looping Python processes (each keeps one core busy) for the block."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(processes)
    ]
    try:
        if procs:
            time.sleep(0.5)  # let them get going before anything is measured
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def threads_under_load(
    policy: HFPolicy, prompt: str, sampling: SamplingParams, threads: list[int], loads: list[int]
) -> list[dict]:
    """Tokens/s of one sequence at each thread count under each competing load, and what the
    automatic policy picks there; restores torch's thread count afterwards."""
    import torch

    before = torch.get_num_threads()
    rows = []
    try:
        for load in loads:
            with competing_load(load):
                auto = choose_threads().threads  # measured with the load running
                for count in threads:
                    torch.set_num_threads(count)
                    time_policy(policy, [prompt], 1, SamplingParams(max_new_tokens=2, seed=0))  # warm-up
                    tokens, seconds = time_policy(policy, [prompt], 1, sampling)
                    rows.append(
                        {"load": load, "threads": count, "auto": auto, "tokens": tokens, "seconds": seconds}
                    )
    finally:
        torch.set_num_threads(before)
    default = choose_threads(busy=0.0).allotted.count  # torch's own default: a thread per CPU
    for row in rows:
        row["tokens_per_s"] = row["tokens"] / row["seconds"]
    for row in rows:
        base = [r for r in rows if r["load"] == row["load"] and r["threads"] == default]
        row["ratio"] = row["tokens_per_s"] / base[0]["tokens_per_s"] if base else float("nan")
    return rows


def print_threads_table(rows: list[dict], choice: ThreadChoice) -> None:
    default = choice.allotted.count
    print(
        f"\nThreads x competing load (1 x 1 row; {choice.allotted.describe()}; "
        f"ratio: tokens/s over torch's default of {default} thread(s) under the same load)\n"
    )
    print_table(
        ["busy processes", "threads", "tokens/s", f"vs {default} threads", "auto picks"],
        [
            [
                str(r["load"]),
                str(r["threads"]),
                f"{r['tokens_per_s']:.1f}",
                f"{r['ratio']:.2f}x",
                str(r["auto"]) + (" <-" if r["auto"] == r["threads"] else ""),
            ]
            for r in rows
        ],
    )


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name or local HF directory")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="tokens generated per sequence")
    parser.add_argument("--prompts", type=int, default=8, help="prompts in the batched row")
    parser.add_argument("--samples", type=int, default=4, help="samples per prompt in the batched row")
    parser.add_argument("--no-baseline", action="store_true", help="skip the transformers generate row")
    parser.add_argument(
        "--threads",
        type=int,
        nargs="*",
        default=None,
        help="thread counts of the second table (default: 1 and one per CPU)",
    )
    parser.add_argument(
        "--load", type=int, nargs="*", default=[0, 1], help="busy processes beside the second table's rows"
    )
    args = parser.parse_args(argv)

    choice = configure_threads()
    print(choice.describe())
    policy = HFPolicy(args.model)
    policy.end_token_ids = frozenset()  # ignore EOS: every row generates the same token count
    sampling = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    prompts = sokoban_prompts(args.prompts)
    time_policy(policy, prompts[:1], 1, SamplingParams(max_new_tokens=2, seed=0))  # warm-up
    # On CUDA the first call at each new shape builds cuDNN attention graphs and cuBLAS plans
    # (the KV length grows every token): measured on an H100, a first run took 2.6-3.4x as
    # long as a repeat, which favoured whichever row ran later. So each row runs once untimed
    # first there. The CPU has no such per-shape cost.
    warm_up = policy.device.type == "cuda"

    def timed(run, *run_args):
        if warm_up:
            run(*run_args)
        return run(*run_args)

    rows = []
    tokens, seconds = timed(time_policy, policy, prompts[:1], 1, sampling)
    rows.append({"setting": "1 x 1", "tokens": tokens, "seconds": seconds})
    tokens, seconds = timed(time_policy, policy, prompts, args.samples, sampling)
    rows.append({"setting": f"{args.prompts} x {args.samples}", "tokens": tokens, "seconds": seconds})
    if not args.no_baseline:
        tokens, seconds = timed(
            time_transformers_generate, policy, prompts, args.samples, args.max_new_tokens
        )
        rows.append(
            {
                "setting": f"{args.prompts} x {args.samples} transformers generate",
                "tokens": tokens,
                "seconds": seconds,
            }
        )
    base_rate = rows[0]["tokens"] / rows[0]["seconds"]
    for row in rows:
        row["tokens_per_s"] = row["tokens"] / row["seconds"]
        row["ratio"] = row["tokens_per_s"] / base_rate
    prompt_tokens = sum(len(policy.prompt_token_ids(p)) for p in prompts) / len(prompts)
    print(
        f"HF backend generation, model={args.model}, device={policy.device}, "
        f"mean prompt {prompt_tokens:.0f} tokens, {args.max_new_tokens} new tokens per sequence\n"
    )
    print_table(
        ["setting", "tokens", "seconds", "tokens/s", "vs 1 x 1"],
        [
            [
                r["setting"],
                str(r["tokens"]),
                f"{r['seconds']:.2f}",
                f"{r['tokens_per_s']:.1f}",
                f"{r['ratio']:.2f}x",
            ]
            for r in rows
        ],
    )
    thread_counts = args.threads if args.threads is not None else sorted({1, choice.allotted.count})
    if thread_counts and args.load:
        table = threads_under_load(policy, prompts[0], sampling, thread_counts, args.load)
        print_threads_table(table, choice)
        rows += [{"setting": f"load {r['load']}, {r['threads']} threads", **r} for r in table]
    return rows


if __name__ == "__main__":
    main()
