"""``LocalRuntime`` (the default, ``--runtime local``): a step's three verbs in this process,
on one team and one plain ``Learner``."""

from __future__ import annotations

from collections.abc import Sequence

from agents.team import Team
from trainers.advantages import AdvantageResult
from trainers.learner import Learner
from trainers.records import RolloutBatch, Turn
from trainers.rollout import RolloutRequest, play
from trainers.runtime.base import LearnerVerbs, StaleWeightsError
from trainers.teams import served_policies, sync_served_weights

__all__ = ["LocalRuntime"]


class LocalRuntime(LearnerVerbs):
    """Everything in this process: ``team`` plays, ``learner`` (a ``trainers.learner.Learner``
    of that team) trains, and served policies (vLLM engines) get the new weights on publish.

    Args:
        team: The team the rollouts play (its trained policies are the learner's).
        learner: The learner that updates them.
        owns_team: Whether ``close`` closes the team (``make_runtime`` built it, so nobody
            else will); otherwise the team belongs to the caller.
    """

    def __init__(self, team: Team, learner: Learner, owns_team: bool = False) -> None:
        self.team = team
        self.learner = learner
        self.owns_team = owns_team
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
        metrics = self.learner.step(samples, advantages, seed=seed)
        self._unpublished = True
        return metrics

    def publish(self) -> float:
        seconds = sync_served_weights(self.team)  # HF policies share the learner's weights: 0 s
        self.version += 1
        self._unpublished = False
        return seconds

    def close(self) -> None:
        """Shut the team's engines down when this runtime built it (``owns_team``)."""
        if self.owns_team:
            self.team.close()
