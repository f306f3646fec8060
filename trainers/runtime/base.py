"""The runtime seam: the ``Runtime`` protocol every runtime implements and the errors a
step can end with. The bottom of ``trainers.runtime``: it imports no runtime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from trainers.advantages import AdvantageResult
from trainers.records import RolloutBatch, Turn
from trainers.rollout import RolloutRequest
from trainers.run.checkpoint import load_checkpoint, save_checkpoint
from trainers.run.init_weights import initialise_learner

__all__ = ["LearnerVerbs", "Runtime", "StaleWeightsError", "WorkerLost"]


class StaleWeightsError(RuntimeError):
    """``collect`` after an ``update`` that was never published."""


class WorkerLost(RuntimeError):
    """A worker the run cannot go on without (a learner or an engine) died: the step is
    abandoned, and the run continues from its last checkpoint with ``--resume``."""


@runtime_checkable
class Runtime(Protocol):
    """The three verbs (module docstring); ``version``: updates published so far;
    ``serves_copies``: engines sample from their own copy of the weights (publish moves them)."""

    version: int
    serves_copies: bool

    def collect(self, request: RolloutRequest) -> RolloutBatch: ...

    def update(
        self, samples: Sequence[Turn], advantages: AdvantageResult, *, seed: int
    ) -> dict[str, dict[str, float]]: ...

    def publish(self) -> float: ...

    def old_logprob_units(self) -> list[str]: ...

    def load_checkpoint(self, path: Any) -> dict[str, Any]: ...

    def save_checkpoint(self, run_dir: Any, step: int, state: Mapping[str, Any], keep: int) -> None: ...

    def initialise(self, config: Any, *, resumed: bool = False) -> str: ...

    def close(self) -> None: ...


class LearnerVerbs:
    """The verbs around a ``learner`` (a plain ``trainers.learner.Learner``) that every holder of
    one answers the same way: ``LocalRuntime`` in the run's process, ``LearnerWorker`` on Ray."""

    learner: Any

    def old_logprob_units(self) -> list[str]:
        """Units whose pi_old the learner recomputes (``--old-logprobs``)."""
        return self.learner.old_logprob_units()

    def load_checkpoint(self, path: Any) -> dict[str, Any]:
        return load_checkpoint(path, self.learner)

    def save_checkpoint(self, run_dir: Any, step: int, state: Mapping[str, Any], keep: int) -> None:
        save_checkpoint(run_dir, step, self.learner, state, keep=keep)

    def initialise(self, config: Any, *, resumed: bool = False) -> str:
        """--init: the named run's weights and KL reference (``resumed``: the reference only;
        ``init_weights.initialise_learner``); where they came from."""
        return initialise_learner(self.learner, config.init, resumed=resumed)
