"""Policy-gradient losses of the GRPO family (docs/algorithms.md section 3), pure torch.

Every per-token tensor is padded to shape (B, T); ``mask`` (bool or float) is 1 on the
response tokens that are trained on and 0 on prompt/padding. ``advantages`` and the
optional MATPO ``weights`` are per sequence, shape (B,). Padding positions may hold any
value (even inf/NaN): they are replaced before they can reach a sum or a gradient.

Presets (``DEFAULT_LOSS_PRESETS``): GRPO (eps 0.2/0.2, ``seq-mean-token-mean``), DAPO
(clip-higher 0.2/0.28, ``token-mean``, no KL) and Dr. GRPO (0.2/0.2,
``seq-mean-token-sum-norm``; the caller adds ``max_response_length``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import torch

from agents.sampling import sampling_logprobs

__all__ = [
    "AGGREGATIONS",
    "DEFAULT_LOSS_PRESETS",
    "LossOutput",
    "aggregate",
    "policy_loss",
    "token_entropy",
    "token_logprobs",
]

AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")

# Log-ratios are clamped to +-20 before exp (as verl does): exp(20) ~ 5e8 is far outside any
# clip range, so nothing real changes, but a stale or -inf logprob cannot turn the loss into inf.
MAX_LOG_RATIO = 20.0

# Named presets: policy_loss kwargs (use as ``policy_loss(..., **DEFAULT_LOSS_PRESETS["dapo"])``).
DEFAULT_LOSS_PRESETS: dict[str, dict[str, object]] = {
    "grpo": {"eps_low": 0.2, "eps_high": 0.2, "aggregation": "seq-mean-token-mean"},
    # DAPO: clip-higher (eps_high 0.28) and no KL term.
    "dapo": {"eps_low": 0.2, "eps_high": 0.28, "aggregation": "token-mean", "kl_coef": 0.0},
    # Dr. GRPO also needs max_response_length=<the generation budget>, supplied by the caller.
    "dr_grpo": {"eps_low": 0.2, "eps_high": 0.2, "aggregation": "seq-mean-token-sum-norm"},
}


@dataclass(frozen=True)
class LossOutput:
    """Result of ``policy_loss``.

    Attributes:
        loss: Scalar tensor to call ``backward()`` on.
        metrics: Detached diagnostics (``loss``, ``pg_loss``, ``clip_fraction``, ``ratio_mean``,
            ``ratio_max``, ``approx_kl_old``, plus ``kl`` / ``entropy`` when those inputs are given).
    """

    loss: torch.Tensor
    metrics: dict[str, float] = field(default_factory=dict)


def token_logprobs(
    logits: torch.Tensor, token_ids: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0
) -> torch.Tensor:
    """log pi(y_t) of the sampling distribution: ``sampling_logprobs(logits, T, top_p)[y_t]``.

    Using the sampler's own function (same temperature and top-p) keeps the learner's log pi
    comparable to the sampler's logprobs used as pi_old. With ``top_p < 1`` a token outside
    the learner's current nucleus gets ``-inf`` (clamped later by ``policy_loss``).

    Args:
        logits: (B, T, V) logits at the positions predicting ``token_ids``.
        token_ids: (B, T) integer ids.
        temperature: Sampler temperature (0 = greedy, untempered).
        top_p: Sampler nucleus mass.

    Returns:
        (B, T) float32 log-probabilities (differentiable w.r.t. ``logits``).
    """
    if logits.dim() != 3 or logits.shape[:-1] != token_ids.shape:
        raise ValueError(
            f"token_logprobs: logits {tuple(logits.shape)} must be (B, T, V) with token_ids "
            f"{tuple(token_ids.shape)} == (B, T); slice logits to the predicting positions"
        )
    logprobs = sampling_logprobs(logits, temperature, top_p)
    return logprobs.gather(-1, token_ids.long().unsqueeze(-1)).squeeze(-1)


def token_entropy(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Per-token entropy H_t = -sum_v p_v log p_v with p = softmax(logits / T), shape (B, T).

    Top-p is not applied: its -inf entries would give 0 * -inf = NaN, and the entropy bonus is
    meant to act on the whole tempered distribution.
    """
    logprobs = sampling_logprobs(logits, temperature)
    return -(logprobs.exp() * logprobs).sum(-1)


