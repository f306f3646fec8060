"""Where a training step's work runs: the three verbs the training script calls.

* ``collect(request)``: play a ``RolloutRequest`` (tasks, tree or plain, K, sampling, seed)
  with the weights last published, and return its ``RolloutBatch`` (samples and episodes);
* ``update(samples, advantages, seed)``: one learner update of every trained unit on the
  samples and their advantages; metrics per unit;
* ``publish()``: make the updated weights the ones every engine samples from before the
  next ``collect``; the seconds it took.

Around them, what a run does with its learner: ``load_checkpoint`` / ``save_checkpoint``,
``initialise`` (``--init``) and ``old_logprob_units`` (for the log line).

``LocalRuntime`` (``local.py``, the default) does all of it in this process, on one team and
one ``Learner``. ``RayRuntime`` (``ray.py``, the ``ray`` extra) places rollout workers, engine
servers and learner workers (``workers.py``) on a Ray cluster; ``base.py`` holds the protocol
and the errors, under both. ``make_runtime(config, env)`` builds the one
``config.runtime`` names. The algorithm (tree sampling, group keys, advantages, losses)
stays in the modules it calls, the same for every runtime, and none of them imports a
distributed framework.

The on-policy invariant holds at this seam: after an ``update``, ``collect`` refuses to run
until ``publish`` (a rollout on stale weights would train on samples of another policy
while logging them as on-policy). ``version`` counts published updates.
"""

from __future__ import annotations

from typing import Any

from trainers.learner import Learner
from trainers.run.trained_team import build_run_team
from trainers.runtime.base import Runtime, StaleWeightsError, WorkerLost
from trainers.runtime.local import LocalRuntime
from trainers.runtime.ray import RayRuntime

__all__ = ["Runtime", "LocalRuntime", "StaleWeightsError", "WorkerLost", "make_runtime"]


def make_runtime(config: Any, env: Any) -> Runtime:
    """The runtime ``config.runtime`` names, built for ``config`` (a resolved ``TrainConfig``)
    and ``env`` (the run's env, checked): local builds the team and learner here."""
    if getattr(config, "runtime", "local") == "ray":
        return RayRuntime(config)  # Ray itself is imported only now
    team = build_run_team(config, env)
    return LocalRuntime(team, Learner(team, config.learner_config()), owns_team=True)
