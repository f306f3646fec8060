"""Sampling math: tempered/top-p logprobs are exactly the distribution tokens come from."""

from __future__ import annotations

import math

import pytest
import torch

from agents.base import SamplingParams
from agents.sampling import find_stop, sample_next, sampling_logprobs


def test_temperature_scales_logits_before_softmax():
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    got = sampling_logprobs(logits, temperature=0.5)
    expected = torch.log_softmax(logits / 0.5, dim=-1)
    assert torch.allclose(got, expected)


def test_top_p_keeps_the_nucleus_and_renormalises():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    got = sampling_logprobs(probs.log(), temperature=1.0, top_p=0.7).exp()
    # 0.5 alone < 0.7, so the nucleus is {0.5, 0.3}: renormalised to 0.625 / 0.375.
    assert torch.allclose(got, torch.tensor([[0.625, 0.375, 0.0, 0.0]]))
    top_only = sampling_logprobs(probs.log(), temperature=1.0, top_p=0.01).exp()
    assert torch.allclose(top_only, torch.tensor([[1.0, 0.0, 0.0, 0.0]]))


def test_greedy_reports_untempered_logprob_of_argmax():
    logits = torch.tensor([[0.0, 3.0, 1.0], [5.0, 0.0, 0.0]])
    tokens, logprobs = sample_next(logits, SamplingParams(temperature=0), None)
    assert tokens.tolist() == [1, 0]
    assert torch.allclose(logprobs, torch.log_softmax(logits, -1)[[0, 1], [1, 0]])


def test_sampled_logprobs_match_their_distribution_and_frequencies():
    torch.manual_seed(0)
    logits = torch.randn(1, 5).repeat(20_000, 1)
    generator = torch.Generator().manual_seed(1)
    sampling = SamplingParams(temperature=0.7, top_p=0.9)
    tokens, logprobs = sample_next(logits, sampling, generator)
    distribution = sampling_logprobs(logits[:1], 0.7, 0.9)[0]
    assert torch.equal(logprobs, distribution[tokens])
    frequencies = torch.bincount(tokens, minlength=5).float() / len(tokens)
    assert torch.allclose(frequencies, distribution.exp(), atol=0.015)
    assert all(distribution[t] > -math.inf for t in tokens.unique())  # never outside the nucleus


def test_same_generator_seed_same_tokens():
    logits = torch.randn(8, 50)
    a = sample_next(logits, SamplingParams(), torch.Generator().manual_seed(3))
    b = sample_next(logits, SamplingParams(), torch.Generator().manual_seed(3))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def test_find_stop():
    assert find_stop("abc</answer>def", ("</answer>",)) == 3
    assert find_stop("x STOP y END", ("END", "STOP")) == 2
    assert find_stop("nothing", ("END",)) is None
    assert find_stop("END ... END", ("END",), search_from=1) == 8


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"temperature": -1}, "temperature must be >= 0"),
        ({"temperature": float("nan")}, "finite"),
        ({"top_p": 0}, "top_p"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"stop": "</answer>"}, "tuple of strings"),
        ({"stop": ("",)}, "non-empty"),
    ],
)
def test_sampling_params_validation_names_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SamplingParams(**kwargs)