def _safe_denominator(x: torch.Tensor) -> torch.Tensor:
    # A zero denominator only happens when the numerator is a sum of zeros too (no tokens or
    # zero weight), so dividing by 1 there returns 0 with finite gradients instead of NaN.
    return torch.where(x > 0, x, torch.ones_like(x))


def _aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    weights: torch.Tensor | None,
    max_response_length: int | None,
) -> torch.Tensor:
    m = mask.to(values.dtype)
    values = values.masked_fill(m == 0, 0.0)  # padding may hold inf/NaN
    w = torch.ones_like(m[:, 0]) if weights is None else weights.to(values.dtype)
    token_sum = (values * m).sum(-1)  # (B,)
    n_tokens = m.sum(-1)  # (B,)
    if mode == "token-mean":
        return (w * token_sum).sum() / _safe_denominator((w * n_tokens).sum())
    if mode == "seq-mean-token-mean":
        per_seq = token_sum / _safe_denominator(n_tokens)
    else:  # seq-mean-token-sum-norm: constant divisor, so long answers are not down-weighted
        per_seq = token_sum / max_response_length
    w = w * (n_tokens > 0)  # a sequence without tokens is padding, not a zero-loss sample
    return (w * per_seq).sum() / _safe_denominator(w.sum())


def _check(name: str, tensor: torch.Tensor | None, shape: tuple[int, ...], what: str) -> None:
    if tensor is not None and tuple(tensor.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(tensor.shape)} but must be {shape}: pass {what}")


def _validate_aggregation(
    values: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    weights: torch.Tensor | None,
    max_response_length: int | None,
) -> None:
    if values.dim() != 2:
        raise ValueError(f"values must be 2-D (B, T), got shape {tuple(values.shape)}")
    _check("mask", mask, tuple(values.shape), "a (B, T) mask with 1 on response tokens")
    _check("weights", weights, tuple(values.shape[:1]), "one weight per sequence, shape (B,)")
    if mask.dtype != torch.bool and (mask < 0).any():
        raise ValueError("mask must be >= 0 (1 on response tokens, 0 on prompt/padding)")
    if weights is not None and not (torch.isfinite(weights).all() and (weights >= 0).all()):
        raise ValueError("weights must be finite and >= 0 (per-episode loss weights)")
    if mode not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {mode!r}; valid: {', '.join(AGGREGATIONS)}")
    if mode == "seq-mean-token-sum-norm" and (max_response_length is None or max_response_length <= 0):
        raise ValueError(
            "aggregation 'seq-mean-token-sum-norm' needs max_response_length > 0 "
            f"(the constant generation budget), got {max_response_length!r}"
        )


