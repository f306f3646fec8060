"""Where a training step's work runs: the three verbs the training script calls.

* ``collect(request)``: play a ``RolloutRequest`` (tasks, tree or plain, K, sampling, seed)
  with the weights last published, and return its ``RolloutBatch`` (samples and episodes);
* ``update(samples, advantages, seed)``: one learner update of every trained unit on the
  samples and their advantages; metrics per unit;
* ``publish()``: make the updated weights the ones every engine samples from before the
  next ``collect``; the seconds it took.

Around them, what a run does with its learner: ``load_checkpoint`` / ``save_checkpoint``,
``initialise`` (``--init``) and ``old_logprob_units`` (for the log line).

``LocalRuntime`` (the default) does all of it in this process, on one team and one
``Learner``: what the training script always did. ``RayRuntime`` (``trainers.ray_runtime``,
the ``ray`` extra) places rollout workers, engine servers and learner workers
(``trainers.workers``) on a Ray cluster. ``make_runtime(config, env)`` builds the one
``config.runtime`` names. The algorithm (tree sampling, group keys, advantages, losses)
stays in the modules it calls, the same for every runtime, and none of them imports a
distributed framework.

The on-policy invariant holds at this seam: after an ``update``, ``collect`` refuses to run
until ``publish`` (a rollout on stale weights would train on samples of another policy
while logging them as on-policy). ``version`` counts published updates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agents.team import Team
from trainers.advantages import AdvantageResult
from trainers.records import RolloutBatch, Turn
from trainers.rollout import RolloutRequest, play
from trainers.teams import build_team, served_policies, sync_served_weights
from trainers.workers import LearnerWorker

__all__ = ["Runtime", "LocalRuntime", "StaleWeightsError", "WorkerLost", "make_runtime"]


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

    def initialise(self, config: Any) -> str: ...

    def close(self) -> None: ...


class LocalRuntime:
    """Everything in this process: ``team`` plays, ``learner`` (a ``trainers.learner.Learner``
    of that team) trains, and served policies (vLLM engines) get the new weights on publish.

    Args:
        team: The team the rollouts play (its trained policies are the learner's).
        learner: The learner that updates them.
        owns_team: Whether ``close`` closes the team (``make_runtime`` built it, so nobody
            else will); otherwise the team belongs to the caller.
    """

    def __init__(self, team: Team, learner: Any, owns_team: bool = False) -> None:
        self.team = team
        self.learner = learner
        self.owns_team = owns_team
        self._learning = LearnerWorker.around(learner)  # checkpoints and the rest, as on Ray
        self.version = 0
        self._unpublished = False

    @property
    def serves_copies(self) -> bool:
        """Whether engines sample from their own copy of the weights (publish moves them)."""
        return bool(served_policies(self.team))

    def collect(self, request: RolloutRequest) -> RolloutBatch:
        if self._unpublished:
            raise StaleWeightsError(
                "LocalRuntime.collect after an update that was not published: call publish() first, "
                "or the rollout samples from the old weights"
            )
        return play(request, self.team)

    def update(
        self, samples: Sequence[Turn], advantages: AdvantageResult, *, seed: int
    ) -> dict[str, dict[str, float]]:
        for policy in served_policies(self.team):
            policy.sleep()  # --vllm-sleep: give the engine's GPU memory to the learner
        metrics = self._learning.update(samples, advantages, seed)
        self._unpublished = True
        return metrics

    def publish(self) -> float:
        seconds = sync_served_weights(self.team)  # HF policies share the learner's weights: 0 s
        self.version += 1
        self._unpublished = False
        return seconds

    def old_logprob_units(self) -> list[str]:
        return self._learning.old_logprob_units()

    def load_checkpoint(self, path: Any) -> dict[str, Any]:
        return self._learning.load_checkpoint(path)

    def save_checkpoint(self, run_dir: Any, step: int, state: Mapping[str, Any], keep: int) -> None:
        self._learning.save_checkpoint(run_dir, step, state, keep)

    def initialise(self, config: Any) -> str:
        return self._learning.initialise(config)

    def close(self) -> None:
        """Shut the team's engines down when this runtime built it (``owns_team``)."""
        if self.owns_team:
            self.team.close()


def make_runtime(config: Any, env: Any) -> Runtime:
    """The runtime ``config.runtime`` names, built for ``config`` (a resolved ``TrainConfig``)
    and ``env`` (the run's env, checked): local builds the team and learner here."""
    if getattr(config, "runtime", "local") == "ray":
        from trainers.ray_runtime import RayRuntime

        return RayRuntime(config)
    from trainers.learner import Learner

    team = build_team(config, env)
    return LocalRuntime(team, Learner(team, config.learner_config()), owns_team=True)
