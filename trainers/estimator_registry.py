"""The contract of an advantage estimator and the registry that makes one trainable by name.

An estimator is ``fn(samples, **options) -> AdvantageResult``; ``register_estimator`` records it
with what it needs from a training run (an ``EstimatorSpec``: the rollouts it is meaningful on,
a role the team must have, which keyword takes ``--advantage-scale``), so the trainer checks a
config against the spec, never against estimator names.

The built-in estimators live in ``trainers.advantages`` and register themselves when it is
imported; import the registry and ``compute_advantages`` from there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "AdvantageResult",
    "EstimatorSpec",
    "ROLLOUTS",
    "SCALES",
    "STATE_KEYWORD",
    "register_estimator",
]


@dataclass(frozen=True)
class AdvantageResult:
    """What an estimator returns.

    Attributes:
        advantages: float64, one per sample, in the order the samples were given.
        weights: float64 per-sample loss weights (ones unless the estimator sets them).
        diagnostics: Scalars and histograms to log (``group_stats`` keys, prefixed per level).
        state: See the field (None: the estimator keeps no state).
    """

    advantages: np.ndarray
    weights: np.ndarray
    diagnostics: dict[str, float | dict] = field(default_factory=dict)
    state: dict | None = None
    """A stateful estimator's new state (JSON data), to pass as ``state`` on the next call;
    the trainer keeps it in its checkpoints so a resumed run continues with it."""


ROLLOUTS = ("tree", "plain")
STATE_KEYWORD = "state"
SCALES = ("group", "batch", "none")


@dataclass(frozen=True)
class EstimatorSpec:
    """A registered estimator and what it needs from a training run, so the trainer checks a
    config against the spec instead of against estimator names.

    Attributes:
        fn: ``fn(samples, **options) -> AdvantageResult``; its keyword-only parameters are its
            options (``--estimator-kwargs``). It must accept an empty batch: the trainer calls
            ``fn([], **options)`` to check options before any model loads. A keyword-only
            ``state`` makes it stateful (``rae``): it gets its previous result's ``state``.
        rollouts: The rollouts it is meaningful on (``trainers.rollout``: ``tree``, ``plain``).
        role_option: The option naming a role every episode must have (matpo's
            ``planner_role``); the team variant must have that role.
        scale_option: The keyword that receives ``--advantage-scale`` (None: the estimator has
            no scale option and takes only ``none``).
        scale_values: ``--advantage-scale`` value -> the estimator's own spelling of it (None:
            passed as is); its keys are the scales it accepts.
    """

    fn: Callable[..., AdvantageResult]
    rollouts: tuple[str, ...] = ROLLOUTS
    role_option: str | None = None
    scale_option: str | None = "scale"
    scale_values: Mapping[str, str] | None = None

    @property
    def options(self) -> dict[str, inspect.Parameter]:
        """Keyword-only parameters (the options), by name; ``state`` is not one (see ``stateful``)."""
        parameters = inspect.signature(self.fn).parameters.values()
        return {p.name: p for p in parameters if p.kind is p.KEYWORD_ONLY and p.name != STATE_KEYWORD}

    @property
    def stateful(self) -> bool:
        """``fn`` takes ``state`` (its ``AdvantageResult.state`` of the previous call): the
        trainer carries it from step to step and through checkpoints."""
        return STATE_KEYWORD in inspect.signature(self.fn).parameters

    @property
    def scales(self) -> tuple[str, ...]:
        """The ``--advantage-scale`` values it accepts."""
        if self.scale_option is None:
            return ("none",)
        return tuple(self.scale_values) if self.scale_values else SCALES

    def scale_kwargs(self, scale: str) -> dict[str, str]:
        """The keyword options that carry ``--advantage-scale`` ``scale`` to ``fn``."""
        if self.scale_option is None:
            return {}
        return {self.scale_option: self.scale_values[scale] if self.scale_values else scale}

    def required_role(self, options: Mapping[str, object]) -> str | None:
        """The role the team must have with these options (None: any team)."""
        if self.role_option is None:
            return None
        return str(options.get(self.role_option, self.options[self.role_option].default))


ADVANTAGE_ESTIMATORS: dict[str, EstimatorSpec] = {}


def register_estimator(
    name: str,
    fn: Callable[..., AdvantageResult],
    *,
    rollouts: tuple[str, ...] = ROLLOUTS,
    role_option: str | None = None,
    scale_option: str | None = "scale",
    scale_values: Mapping[str, str] | None = None,
) -> EstimatorSpec:
    """Make ``fn`` available as ``--estimator name`` (see ``EstimatorSpec`` for the rest).

    Raises:
        ValueError: ``name`` is taken by another function, or a declared option is not a
            keyword-only parameter of ``fn``, or a rollout is unknown.
    """
    spec = EstimatorSpec(fn, tuple(rollouts), role_option, scale_option, scale_values)
    unknown = [r for r in spec.rollouts if r not in ROLLOUTS]
    missing = [o for o in (role_option, scale_option) if o is not None and o not in spec.options]
    if unknown or missing or not spec.rollouts:
        raise ValueError(
            f"estimator {name!r}: rollouts {spec.rollouts} must be among {ROLLOUTS}; declared options "
            f"{missing} must be keyword-only parameters of {fn.__name__}"
        )
    if name in ADVANTAGE_ESTIMATORS and ADVANTAGE_ESTIMATORS[name].fn is not fn:
        raise ValueError(f"estimator {name!r} is already registered with {ADVANTAGE_ESTIMATORS[name].fn}")
    ADVANTAGE_ESTIMATORS[name] = spec
    return spec
