"""``TrainingPreset``: the training defaults an env class declares (``TRAINING = ...``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrainingPreset"]


@dataclass(frozen=True)
class TrainingPreset:
    """How ``python -m trainers.at_grpo --env <this env>`` trains when the user sets nothing
    (``trainers.sft`` and ``benchmarks.evaluate`` read the same values). An env class declares
    its own as ``TRAINING = TrainingPreset(...)``; the defaults are sized for a 2-core laptop
    CPU and the default 135M model: a training step in a few minutes.

    Attributes:
        max_new_tokens: Longest reply in tokens: enough for one answer in the env's grammar
            (a reply of moves needs ~16, a program ~200); longer replies mostly add junk.
        role_max_new_tokens: Longest reply of the roles that need another length than
            ``max_new_tokens`` (a tool agent's program: ``{"tool": 384}``); a role no team of
            the run has is ignored.
        temperature: Sampling temperature of training rollouts. 0.7: at 1.0 the 135M model's
            replies are mostly invalid, and all-invalid groups carry no advantage.
        tasks_per_step: Training tasks per step.
        max_cycles: The training horizon in full cycles of the turn order (None, or not
            shorter than the env's ``DEFAULT_MAX_CYCLES``: the env's own horizon). 2: a
            first answer and a fix after feedback; each further cycle of a small model's
            replies mostly adds invalid turns and time.
        env_kwargs: Other ``envs.make`` arguments for training, e.g. ``{"difficulty": "easy"}``.
        steps: Training steps.
        eval_every: Evaluate on held-out tasks every N steps (and before and after).
        eval_tasks: Held-out tasks per evaluation.
        policy: How the team's roles share trainable weights when ``--policy`` is not given:
            ``"shared"`` (one policy in every role: a game's self-play, where the seats differ
            by prompt only) or ``"per_role"``; None leaves it to the ``--algo`` preset.
        algo: The algorithm preset (``trainers.presets.ALGO_PRESETS``) when ``--algo`` is not
            given; None: ``at_grpo``. Zero-sum self-play games set ``"spiral"`` (episode-level
            groups with a per-seat baseline): one-step branch rewards are 0 on almost every
            game turn, so tree groups would carry no signal there.
        warm_start: ``python -m trainers.sft`` values for this env where the command line
            gives none, by ``trainers.sft_config.SFTConfig`` field name, e.g.
            ``{"teams": ("single",), "train_tasks": 400, "steps": 150}`` (empty: the command's
            own defaults). For envs whose turns are long enough that the defaults would not fit
            a 2-core CPU's time; a field the warm start does not have is an error when it runs.
    """

    max_new_tokens: int = 32
    role_max_new_tokens: dict[str, int] = field(default_factory=dict)
    temperature: float = 0.7
    tasks_per_step: int = 4
    max_cycles: int | None = 2
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    steps: int = 10
    eval_every: int = 5
    eval_tasks: int = 16
    policy: str | None = None
    algo: str | None = None
    warm_start: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.policy not in (None, "shared", "per_role"):
            raise ValueError(f"TrainingPreset.policy must be 'shared', 'per_role' or None: {self.policy!r}")
        if self.algo is not None and (not isinstance(self.algo, str) or not self.algo):
            raise ValueError(f"TrainingPreset.algo must be an algorithm preset's name or None: {self.algo!r}")
        for name in ("max_new_tokens", "tasks_per_step", "steps", "eval_tasks"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"TrainingPreset.{name} must be a positive int, got {value!r}")
        for role, value in self.role_max_new_tokens.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                field_name = f"TrainingPreset.role_max_new_tokens[{role!r}]"
                raise ValueError(f"{field_name} must be an int >= 1, got {value!r}")
        if self.max_cycles is not None and (not isinstance(self.max_cycles, int) or self.max_cycles < 1):
            raise ValueError(f"TrainingPreset.max_cycles must be an int >= 1 or None: {self.max_cycles!r}")
        if not self.temperature > 0:
            raise ValueError(f"TrainingPreset.temperature must be > 0, got {self.temperature!r}")
        if not isinstance(self.eval_every, int) or self.eval_every < 0:
            raise ValueError(f"TrainingPreset.eval_every must be an int >= 0, got {self.eval_every!r}")
        for reserved in ("team", "split", "max_cycles"):
            if reserved in self.env_kwargs:
                where = "the max_cycles field" if reserved == "max_cycles" else "the trainer"
                raise ValueError(f"TrainingPreset.env_kwargs may not set {reserved!r}; {where} sets it")

    def make_kwargs(self, env_max_cycles: int | None = None) -> dict[str, Any]:
        """The ``envs.make`` arguments training uses: ``env_kwargs`` and the horizon, which is
        left out when the env's own (``env_max_cycles``) is no longer: a preset shortens an
        env's episodes, never lengthens them."""
        horizon = self.max_cycles
        if horizon is None or (env_max_cycles is not None and horizon >= env_max_cycles):
            return dict(self.env_kwargs)
        return {**self.env_kwargs, "max_cycles": horizon}