def aggregate(
    values: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    weights: torch.Tensor | None = None,
    max_response_length: int | None = None,
) -> torch.Tensor:
    """Reduce per-token ``values`` (B, T) to a scalar.

    With m the mask, n_b = sum_t m_bt, S_b = sum_t m_bt v_bt and w_b the weights (default 1):

    - ``token-mean`` (DAPO): sum_b w_b S_b / sum_b w_b n_b. A weight scales every token of its
      sequence; with unit weights this is the sum over all tokens / total tokens.
    - ``seq-mean-token-mean`` (GRPO): s_b = S_b / n_b, then sum_b w_b s_b / sum_b w_b.
    - ``seq-mean-token-sum-norm`` (Dr. GRPO): s_b = S_b / max_response_length, then
      sum_b w_b s_b / sum_b w_b.

    In the two sequence modes, sequences with n_b = 0 are left out (w_b treated as 0). Every
    empty denominator yields 0, never NaN.

    Raises:
        ValueError: bad shapes, negative weights, unknown mode, missing max_response_length.
    """
    _validate_aggregation(values, mask, mode, weights, max_response_length)
    return _aggregate(values, mask, mode, weights, max_response_length)


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    aggregation: str = "seq-mean-token-mean",
    weights: torch.Tensor | None = None,
    max_response_length: int | None = None,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
) -> LossOutput:
    """Clipped surrogate + optional k3 KL and entropy bonus.

    Per token, with rho = exp(logprobs - old_logprobs) and A broadcast from its sequence:
    L_t = -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A);
    k3_t = exp(q - p) - (q - p) - 1 with p = logprobs, q = ref_logprobs (>= 0, 0 iff p == q).
    loss = agg(L) + kl_coef * agg(k3) - entropy_coef * agg(entropy), agg = ``aggregate`` with
    the given mode/weights. Log-ratios are clamped to +-20 (see ``MAX_LOG_RATIO``).

    Args:
        logprobs: (B, T) log pi_theta of the response tokens (with grad).
        old_logprobs: (B, T) log pi_old (sampler logprobs when exact, else recomputed).
        advantages: (B,) per-sequence advantages.
        mask: (B, T) 1 on trained tokens.
        eps_low, eps_high: Clip range [1 - eps_low, 1 + eps_high], both >= 0.
        aggregation: One of ``AGGREGATIONS``.
        weights: (B,) non-negative per-sequence loss weights (MATPO), default ones.
        max_response_length: Required for ``seq-mean-token-sum-norm``.
        ref_logprobs: (B, T) frozen-reference logprobs; when given the ``kl`` metric is logged.
        kl_coef: beta >= 0; > 0 requires ``ref_logprobs``.
        entropy: (B, T) per-token entropy (``token_entropy``); logged when given.
        entropy_coef: Entropy bonus; non-zero requires ``entropy``.

    Returns:
        ``LossOutput`` with the scalar loss and float metrics (computed without grad; the
        clip/ratio diagnostics are plain token means over the mask, unweighted; 0 when the
        batch has no response tokens).
    """
    if logprobs.dim() != 2:
        raise ValueError(f"logprobs must be (B, T), got shape {tuple(logprobs.shape)}")
    shape = tuple(logprobs.shape)
    _check("old_logprobs", old_logprobs, shape, "per-token log pi_old aligned with logprobs")
    _check("advantages", advantages, shape[:1], "one advantage per sequence, shape (B,)")
    _check("ref_logprobs", ref_logprobs, shape, "per-token reference logprobs aligned with logprobs")
    _check("entropy", entropy, shape, "per-token entropy aligned with logprobs")
    _validate_aggregation(logprobs, mask, aggregation, weights, max_response_length)
    for name, value in (("eps_low", eps_low), ("eps_high", eps_high), ("kl_coef", kl_coef)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {value}")
    if kl_coef > 0 and ref_logprobs is None:
        raise ValueError("kl_coef > 0 needs ref_logprobs (frozen reference); pass them or set kl_coef=0")
    if entropy_coef != 0 and entropy is None:
        raise ValueError("entropy_coef != 0 needs entropy (see token_entropy); pass it or set entropy_coef=0")

    agg = partial(
        _aggregate, mask=mask, mode=aggregation, weights=weights, max_response_length=max_response_length
    )
    active = mask.to(logprobs.dtype) > 0
    adv = advantages.to(logprobs.dtype).unsqueeze(-1)
    # Zero the log-ratio on padding *before* exp so garbage there cannot make inf * 0 = NaN.
    log_ratio = torch.where(active, logprobs - old_logprobs, 0.0).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
    ratio = log_ratio.exp()
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * adv
    pg_loss = agg(-torch.minimum(unclipped, clipped))
    loss = pg_loss
    logged: dict[str, torch.Tensor] = {"pg_loss": pg_loss}

    if ref_logprobs is not None:
        # Without a KL term, use detached p so the metric costs no graph.
        p = logprobs if kl_coef > 0 else logprobs.detach()
        diff = torch.where(active, ref_logprobs - p, 0.0).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
        kl = agg(diff.exp() - diff - 1.0)
        loss = loss + kl_coef * kl if kl_coef > 0 else loss
        logged["kl"] = kl
    if entropy is not None:
        ent = agg(entropy if entropy_coef != 0 else entropy.detach())
        loss = loss - entropy_coef * ent if entropy_coef != 0 else loss
        logged["entropy"] = ent

    with torch.no_grad():
        m = mask.to(logprobs.dtype)
        n = _safe_denominator(m.sum())

        def token_share(x: torch.Tensor) -> torch.Tensor:
            return (x.to(m.dtype) * m).sum() / n

        logged["loss"] = loss
        # Clipped branch active: min picked the clipped term and it differs from the unclipped one.
        logged["clip_fraction"] = token_share(clipped < unclipped)
        logged["ratio_mean"] = token_share(ratio)
        logged["ratio_max"] = ratio.masked_fill(~active, 0.0).amax() if ratio.numel() else m.sum()
        logged["approx_kl_old"] = token_share(-log_ratio)  # mean of old - new logprob
        values = torch.stack([v.detach().to(torch.float64) for v in logged.values()]).tolist()
    return LossOutput(loss=loss, metrics=dict(zip(logged, values, strict=True)))
