"""GRPO-family losses: clipped surrogate, aggregation modes, k3 KL, entropy, validation."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.base import SamplingParams
from agents.sampling import sample_next, sampling_logprobs
from trainers.losses import (
    AGGREGATIONS,
    DEFAULT_LOSS_PRESETS,
    aggregate,
    policy_loss,
    token_entropy,
    token_logprobs,
)

F64 = torch.float64
LENGTHS = [7, 3, 0, 5, 1]  # row 2 is fully masked


def _batch(seed: int = 0, scale: float = 0.3):
    g = torch.Generator().manual_seed(seed)
    b, t = len(LENGTHS), max(LENGTHS)
    mask = torch.zeros(b, t, dtype=torch.bool)
    for i, n in enumerate(LENGTHS):
        mask[i, t - n :] = True  # left padding: responses end at the right edge
    lp = -torch.rand(b, t, generator=g, dtype=F64) * 3
    old = lp + scale * torch.randn(b, t, generator=g, dtype=F64)
    ref = lp + scale * torch.randn(b, t, generator=g, dtype=F64)
    ent = torch.rand(b, t, generator=g, dtype=F64) * 2
    adv = torch.randn(b, generator=g, dtype=F64)
    weights = torch.rand(b, generator=g, dtype=F64) + 0.1
    # Garbage on padding must never leak into the loss or its gradient.
    for x in (old, ref, ent):
        x[~mask] = float("nan")
    return lp, old, ref, ent, adv, mask, weights


def _reference(lp, old, ref, ent, adv, mask, weights, eps_low, eps_high, mode, max_len, kl_coef, ent_coef):
    """Loop-by-loop reference in torch scalars (so autograd gives the reference gradient too)."""
    b, t = mask.shape
    w = [1.0] * b if weights is None else [float(x) for x in weights]

    def agg(fn):
        if mode == "token-mean":
            num, den = 0.0, 0.0
            for i in range(b):
                for j in range(t):
                    if mask[i, j]:
                        num = num + w[i] * fn(i, j)
                        den += w[i]
            return num / den
        num, den = 0.0, 0.0
        for i in range(b):
            toks = [fn(i, j) for j in range(t) if mask[i, j]]
            if not toks:
                continue
            seq = sum(toks) / (len(toks) if mode == "seq-mean-token-mean" else max_len)
            num, den = num + w[i] * seq, den + w[i]
        return num / den

    def pg(i, j):
        ratio = torch.exp(lp[i, j] - old[i, j])
        return -torch.minimum(ratio * adv[i], torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv[i])

    def k3(i, j):
        d = ref[i, j] - lp[i, j]
        return torch.exp(d) - d - 1

    pg_loss, kl, entropy = agg(pg), agg(k3), agg(lambda i, j: ent[i, j])
    return pg_loss + kl_coef * kl - ent_coef * entropy, pg_loss, kl, entropy


@pytest.mark.parametrize("mode", AGGREGATIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_policy_loss_matches_loop_reference(mode, weighted):
    lp, old, ref, ent, adv, mask, weights = _batch(seed=3)  # seed with ratios in (1.2, 1.28)
    weights = weights if weighted else None
    kw = dict(eps_low=0.2, eps_high=0.28, mode=mode, max_len=9, kl_coef=0.05, ent_coef=0.01)
    lp_ref = lp.clone().requires_grad_(True)
    expected = _reference(lp_ref, old, ref, ent, adv, mask, weights, **kw)
    expected[0].backward()

    lp_got = lp.clone().requires_grad_(True)
    out = policy_loss(
        lp_got,
        old,
        adv,
        mask.to(F64),
        eps_low=0.2,
        eps_high=0.28,
        aggregation=mode,
        weights=weights,
        max_response_length=9,
        ref_logprobs=ref,
        kl_coef=0.05,
        entropy=ent,
        entropy_coef=0.01,
    )
    out.loss.backward()
    assert out.loss.item() == pytest.approx(expected[0].item(), abs=1e-6)
    for name, value in zip(("pg_loss", "kl", "entropy"), expected[1:], strict=True):
        assert out.metrics[name] == pytest.approx(value.item(), abs=1e-6)
    assert torch.allclose(lp_got.grad, lp_ref.grad, atol=1e-6)
    assert torch.all(lp_got.grad[~mask] == 0)

    # Token-level diagnostics: plain (unweighted) means over the response tokens.
    ratio = (lp - old)[mask].exp()
    a = adv.unsqueeze(-1).expand_as(lp)[mask]
    clipped = torch.clamp(ratio, 0.8, 1.28) * a < ratio * a
    assert out.metrics["clip_fraction"] == pytest.approx(clipped.double().mean().item())
    assert 0 < out.metrics["clip_fraction"] < 1  # the fixture really exercises clipping
    assert ((ratio > 1.2) & (ratio < 1.28) & (a > 0)).any()  # ... and clip-higher matters
    assert out.metrics["ratio_mean"] == pytest.approx(ratio.mean().item())
    assert out.metrics["ratio_max"] == pytest.approx(ratio.max().item())
    assert out.metrics["approx_kl_old"] == pytest.approx((old - lp)[mask].mean().item())


def test_aggregation_modes_differ_as_specified():
    values = torch.tensor([[1.0, 0, 0, 0], [0, 0, 0, 0]], dtype=F64)
    mask = torch.tensor([[1, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    assert aggregate(values, mask, "token-mean").item() == pytest.approx(1 / 5)
    assert aggregate(values, mask, "seq-mean-token-mean").item() == pytest.approx(1 / 2)
    norm10 = aggregate(values, mask, "seq-mean-token-sum-norm", max_response_length=10).item()
    norm20 = aggregate(values, mask, "seq-mean-token-sum-norm", max_response_length=20).item()
    assert norm10 == pytest.approx((1 / 10) / 2) and norm20 == pytest.approx(norm10 / 2)
    w = torch.tensor([2.0, 1.0], dtype=F64)
    # token-mean: a weight scales every token of its sequence (numerator and denominator).
    assert aggregate(values, mask, "token-mean", weights=w).item() == pytest.approx(2 / (2 + 4))
    assert aggregate(values, mask, "seq-mean-token-mean", weights=w).item() == pytest.approx(2 / 3)


def _clip_case(ratios, advantage, eps_high):
    old = torch.zeros(1, len(ratios), dtype=F64)
    lp = torch.tensor([ratios], dtype=F64).log().requires_grad_(True)
    out = policy_loss(lp, old, torch.tensor([advantage], dtype=F64), torch.ones_like(old), eps_high=eps_high)
    out.loss.backward()
    return lp.grad[0], out.metrics["clip_fraction"]


def test_clipping_zeroes_gradient_exactly_on_clipped_tokens():
    grad, frac = _clip_case([1.5, 1.1, 0.5, 1.25], 1.0, eps_high=0.2)
    assert grad[0] == 0 and grad[3] == 0 and grad[1] != 0 and grad[2] != 0 and frac == 0.5
    # Clip-higher: 1.25 < 1.28 is no longer clipped.
    grad, frac = _clip_case([1.5, 1.1, 0.5, 1.25], 1.0, eps_high=0.28)
    assert grad[0] == 0 and grad[3] != 0 and frac == 0.25
    # A < 0: the lower bound clips, a large ratio stays unclipped (min picks rho * A).
    grad, frac = _clip_case([0.5, 0.9, 1.5, 0.7], -1.0, eps_high=0.2)
    assert grad[0] == 0 and grad[3] == 0 and grad[1] != 0 and grad[2] != 0 and frac == 0.5


@pytest.mark.parametrize("mode", AGGREGATIONS)
def test_on_policy_loss_is_minus_aggregated_advantage(mode):
    _, _, _, _, adv, mask, weights = _batch(seed=1)
    lp = (-torch.rand(mask.shape, dtype=F64)).requires_grad_(True)
    out = policy_loss(lp, lp.detach(), adv, mask, aggregation=mode, weights=weights, max_response_length=8)
    out.loss.backward()
    a = adv.unsqueeze(-1).expand_as(lp)
    assert out.loss.item() == pytest.approx(-aggregate(a, mask, mode, weights, 8).item(), abs=1e-12)
    assert out.metrics["ratio_mean"] == 1 and out.metrics["clip_fraction"] == 0
    assert out.metrics["approx_kl_old"] == 0
    # d loss / d logprob_bt = -A_b * c_bt with c_bt the aggregation coefficient of token (b, t).
    m, n = mask.to(F64), mask.sum(-1).to(F64)
    if mode == "token-mean":
        coef = weights.unsqueeze(-1) * m / (weights * n).sum()
    else:
        w = weights * (n > 0)
        per_tok = 1 / n.clamp(min=1) if mode == "seq-mean-token-mean" else torch.full_like(n, 1 / 8)
        coef = (w * per_tok).unsqueeze(-1) * m / w.sum()
    assert torch.allclose(lp.grad, -a * coef, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(p=st.floats(-20, 0), d=st.one_of(st.just(0.0), st.floats(-5, 5)))
def test_k3_is_nonnegative_and_zero_only_at_equality(p, d):
    lp = torch.tensor([[p]], dtype=F64)
    out = policy_loss(lp, lp, torch.zeros(1, dtype=F64), torch.ones_like(lp), ref_logprobs=lp + d)
    assert out.metrics["kl"] >= 0
    if d == 0:
        assert out.metrics["kl"] == 0
    elif abs(d) >= 1e-3:  # below that k3 ~ d^2 / 2 drowns in float64 rounding
        assert out.metrics["kl"] > 0
    assert out.metrics["kl"] == pytest.approx(math.exp(d) - d - 1, abs=1e-12)


def test_token_logprobs_and_entropy_use_the_sampler_distribution():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 11, generator=g)
    ids = torch.randint(0, 11, (2, 3), generator=g)
    for temp in (0.7, 1.0):
        expected = torch.log_softmax(logits / temp, -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        assert torch.allclose(token_logprobs(logits, ids, temperature=temp), expected, atol=1e-6)
        p = torch.softmax(logits / temp, -1)
        assert torch.allclose(token_entropy(logits, temp), -(p * p.log()).sum(-1), atol=1e-5)
    nucleus = sampling_logprobs(logits, 0.7, 0.9).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    assert torch.equal(token_logprobs(logits, ids, 0.7, 0.9), nucleus)
    # The learner recomputes exactly the logprob the sampler reported (the pi_old rule).
    flat = logits.reshape(6, 11)
    tokens, sampled = sample_next(flat, SamplingParams(temperature=0.7, top_p=0.9), g)
    assert torch.allclose(token_logprobs(logits, tokens.reshape(2, 3), 0.7, 0.9), sampled.reshape(2, 3))


def test_masked_rows_and_extreme_ratios_stay_finite():
    lp, old, ref, ent, adv, mask, _ = _batch()
    lp.requires_grad_(True)
    for mode in AGGREGATIONS:
        out = policy_loss(
            lp,
            old,
            adv,
            mask,
            aggregation=mode,
            max_response_length=7,
            ref_logprobs=ref,
            kl_coef=0.1,
            entropy=ent,
            entropy_coef=0.01,
        )
        (grad,) = torch.autograd.grad(out.loss, lp)
        assert torch.isfinite(out.loss) and torch.isfinite(grad).all()
        assert all(math.isfinite(v) for v in out.metrics.values())
        empty = policy_loss(lp, old, adv, torch.zeros_like(mask), aggregation=mode, max_response_length=7)
        (grad,) = torch.autograd.grad(empty.loss, lp)
        assert empty.loss.item() == 0 and torch.all(grad == 0)
        assert all(v == 0 for v in empty.metrics.values())
    far = torch.tensor([[0.0, -float("inf")]], dtype=F64)  # a token outside the learner's nucleus
    out = policy_loss(
        far.requires_grad_(True),
        torch.tensor([[-50.0, -1.0]], dtype=F64),
        torch.tensor([-1.0], dtype=F64),
        torch.ones(1, 2),
    )
    assert torch.isfinite(out.loss)


def test_presets_are_valid_policy_loss_kwargs():
    lp, old, _, _, adv, mask, _ = _batch()
    assert DEFAULT_LOSS_PRESETS["dapo"]["eps_high"] == 0.28
    for name, preset in DEFAULT_LOSS_PRESETS.items():
        extra = {"max_response_length": 7} if name == "dr_grpo" else {}
        assert torch.isfinite(policy_loss(lp, old, adv, mask, **preset, **extra).loss)
    with pytest.raises(ValueError, match="max_response_length"):
        policy_loss(lp, old, adv, mask, **DEFAULT_LOSS_PRESETS["dr_grpo"])


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(old_logprobs=torch.zeros(5, 6)), "old_logprobs has shape"),
        (dict(advantages=torch.zeros(5, 7)), "advantages has shape"),
        (dict(mask=torch.ones(4, 7)), "mask has shape"),
        (dict(weights=torch.ones(3)), "weights has shape"),
        (dict(weights=-torch.ones(5)), "weights must be finite and >= 0"),
        (dict(ref_logprobs=torch.zeros(5)), "ref_logprobs has shape"),
        (dict(aggregation="seq-mean"), "valid: token-mean, seq-mean-token-mean, seq-mean-token-sum-norm"),
        (dict(aggregation="seq-mean-token-sum-norm"), "needs max_response_length"),
        (dict(eps_low=-0.1), "eps_low must be finite and >= 0"),
        (dict(eps_high=-0.1), "eps_high must be finite and >= 0"),
        (dict(kl_coef=0.1), "kl_coef > 0 needs ref_logprobs"),
        (dict(entropy_coef=0.1), "entropy_coef != 0 needs entropy"),
    ],
)
def test_validation_names_the_argument(change, match):
    lp, old, _, _, adv, mask, _ = _batch()
    kwargs = dict(logprobs=lp, old_logprobs=old, advantages=adv, mask=mask) | change
    with pytest.raises(ValueError, match=match):
        policy_loss(**kwargs)
    with pytest.raises(ValueError, match="token_ids"):
        token_logprobs(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
