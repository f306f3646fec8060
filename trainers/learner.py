"""The learner: policy-gradient updates on each rollout batch, for every trainable policy.

A *unit* is what one optimiser trains: a whole shared model (``HFPolicy`` without
adapters), one per-role LoRA adapter (``HFPolicy(..., adapters=roles)``, only that
adapter's parameters), or a separate per-role model. A ``VLLMPolicy`` is trained through
its ``trainable`` HF copy; pushing the new weights to its engine is the caller's job
(``VLLMPolicy.sync_weights``, after every step). Units are found from a ``Team`` and
named like ``Turn.policy`` (``"name"`` or ``"name:adapter"``), so every sample is trained
by exactly the policy that produced it. Scripted policies are not trained.

One ``step`` on a rollout batch, per unit:

1. dynamic sampling (``dynamic_sampling``; default on for the DAPO loss only): samples with
   advantage 0 (singleton or all-equal groups) are dropped and counted. With it off they stay
   in the loss: they count in its denominator (and in the KL / entropy terms when those are
   on). Their policy-gradient term is exactly 0, so without a KL or entropy term they are
   counted but not forwarded: the same gradient, at no compute cost;
2. pi_old (docs/algorithms.md section 3, ``old_logprobs``): the sampler's logprobs, exact when the
   sampler and the learner share weights, temperature, top-p and float32 numerics; in
   bfloat16 / float16 (``"auto"``) or on request (``"recompute"``) the learner recomputes them
   with its own forward before any update. pi_old then stays fixed for the whole step;
3. ``passes`` over the batch, each split into ``mini_batches`` (whole prompt groups, seeded
   shuffle), one optimiser step per mini-batch (TRL's ``num_iterations``, verl's
   ``ppo_epochs`` / ``ppo_mini_batch_size``). From the second optimiser step on the ratio
   pi_theta / pi_old leaves 1 and the clip range acts; clip fraction, ratio and approximate
   KL to pi_old are logged per pass;
4. micro-batches under a padded-token budget; each micro-batch's loss is scaled by its
   share of the mini-batch's aggregation denominator, so the summed gradients equal those
   of one forward over the whole mini-batch; gradient clipping, then the optimiser step.

Log-probabilities are computed with ``agents.sampling`` under the sampler's temperature
and top-p, over left-padded prompt + response sequences with the same position ids the
sampler used.

Data parallel (``Learner.group``, a ``DataParallel`` over a torch.distributed group; the Ray
runtime's ``--learner-ranks``): every rank holds the same weights, plans the same mini- and
micro-batches from the same samples and seed, forwards and backwards every ``world``-th
micro-batch only (each still scaled by its share of the whole mini-batch's denominator), and
the ranks sum their gradients and metrics before the clip and the optimiser step, so every
rank takes the step one learner would (up to the order of float sums).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from agents.team import Team
from trainers.activations import recomputed_activations
from trainers.advantages import AdvantageResult
from trainers.learner_config import LearnerConfig
from trainers.losses import policy_loss, token_entropy, token_logprobs
from trainers.prefix import prefix_cost, shared_prefix_logits
from trainers.records import Turn
from trainers.train_units import TrainUnit, holding, units_from_team

__all__ = ["LearnerConfig", "Learner", "TrainUnit", "DataParallel"]


_ZERO = 1e-12  # |advantage| below this is a zero advantage (singleton or all-equal group)


@dataclass
class _MicroBatch:
    input_ids: torch.Tensor  # (B, L) left-padded prompt + response
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    response_ids: torch.Tensor  # (B, R) right-padded response tokens
    response_mask: torch.Tensor  # (B, R)
    old_logprobs: torch.Tensor  # (B, R)
    advantages: torch.Tensor  # (B,)
    weights: torch.Tensor  # (B,)
    indices: list[int]  # positions in the step's sample list
    shared_prompt: torch.Tensor | None = None  # (P,) when every row shares this prompt
    roles: tuple[str, ...] = ()  # each row's role (its sampling temperature)

    @property
    def token_forwards(self) -> int:
        """Token positions the forward computes (what the shared prefix saves)."""
        if self.shared_prompt is not None:
            return prefix_cost(len(self.shared_prompt), self.response_mask.sum(-1).tolist())
        return int(self.input_ids.numel())


@dataclass(frozen=True)
class DataParallel:
    """This process's place among ``world`` learner ranks of ``process_group`` (module docstring)."""

    rank: int
    world: int
    process_group: Any = None  # None: torch.distributed's default group

    def sum_gradients(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Every rank's gradients summed, on every rank (a rank without any holds zeros)."""
        import torch.distributed as dist

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, group=self.process_group)
        offset = 0
        for parameter in parameters:
            size = parameter.numel()
            parameter.grad = flat[offset : offset + size].view_as(parameter).clone()
            offset += size

    def gather(self, value: Any) -> list[Any]:
        """``value`` of every rank, in rank order (small picklable values: metric sums)."""
        import torch.distributed as dist

        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, value, group=self.process_group)
        return out


