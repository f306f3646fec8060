"""The grouping engine: normalise values within groups, on float64 numpy arrays.

Every advantage estimator (``trainers.advantages``) is "build group keys from ``Turn`` fields,
then normalise within groups and combine levels" (docs/algorithms.md section 1); this module is the
second half, independent of records. Rules every function follows:

* a group of size 1 gets A = 0 (nothing to compare with);
* a group whose values are all equal gets A = 0 exactly and counts in ``zero_variance_groups``.
  "All equal" tolerates float rounding (max - min <= 1e-12 * max(1, max |v|)), so values summed in
  different orders (0.1 + 0.2 vs 0.3) do not turn noise into a +-1 split;
* std is the population std, eps = 1e-6 is added to it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

__all__ = [
    "EPS",
    "SCALES",
    "Groups",
    "check_choice",
    "discounted_returns",
    "group_ids",
    "group_stats",
    "normalize_in_groups",
    "rloo_in_groups",
]

EPS = 1e-6
SCALES = ("group", "batch", "none")
_EQUAL_RTOL = 1e-12

Groups = Sequence[Hashable] | np.ndarray


def group_ids(keys: Sequence[Hashable]) -> np.ndarray:
    """Dense int64 group ids 0..G-1, numbered in first-seen order of ``keys``."""
    index: dict[Hashable, int] = {}
    return np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))


def _dense(groups: Groups) -> tuple[np.ndarray, int]:
    """Any group labelling (keys or ints) -> (dense ids, number of groups)."""
    if isinstance(groups, np.ndarray) and groups.dtype.kind in "iu":
        uniq, inverse = np.unique(groups, return_inverse=True)
        return inverse.reshape(-1).astype(np.int64), len(uniq)
    ids = group_ids(list(groups))
    return ids, (int(ids.max()) + 1 if len(ids) else 0)


def _prepare(values: Sequence[float] | np.ndarray, groups: Groups) -> tuple[np.ndarray, np.ndarray, int]:
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    ids, n = _dense(groups)
    if len(ids) != len(v):
        raise ValueError(f"{len(v)} values but {len(ids)} group labels")
    return v, ids, n


def _moments(v: np.ndarray, ids: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Per group: sizes, population std and "all equal" flags; per value: value - group mean."""
    counts = np.bincount(ids, minlength=n)
    safe = np.maximum(counts, 1)
    centred = v - (np.bincount(ids, weights=v, minlength=n) / safe)[ids]
    std = np.sqrt(np.bincount(ids, weights=centred**2, minlength=n) / safe)
    hi, lo = np.full(n, -np.inf), np.full(n, np.inf)
    np.maximum.at(hi, ids, v)
    np.minimum.at(lo, ids, v)
    equal = hi - lo <= _EQUAL_RTOL * np.maximum(1.0, np.maximum(np.abs(hi), np.abs(lo)))
    return counts, centred, std, equal


def check_choice(name: str, value: object, choices: Sequence[object]) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r}; expected one of {list(choices)}")


def normalize_in_groups(
    values: Sequence[float] | np.ndarray, groups: Groups, scale: str = "group", eps: float = EPS
) -> np.ndarray:
    """Group-relative advantages.

    ``scale="group"``: A_i = (r_i - mean_g r) / (std_g r + eps), population std of the group (GRPO).
    ``scale="batch"``: A_i = (r_i - mean_g r) / (std r + eps), std of all ``values`` passed (the
    caller's batch, every group pooled, raw values): group mean, batch std.
    ``scale="none"``: A_i = r_i - mean_g r (Dr. GRPO, GiGPO ``mean_norm``).

    Singleton groups and all-equal groups get A = 0 under every scale.

    Args:
        values: One value per member.
        groups: One group label per member (any hashable keys, or ints).
        scale: ``"group"``, ``"batch"`` or ``"none"``.
        eps: Added to the std.

    Returns:
        float64 advantages, one per member, in input order.
    """
    check_choice("scale", scale, SCALES)
    v, ids, n = _prepare(values, groups)
    _, centred, std, equal = _moments(v, ids, n)
    if scale == "group":
        adv = centred / (std[ids] + eps)
    elif scale == "batch":
        adv = centred / (v.std() + eps) if len(v) else centred
    else:
        adv = centred
    adv[equal[ids]] = 0.0  # singletons are "all equal" too
    return adv


def rloo_in_groups(values: Sequence[float] | np.ndarray, groups: Groups) -> np.ndarray:
    """Leave-one-out baseline: A_i = r_i - mean_{j != i, j in g} r_j = K/(K-1) * (r_i - mean_g r).

    Singleton groups (no other member to form a baseline) and all-equal groups get A = 0.
    """
    v, ids, n = _prepare(values, groups)
    counts, centred, _, equal = _moments(v, ids, n)
    k = counts[ids].astype(np.float64)
    adv = centred * k / np.maximum(k - 1.0, 1.0)
    adv[equal[ids]] = 0.0
    return adv


def discounted_returns(
    rewards: Sequence[float] | np.ndarray,
    groups: Groups,
    gamma: float,
    order: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Discounted return-to-go within each group (episode): R_t = sum_{k >= t} gamma^(k - t) r_k.

    Members of a group are put in time order by ``order`` (ties and ``order=None``: input order);
    k - t counts positions in that order, not differences of ``order`` values.

    Returns:
        float64 returns, one per member, in input order.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma={gamma!r}; expected 0 <= gamma <= 1")
    r, ids, _ = _prepare(rewards, groups)
    keys = np.arange(len(r)) if order is None else np.asarray(order)
    out = np.empty_like(r)
    running, current = 0.0, -1
    for i in np.lexsort((keys, ids))[::-1]:  # by group, then time, walked backwards
        if ids[i] != current:
            running, current = 0.0, ids[i]
        running = r[i] + gamma * running
        out[i] = running
    return out


def group_stats(groups: Groups, values: Sequence[float] | np.ndarray) -> dict[str, float | dict]:
    """Diagnostics of a grouping.

    Returns:
        ``num_groups``; ``group_size_mean``/``_min``/``_max``; ``singleton_share`` (share of groups
        of size 1); ``zero_variance_groups`` (groups of size > 1 whose values are all equal: A = 0,
        no learning signal) and ``zero_variance_share`` (their share among groups of size > 1);
        ``group_size_histogram`` ({size: number of groups}, sizes ascending).
    """
    v, ids, n = _prepare(values, groups)
    counts, _, _, equal = _moments(v, ids, n)
    multi = counts > 1
    zero_var = int(np.sum(equal & multi))
    return {
        "num_groups": n,
        "group_size_mean": float(counts.mean()) if n else 0.0,
        "group_size_min": int(counts.min()) if n else 0,
        "group_size_max": int(counts.max()) if n else 0,
        "singleton_share": float(np.mean(counts == 1)) if n else 0.0,
        "zero_variance_groups": zero_var,
        "zero_variance_share": zero_var / int(multi.sum()) if multi.any() else 0.0,
        "group_size_histogram": dict(sorted(Counter(counts.tolist()).items())),
    }
