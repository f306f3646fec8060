"""Generation throughput of the HF backend: one sequence vs a batch, measured in one run.

    python -m benchmarks.generation                       # default model, ~2-3 min on 2 cores
    python -m benchmarks.generation --model tiny-test --max-new-tokens 16   # smoke run

Rows (same prompts: real Sokoban observations, same sampling: temperature 1, no stop
strings, EOS ignored so every sequence generates exactly ``--max-new-tokens`` tokens):

* ``1 x 1``: one prompt, one sample (how a naive agent loop calls a model);
* ``8 x 4``: 8 prompts x 4 samples in one call (an AT-GRPO turn: K samples per prompt,
  the prompt encoded once and shared through the KV cache);
* ``8 x 4 transformers generate``: the same batch through ``model.generate`` (prompts
  repeated K times), the baseline for our decode loop.

The ratio printed is tokens/s of a row over tokens/s of ``1 x 1``.
"""

from __future__ import annotations

import argparse
import time

import envs
from agents.base import SamplingParams
from agents.hf import HFPolicy
from agents.models import DEFAULT_MODEL
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
    input_ids = torch.tensor([[pad] * (width - len(x)) + x for x in ids])
    mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
    torch.manual_seed(0)
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
    seconds = time.perf_counter() - start
    return (out.shape[1] - width) * out.shape[0], seconds


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model name or local HF directory")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="tokens generated per sequence")
    parser.add_argument("--prompts", type=int, default=8, help="prompts in the batched row")
    parser.add_argument("--samples", type=int, default=4, help="samples per prompt in the batched row")
    parser.add_argument("--no-baseline", action="store_true", help="skip the transformers generate row")
    args = parser.parse_args(argv)

    policy = HFPolicy(args.model)
    policy.end_token_ids = frozenset()  # ignore EOS: every row generates the same token count
    sampling = SamplingParams(temperature=1.0, max_new_tokens=args.max_new_tokens, seed=0)
    prompts = sokoban_prompts(args.prompts)
    time_policy(policy, prompts[:1], 1, SamplingParams(max_new_tokens=2, seed=0))  # warm-up

    rows = []
    tokens, seconds = time_policy(policy, prompts[:1], 1, sampling)
    rows.append({"setting": "1 x 1", "tokens": tokens, "seconds": seconds})
    tokens, seconds = time_policy(policy, prompts, args.samples, sampling)
    rows.append({"setting": f"{args.prompts} x {args.samples}", "tokens": tokens, "seconds": seconds})
    if not args.no_baseline:
        tokens, seconds = time_transformers_generate(policy, prompts, args.samples, args.max_new_tokens)
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
    return rows


if __name__ == "__main__":
    main()