class Learner:
    """Trains the HF policies of a team (see module docstring).

    Args:
        team: The team whose HF policies are trained.
        config: The learner's settings.
        group: This rank of a data-parallel learner group (None: one learner).
    """

    def __init__(
        self, team: Team, config: LearnerConfig | None = None, group: DataParallel | None = None
    ) -> None:
        self.config = config or LearnerConfig()
        self.units = units_from_team(team, self.config)
        self.group = group

    # ------------------------------------------------------------------ batching
    def _micro_batches(
        self,
        unit: TrainUnit,
        samples: Sequence[Turn],
        indices: list[int],
        advantages: np.ndarray,
        weights: np.ndarray,
        old_logprobs: Mapping[int, Sequence[float]] | None = None,
    ) -> Iterator[_MicroBatch]:
        """Micro-batches under the token budget (pi_old from ``old_logprobs[i]`` where given,
        else the sampler's ``samples[i].logprobs``). With ``shared_prefix``, samples with identical
        prompt ids form groups; each group of size > 1 is a shared-prefix micro-batch (split
        into sub-groups when P + K * R_max exceeds the budget, the prompt counted once per
        sub-group); singletons, the samples of a prompt too long to share with even one other
        response within the budget (or everything, with the switch off) are packed into padded
        micro-batches costing rows x longest sequence."""
        pad, device = unit.policy.tokenizer.pad_token_id, unit.policy.device
        old = old_logprobs or {}
        collate = partial(
            self._collate, device, pad, samples, advantages=advantages, weights=weights, old=old
        )
        singles = list(indices)
        if self.config.shared_prefix:
            groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
            for i in indices:
                groups[samples[i].prompt_token_ids].append(i)
            singles = [members[0] for members in groups.values() if len(members) == 1]
            for prompt, members in groups.items():
                if len(members) == 1:
                    continue
                # A sub-group must fit the budget: the shared-prefix forward cannot recompute its
                # activations (trainers.activations), so a prompt too long for even two of its
                # responses goes to the padded path, whose over-budget sequences recompute.
                chunk: list[int] = []
                for i in members + [None]:
                    if i is not None:
                        lengths = [len(samples[j].token_ids) for j in chunk + [i]]
                        if not chunk or prefix_cost(len(prompt), lengths) <= self.config.micro_batch_tokens:
                            chunk.append(i)
                            continue
                    if len(chunk) > 1:
                        yield collate(chunk, shared=True)
                    else:
                        singles.extend(chunk)
                    chunk = [i] if i is not None else []
        order = sorted(singles, key=lambda i: len(samples[i].prompt_token_ids) + len(samples[i].token_ids))
        chunk = []
        for i in order + [None]:
            if i is not None:
                longest = max(
                    len(samples[j].prompt_token_ids) + len(samples[j].token_ids) for j in chunk + [i]
                )
                if not chunk or longest * (len(chunk) + 1) <= self.config.micro_batch_tokens:
                    chunk.append(i)
                    continue
            if chunk:
                yield collate(chunk)
            chunk = [i] if i is not None else []

    @staticmethod
    def _collate(
        device, pad, samples, chunk, *, advantages, weights, old, shared: bool = False
    ) -> _MicroBatch:
        sequences = [list(samples[i].prompt_token_ids) + list(samples[i].token_ids) for i in chunk]
        width = max(map(len, sequences))
        longest_response = max(len(samples[i].token_ids) for i in chunk)
        input_ids = torch.tensor([[pad] * (width - len(s)) + s for s in sequences], device=device)
        attention = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences], device=device)
        responses = [list(samples[i].token_ids) for i in chunk]
        response_ids = torch.tensor(
            [r + [pad] * (longest_response - len(r)) for r in responses], device=device
        )
        response_mask = torch.tensor(
            [[1] * len(r) + [0] * (longest_response - len(r)) for r in responses], device=device
        )
        old_rows = [list(old.get(i, samples[i].logprobs)) for i in chunk]
        old_rows = [row + [0.0] * (longest_response - len(row)) for row in old_rows]
        return _MicroBatch(
            input_ids=input_ids,
            attention_mask=attention,
            position_ids=(attention.cumsum(-1) - 1).clamp(min=0),
            response_ids=response_ids,
            response_mask=response_mask,
            old_logprobs=torch.tensor(old_rows, dtype=torch.float32, device=device),
            advantages=torch.tensor(advantages[chunk], dtype=torch.float32, device=device),
            weights=torch.tensor(weights[chunk], dtype=torch.float32, device=device),
            indices=list(chunk),
            roles=tuple(getattr(samples[i], "role", "") for i in chunk),  # "": a record without roles
            shared_prompt=torch.tensor(samples[chunk[0]].prompt_token_ids, device=device) if shared else None,
        )

    def _response_logits(self, model: Any, batch: _MicroBatch) -> torch.Tensor:
        """Logits predicting each response token, (B, R, V), response-aligned.

        Shared-prefix micro-batches use ``trainers.prefix``. Otherwise sequences are
        left-padded, so every response ends at the last column: the logits at columns
        L-1-R_b .. L-2 predict row b's R_b response tokens."""
        if batch.shared_prompt is not None:
            return shared_prefix_logits(model, batch.shared_prompt, batch.response_ids)
        longest = batch.response_ids.shape[1]
        with recomputed_activations(model, enabled=model.training and self._recomputes(batch)):
            logits = model(
                input_ids=batch.input_ids,
                attention_mask=batch.attention_mask,
                position_ids=batch.position_ids,
                logits_to_keep=longest + 1,
                use_cache=False,
            ).logits[:, :-1, :]  # (B, R, V): the last column predicts nothing we sampled
        lengths = batch.response_mask.sum(-1)
        # Shift each row so its response starts at column 0: row b's predictions occupy the
        # last R_b of the R kept columns.
        columns = torch.arange(longest, device=logits.device).unsqueeze(0) + (longest - lengths).unsqueeze(1)
        columns = columns.clamp(max=longest - 1)
        return logits.gather(1, columns.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))

    def _recomputes(self, batch: _MicroBatch) -> bool:
        """Whether the update's forward of ``batch`` recomputes its activations: a padded
        micro-batch over the token budget (a sequence longer than it), with ``recompute_long``."""
        over_budget = batch.input_ids.numel() > self.config.micro_batch_tokens
        return self.config.recompute_long and batch.shared_prompt is None and over_budget

    def _logprobs(self, model: Any, batch: _MicroBatch) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self._response_logits(model, batch)
        temperature = self.config.temperature
        if self.config.role_temperature:  # rows of different roles: divide each by its own
            by_role = [self.config.role_temperature.get(role, temperature) for role in batch.roles]
            scale = torch.tensor(by_role, dtype=torch.float32, device=logits.device).view(-1, 1, 1)
            logits, temperature = logits.float() / scale, 1.0
        logprobs = token_logprobs(logits, batch.response_ids, temperature, self.config.top_p)
        return logprobs, token_entropy(logits, temperature)

    # ------------------------------------------------------------------ update
    def step(
        self, samples: Sequence[Turn], result: AdvantageResult, *, seed: int = 0
    ) -> dict[str, dict[str, float]]:
        """Update every unit on ``samples`` (module docstring). ``seed`` draws the mini-batch
        split (pass the training step's seed so a resumed run repeats it). Returns metrics per
        unit name (units with no sample left are reported with ``samples = 0``)."""
        advantages = np.asarray(result.advantages, dtype=np.float64)
        weights = np.asarray(result.weights, dtype=np.float64)
        if len(advantages) != len(samples) or len(weights) != len(samples):
            raise ValueError(
                f"{len(samples)} samples but {len(advantages)} advantages / {len(weights)} weights"
            )
        by_unit: dict[str, list[int]] = defaultdict(list)
        dropped: dict[str, int] = defaultdict(int)
        for i, turn in enumerate(samples):
            if turn.policy not in self.units:
                continue  # produced by a scripted policy
            if self.config.drops_zero_advantage and abs(advantages[i]) < _ZERO:
                dropped[turn.policy] += 1
                continue
            if not turn.token_ids:
                continue  # nothing was sampled (empty generation): no token to train
            by_unit[turn.policy].append(i)
        rng = np.random.default_rng(seed)
        metrics: dict[str, dict[str, float]] = {}
        for name, unit in self.units.items():
            indices = by_unit.get(name, [])
            metrics[name] = {"samples": float(len(indices)), "dropped_zero_advantage": float(dropped[name])}
            if indices:
                metrics[name].update(self._update(unit, samples, indices, advantages, weights, rng))
        return metrics

    def old_logprob_units(self) -> list[str]:
        """The units whose pi_old this learner recomputes (``old_logprobs``), for the run's log."""
        return [name for name, unit in self.units.items() if self.recomputes_old_logprobs(unit)]

    def recomputes_old_logprobs(self, unit: TrainUnit) -> bool:
        """Whether pi_old comes from the learner's forward for ``unit`` (``old_logprobs``)."""
        if self.config.old_logprobs != "auto":
            return self.config.old_logprobs == "recompute"
        dtype = next(unit.policy.model.parameters()).dtype
        return dtype not in (torch.float32, torch.float64)

    def _split(
        self, samples: Sequence[Turn], indices: list[int], rng: np.random.Generator
    ) -> list[list[int]]:
        """``mini_batches`` parts of about equal size, made of whole prompt groups (so the
        shared-prefix forward keeps its groups) in a seeded random order."""
        parts = self.config.mini_batches
        if parts == 1:
            return [list(indices)]
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for i in indices:
            groups[samples[i].prompt_token_ids].append(i)
        ordered = list(groups.values())
        out: list[list[int]] = [[] for _ in range(parts)]
        placed, target = 0, len(indices) / parts
        for g in rng.permutation(len(ordered)).tolist():
            out[min(parts - 1, int(placed / target))].extend(ordered[g])
            placed += len(ordered[g])
        return [part for part in out if part]

    def _update(self, unit, samples, indices, advantages, weights, rng) -> dict[str, float]:
        config, loss_kwargs = self.config, self.config.loss_kwargs()
        aggregation = loss_kwargs["aggregation"]
        # Zero-advantage samples add exactly 0 to the policy-gradient sum; without a KL or
        # entropy term that is all they add, so they are counted in the denominators only.
        forward_all = config.kl_coef > 0 or config.entropy_coef != 0
        idle = set() if forward_all else {i for i in indices if abs(advantages[i]) < _ZERO}

        def plan(
            part: list[int], old: Mapping[int, Sequence[float]] | None
        ) -> tuple[list[_MicroBatch], float]:
            """A mini-batch's micro-batches and its counted-only samples' denominator share."""
            forwarded = [i for i in part if i not in idle]
            batches = list(self._micro_batches(unit, samples, forwarded, advantages, weights, old))
            counted = [i for i in part if i in idle]
            lengths = [len(samples[i].token_ids) for i in counted]
            return batches, _denominator_share(weights[counted], lengths, aggregation)

        first = [plan(part, None) for part in self._split(samples, indices, rng)]
        out: dict[str, float] = {"zero_advantage_kept": float(len(idle))}
        old: dict[int, list[float]] = {}
        if self.recomputes_old_logprobs(unit):
            out.update(self._recompute_old_logprobs(unit, [b for batches, _ in first for b in batches], old))
        else:
            out["old_logprobs_recomputed"] = 0.0
        steps: list[dict[str, float]] = []
        for p in range(config.passes):
            parts = first if p == 0 else [plan(part, old) for part in self._split(samples, indices, rng)]
            this_pass = [m for batches, idle_d in parts if (m := self._optimizer_step(unit, batches, idle_d))]
            steps += this_pass
            if config.passes > 1 and this_pass:
                for key in ("clip_fraction", "approx_kl_old", "ratio_mean"):
                    out[f"pass{p + 1}/{key}"] = float(np.mean([m[key] for m in this_pass]))
        if not steps:
            return {**out, "skipped_zero_weight": 1.0}  # nothing to learn: zero weights or advantages
        for key in steps[0]:
            if key == "ratio_max":
                out[key] = float(max(m[key] for m in steps))
            elif key in ("micro_batches", "prefix_groups", "token_forwards"):
                out[key] = float(sum(m[key] for m in steps))
            else:
                out[key] = float(np.mean([m[key] for m in steps]))
        out["optimizer_steps"] = float(len(steps))
        return out

    def _recompute_old_logprobs(
        self, unit: TrainUnit, batches: list[_MicroBatch], old: dict[int, list[float]]
    ) -> dict[str, float]:
        """pi_old from the learner's forward, before any update, into the batches (and ``old``,
        by sample index, for the re-split later passes); how far the sampler's were off."""
        gaps: list[torch.Tensor] = []
        with torch.no_grad(), unit.policy.using_adapter(unit.adapter):
            for batch in batches:
                recomputed = self._logprobs(unit.policy.model, batch)[0].float()
                mask = batch.response_mask.bool()
                gaps.append((recomputed - batch.old_logprobs)[mask].abs())
                batch.old_logprobs = recomputed
                for row, i in enumerate(batch.indices):
                    old[i] = recomputed[row, : int(mask[row].sum())].tolist()
        gap = torch.cat(gaps) if gaps else torch.zeros(0)
        return {
            "old_logprobs_recomputed": 1.0,
            "old_logprob_gap_mean": float(gap.mean()) if gap.numel() else 0.0,
            "old_logprob_gap_max": float(gap.max()) if gap.numel() else 0.0,
        }

    def _optimizer_step(self, unit: TrainUnit, batches: list[_MicroBatch], idle_denominator: float):
        """One optimiser step on one mini-batch (its forwarded micro-batches plus the
        denominator share of its counted-only samples); None when there is nothing to learn."""
        config, loss_kwargs = self.config, self.config.loss_kwargs()
        aggregation = loss_kwargs["aggregation"]
        total = sum(_denominator(b, aggregation) for b in batches) + idle_denominator
        if not batches or total <= 0:
            return None  # every sample has loss weight 0, or none needs a forward
        model = unit.policy.model
        model.train()
        unit.optimizer.zero_grad(set_to_none=True)
        exact: dict[str, float] = defaultdict(float)  # terms of the loss: share-weighted sums
        means: dict[str, float] = defaultdict(float)  # token diagnostics: means over forwarded tokens
        forwarded, ratio_max = 0.0, 0.0
        group = self.group if self.group is not None and self.group.world > 1 else None
        mine = batches[group.rank :: group.world] if group else batches  # shares stay of the whole
        with unit.policy.using_adapter(unit.adapter):
            for batch in mine:
                share = _denominator(batch, aggregation) / total
                reference = self._reference_logprobs(unit, batch) if config.kl_coef > 0 else None
                logprobs, entropy = self._logprobs(model, batch)
                output = policy_loss(
                    logprobs,
                    batch.old_logprobs,
                    batch.advantages,
                    batch.response_mask,
                    weights=batch.weights,
                    ref_logprobs=reference,
                    entropy=entropy,
                    **loss_kwargs,
                )
                (output.loss * share).backward()
                forwarded += share
                for key, value in output.metrics.items():
                    if key == "ratio_max":
                        ratio_max = max(ratio_max, value)
                    elif key in ("loss", "pg_loss", "kl", "entropy"):
                        exact[key] += value * share
                    else:
                        means[key] += value * share
        if group:  # every rank: the sums one learner would hold
            group.sum_gradients(unit.parameters)
            parts = group.gather((dict(exact), dict(means), forwarded, ratio_max))
            exact, means = defaultdict(float), defaultdict(float)
            for part_exact, part_means, _, _ in parts:
                for key, value in part_exact.items():
                    exact[key] += value
                for key, value in part_means.items():
                    means[key] += value
            forwarded = sum(part[2] for part in parts)
            ratio_max = max(part[3] for part in parts)
        grad_norm = _grad_norm(unit.parameters)
        if config.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(unit.parameters, config.max_grad_norm)
        unit.optimizer.step()
        unit.optimizer.zero_grad(set_to_none=True)
        model.eval()
        return {
            **exact,
            **{key: value / max(forwarded, 1e-12) for key, value in means.items()},
            "ratio_max": ratio_max,
            "grad_norm": grad_norm,
            "micro_batches": float(len(batches)),
            "prefix_groups": float(sum(b.shared_prompt is not None for b in batches)),
            "recomputed_micro_batches": float(sum(self._recomputes(b) for b in batches)),
            "token_forwards": float(sum(b.token_forwards for b in batches)),
        }

    def _reference_logprobs(self, unit: TrainUnit, batch: _MicroBatch) -> torch.Tensor:
        """The KL reference's log-probs of ``batch`` (``TrainUnit.reference``), under no_grad.
        A LoRA unit started from --init swaps its adapter to those tensors for this forward:
        it runs before the micro-batch's policy forward, so no autograd graph holds them."""
        with torch.no_grad():
            if unit.reference is not None:
                return self._logprobs(unit.reference, batch)[0]
            if unit.reference_adapter is not None:
                with holding(unit.parameters, unit.reference_adapter):
                    return self._logprobs(unit.policy.model, batch)[0]
            with unit.policy.model.disable_adapter():
                return self._logprobs(unit.policy.model, batch)[0]


def _denominator_share(weights: Sequence[float], lengths: Sequence[float], aggregation: str) -> float:
    """Sequences' part of ``trainers.losses`` aggregation denominator: their weighted token
    counts (``token-mean``) or weights (sequence modes; a sequence without tokens counts 0)."""
    w, n = np.asarray(weights, dtype=np.float64), np.asarray(lengths, dtype=np.float64)
    return float((w * (n if aggregation == "token-mean" else n > 0)).sum())


def _denominator(batch: _MicroBatch, aggregation: str) -> float:
    """The micro-batch's part of the aggregation denominator."""
    lengths = batch.response_mask.sum(-1).cpu().numpy()
    return _denominator_share(batch.weights.cpu().numpy(), lengths, aggregation)


def _grad_norm(parameters: Sequence[torch.nn.Parameter]) -> float:
    grads = [p.grad.detach().float().norm() for p in parameters if p.grad is not None]
    return float(torch.stack(grads).norm()) if grads else 0.0
