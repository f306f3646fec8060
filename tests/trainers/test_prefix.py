"""Shared-prefix forward equals K plain forwards: log-probabilities and gradients (fp32).

Tolerances (float32 summation-order noise only): max |logprob difference| <= 5e-5; relative
difference of the whole gradient ||g_shared - g_plain|| / ||g_plain|| <= 1e-4; and per parameter
tensor <= 1e-3 (small-norm tensors show relatively larger noise).
"""

from __future__ import annotations

import pytest
import torch

from agents.hf import HFPolicy
from trainers.prefix import prefix_cost, shared_prefix_logits

pytestmark = pytest.mark.memory(gb=4.5)  # measured 4.1 GB added (the real model's full gradients, twice)


LOGPROB_TOL, GRAD_RTOL, TENSOR_RTOL = 5e-5, 1e-4, 1e-3


def make_group(vocab: int, pad: int, prompt_length=40, lengths=(5, 9, 1, 7), seed=0):
    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, vocab, (prompt_length,), generator=generator)
    responses = torch.full((len(lengths), max(lengths)), pad)
    mask = torch.zeros(len(lengths), max(lengths))
    for k, length in enumerate(lengths):
        responses[k, :length] = torch.randint(0, vocab, (length,), generator=generator)
        mask[k, :length] = 1
    weights = torch.randn(len(lengths), max(lengths), generator=generator)
    return prompt, responses, mask, weights


def plain_logprobs(model, prompt, responses, mask):
    """K separate forwards over prompt + response (the reference)."""
    out = torch.zeros(responses.shape)
    for k in range(responses.shape[0]):
        length = int(mask[k].sum())
        ids = torch.cat([prompt, responses[k, :length]]).unsqueeze(0)
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : len(prompt) - 1 + length].float()
        out[k, :length] = (
            torch.log_softmax(logits, -1).gather(-1, responses[k, :length].unsqueeze(-1)).squeeze(-1)
        )
    return out


def shared_logprobs(model, prompt, responses):
    logits = shared_prefix_logits(model, prompt, responses).float()
    return torch.log_softmax(logits, -1).gather(-1, responses.unsqueeze(-1)).squeeze(-1)


def compare(model, parameters, prompt, responses, mask, weights):
    """(max logprob difference, relative difference of the whole gradient), shared vs plain;
    also asserts the per-tensor relative difference."""
    results = []
    for compute in (
        lambda: shared_logprobs(model, prompt, responses),
        lambda: plain_logprobs(model, prompt, responses, mask),
    ):
        model.zero_grad(set_to_none=True)
        logprobs = compute()
        (logprobs * weights * mask).sum().backward()
        results.append((logprobs.detach() * mask, [p.grad.detach().clone() for p in parameters]))
    (shared, grads_shared), (plain, grads_plain) = results
    logprob_error = (shared - plain).abs().max().item()
    flat_shared = torch.cat([g.flatten() for g in grads_shared])
    flat_plain = torch.cat([g.flatten() for g in grads_plain])
    grad_error = ((flat_shared - flat_plain).norm() / flat_plain.norm()).item()
    tensor_error = max(
        ((a - b).norm() / (b.norm() + 1e-12)).item() for a, b in zip(grads_shared, grads_plain, strict=True)
    )
    assert tensor_error <= TENSOR_RTOL, f"a parameter tensor's gradient differs by {tensor_error:.2e}"
    return logprob_error, grad_error


def test_tiny_model_logprobs_and_gradients_match_plain_forwards():
    policy = HFPolicy("tiny-test")
    model = policy.model.train()
    group = make_group(256, policy.tokenizer.pad_token_id)
    logprob_error, grad_error = compare(model, list(model.parameters()), *group)
    assert logprob_error <= LOGPROB_TOL and grad_error <= GRAD_RTOL


def test_single_token_responses_and_one_sample_groups():
    policy = HFPolicy("tiny-test")
    for lengths in [(1, 1, 1), (6,)]:
        group = make_group(256, policy.tokenizer.pad_token_id, lengths=lengths, seed=1)
        logprob_error, grad_error = compare(policy.model, list(policy.model.parameters()), *group)
        assert logprob_error <= LOGPROB_TOL and grad_error <= GRAD_RTOL


def test_lora_adapter_logprobs_and_gradients_match():
    policy = HFPolicy("tiny-test", adapters=("planner", "executor"))
    torch.manual_seed(0)
    with torch.no_grad():  # a "trained" adapter, so the adapter path really changes the forward
        for name, parameter in policy.model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.1)
    group = make_group(256, policy.tokenizer.pad_token_id, seed=2)
    with policy.using_adapter("planner"):
        parameters = [p for n, p in policy.model.named_parameters() if "lora_" in n and ".planner." in n]
        logprob_error, grad_error = compare(policy.model, parameters, *group)
    assert logprob_error <= LOGPROB_TOL and grad_error <= GRAD_RTOL


def test_prefix_cost_counts_the_prompt_once():
    assert prefix_cost(300, [40, 10, 25]) == 300 + 3 * 40
    assert prefix_cost(300, []) == 300


@pytest.mark.slow
def test_default_model_logprobs_and_gradients_match():
    policy = HFPolicy()  # smollm2-135m-instruct
    model = policy.model.train()
    group = make_group(
        len(policy.tokenizer), policy.tokenizer.pad_token_id, prompt_length=120, lengths=(12, 4, 9, 1)
    )
    logprob_error, grad_error = compare(model, list(model.parameters()), *group)
    print(
        f"\n[prefix] default model: max logprob diff {logprob_error:.2e}, "
        f"max relative grad diff {grad_error:.2e}"
    )
    assert logprob_error <= LOGPROB_TOL and grad_error <= GRAD_RTOL
