"""``RayRuntime``: the training step's three verbs on a Ray cluster (``--runtime ray``).

What runs where (``workers.py`` holds the plain classes; here they become actors):

* ``engine_replicas`` x ``EngineServer``: a copy of the team's model policies each (one base
  model serving every role's adapter), generating for the rollout workers;
* ``rollout_workers`` x ``RolloutWorker``: the envs and scripted roles; each asks one engine
  (worker i -> engine i mod replicas), so a tree's K candidates, one generate call, always
  share a replica and its prompt encoding;
* ``learner_ranks`` x ``LearnerWorker``: the learner and its optimiser, data parallel over a
  torch.distributed group when there are several (``trainers.learner.DataParallel``: each rank
  forwards its share of the micro-batches, the ranks sum gradients before the step); rank 0
  publishes and writes the checkpoints.

``collect`` splits the request's tasks over the workers (task i -> worker i mod N) and merges
their batches into the order one process returns (``merge_batches``); every path draws from
its own seeded stream and every prompt carries its own sampler seed (``trainers.rollout``), so
the merged batch is the local one. ``publish`` sends the learner's trained tensors to every
engine: LoRA adapters (a few MB) through Ray's object store, straight from the learner; full
weights by a torch.distributed broadcast in a group of the learner and the engines (gloo on
CPU, NCCL on GPU: the same code). Each engine answers with the version it now serves and a
checksum of what it loaded, and the driver checks both (the on-policy invariant; an engine
also refuses a generate call for any other version).

Faults: a rollout worker that dies mid-collect is restarted and its call retried (Ray's
``max_restarts`` / ``max_task_retries``); its rollout is a function of the request and the
weights, so the retried result is the same. An engine that dies is restarted by Ray (up to
``RETRIES`` times) and serves no version until the driver, seeing a collect fail, publishes the
current weights to it again and replays the collect (LoRA runs: the adapters go through the
object store; in a full-weight run the broadcast group cannot take the new process, so the step
ends). A learner failure aborts the step; ``--resume`` continues from the last checkpoint.

Ray is imported only here (and only when a ``RayRuntime`` is made), with an error naming the
extra when it is missing.
"""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from trainers.advantages import AdvantageResult
from trainers.errors import ConfigError
from trainers.records import RolloutBatch, Turn
from trainers.rollout import RolloutRequest
from trainers.runtime.base import StaleWeightsError, WorkerLost
from trainers.runtime.workers import EngineServer, LearnerWorker, RolloutWorker

__all__ = ["RayRuntime", "import_ray", "merge_batches", "shard_tasks", "STARTUP_TIMEOUT_S"]

STARTUP_TIMEOUT_S = 600.0  # loading a model into each actor; a request no node can meet fails before
RETRIES = 3  # restarts of a rollout worker, and retries of a call it died in


def import_ray() -> Any:
    """``ray``, or a ConfigError that names the extra to install."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "--runtime ray needs Ray: pip install 'teamgym[ray]' (or --runtime local)"
        ) from None
    return ray


def shard_tasks(request: RolloutRequest, shards: int) -> list[RolloutRequest]:
    """The request's tasks dealt round-robin to ``shards`` requests (empty ones dropped)."""
    parts = [request.tasks[i::shards] for i in range(shards)]
    return [dataclasses.replace(request, tasks=part) for part in parts if part]


def merge_batches(request: RolloutRequest, batches: Sequence[RolloutBatch], seconds: float) -> RolloutBatch:
    """One batch from the shards' batches, in the order ``trainers.rollout.play`` returns for
    the whole request: tree rollouts node depth by node depth (tasks in request order within
    each), plain ones path by path. ``seconds``: the collect's wall time."""
    position = {task: i for i, task in enumerate(request.tasks)}
    samples = [turn for batch in batches for turn in batch.samples]
    if request.mode == "tree":
        samples.sort(key=lambda t: (len(t.tree_node), position[t.task], t.episode))  # stable: candidates stay
    else:
        samples.sort(key=lambda t: (position[t.task], t.episode))  # stable: a path's turns stay in order
    episodes = sorted(
        (e for batch in batches for e in batch.episodes), key=lambda e: (position[e.task], e.index)
    )
    generate = max((batch.stats.get("time/generate", 0.0) for batch in batches), default=0.0)
    stats = {
        "time/generate": generate,  # the slowest worker's: the shards generate side by side
        "time/env": max(0.0, seconds - generate),
        "time/rollout": seconds,
        "generated_tokens": float(sum(b.stats.get("generated_tokens", 0.0) for b in batches)),
        "generate_calls": float(sum(b.stats.get("generate_calls", 0.0) for b in batches)),
        "sandbox_runs": float(sum(b.stats.get("sandbox_runs", 0.0) for b in batches)),
        "time/sandbox": max((b.stats.get("time/sandbox", 0.0) for b in batches), default=0.0),
    }
    return RolloutBatch(samples=tuple(samples), episodes=tuple(episodes), stats=stats)


def _threads(config: Any) -> int:
    return config.threads or max(1, os.cpu_count() or 1)


class RayRuntime:
    """Rollout workers, engine servers and learner workers on a Ray cluster (module docstring).

    Args:
        config: The run's resolved ``TrainConfig`` (``ray_address``, ``rollout_workers``,
            ``engine_replicas``, ``learner_ranks``, ``ray_resources``).
        object_store_bytes: Object store size of a private cluster (None: Ray's default).

    Raises:
        ConfigError: Ray is not installed, or the cluster cannot hold the actors asked for.
    """

    def __init__(self, config: Any, *, object_store_bytes: int | None = None) -> None:
        ray = import_ray()
        self.ray = ray
        self.config = config
        cpus = config.rollout_workers + config.engine_replicas + config.learner_ranks
        self._owns_cluster = not ray.is_initialized()
        if self._owns_cluster:
            # address="local": a private cluster. A bare ray.init() would join any cluster
            # already running on this machine. Its CPUs are counters, sized so every actor fits.
            ray.init(
                address=config.ray_address or "local",
                include_dashboard=False,
                **({} if config.ray_address else {"num_cpus": max(cpus, os.cpu_count() or 1)}),
                **({"object_store_memory": object_store_bytes} if object_store_bytes else {}),
            )
        try:
            self._check_feasible(cpus)
            self._start(config)
        except BaseException:
            self.close()
            raise

    def _check_feasible(self, cpus: int) -> None:
        """Fail now, naming the flags, instead of pending forever on a request no cluster meets."""
        config, cluster = self.config, self.ray.cluster_resources()
        total = cluster.get("CPU", 0)
        if total < cpus:
            raise ConfigError(
                f"the Ray cluster has {total:g} CPUs; --rollout-workers {config.rollout_workers} + "
                f"--engine-replicas {config.engine_replicas} + --learner-ranks "
                f"{config.learner_ranks} actors need one each ({cpus}): ask for fewer, or add nodes"
            )
        counts = {
            "rollout": config.rollout_workers,
            "engine": config.engine_replicas,
            "learner": config.learner_ranks,
        }
        needed: dict[str, float] = {}
        for kind, wanted in config.ray_resources.items():
            for name, amount in wanted.items():
                needed[name] = needed.get(name, 0.0) + amount * counts[kind]
        short = {name: amount for name, amount in needed.items() if cluster.get(name, 0) < amount}
        if short:
            have = {name: cluster.get(name, 0) for name in short}
            raise ConfigError(
                f"--ray-resources asks for {short} in all, the Ray cluster has {have}: start nodes with "
                "`ray start --resources '{...}'`, or ask for less"
            )

    def _start(self, config: Any) -> None:
        ray, threads = self.ray, _threads(config)
        resources = {
            kind: dict(config.ray_resources.get(kind, {})) for kind in ("rollout", "engine", "learner")
        }
        engine_cls = ray.remote(EngineServer)
        learner_cls = ray.remote(LearnerWorker).options(num_cpus=1, resources=resources["learner"])
        # named, so rollout workers take a name, not a handle (workers.RemotePolicy says why)
        names = [f"teamgym-engine-{uuid.uuid4().hex[:12]}-{i}" for i in range(config.engine_replicas)]
        self.engines = [
            engine_cls.options(
                num_cpus=1, max_restarts=RETRIES, resources=resources["engine"], name=name
            ).remote(config, threads)
            for name in names
        ]
        # rank 0 publishes and writes checkpoints; every rank updates (data parallel)
        self.learners = [learner_cls.remote(config, threads) for _ in range(config.learner_ranks)]
        self.learner = self.learners[0]
        layout = ray.get(self.engines[0].layout.remote(), timeout=STARTUP_TIMEOUT_S)
        # SPREAD: workers go to as many nodes as there are; a lost node's workers restart on another
        worker_cls = ray.remote(RolloutWorker).options(
            num_cpus=1,
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
            scheduling_strategy="SPREAD",
            resources=resources["rollout"],
        )
        self.workers = [
            worker_cls.remote(config, names[i % len(names)], layout) for i in range(config.rollout_workers)
        ]
        ray.get([w.where.remote() for w in self.workers], timeout=STARTUP_TIMEOUT_S)
        # LoRA adapters (a few MB) go through the object store; full weights by a collective
        # broadcast (a 135M model is ~540 MB in float32: object store 3.6-14 s, gloo ~0.5 s).
        self.weight_path = "object_store" if config.lora else "collective"
        if self.weight_path == "collective" or len(self.learners) > 1:
            self._join_group(config)
        self.version = -1
        self._unpublished = False
        self.publish()  # engines serve the learner's initial weights: version 0

    def _join_group(self, config: Any) -> None:
        """One torch.distributed group: the learner ranks, then the engines when full weights
        are broadcast to them (``workers._Group``)."""
        self.weight_backend = "nccl" if str(config.device or "").startswith("cuda") else "gloo"
        address = self.ray.get(self.learner.group_address.remote(), timeout=STARTUP_TIMEOUT_S)
        members = self.learners + (self.engines if self.weight_path == "collective" else [])
        joins = [
            member.join_group.remote(address, rank, len(members), self.weight_backend, len(self.learners))
            for rank, member in enumerate(members)
        ]
        self.ray.get(joins, timeout=STARTUP_TIMEOUT_S)
        self._weight_shapes = self.ray.get(self.learner.weight_shapes.remote())

    # ------------------------------------------------------------------ the three verbs
    serves_copies = True  # engines sample from their own copy: publish moves the weights

    def collect(self, request: RolloutRequest) -> RolloutBatch:
        if self._unpublished:
            raise StaleWeightsError(
                "RayRuntime.collect after an update that was not published: publish() first"
            )
        started = time.perf_counter()
        shards = shard_tasks(request, len(self.workers))

        def play() -> list[RolloutBatch]:
            refs = [
                worker.collect.remote(shard, self.version)
                for worker, shard in zip(self.workers, shards, strict=False)
            ]
            return self._get(refs, "the rollouts")

        try:
            batches = play()
        except (WorkerLost, self.ray.exceptions.RayTaskError):
            if not self._republish_to_restarted_engines():
                raise  # no engine was restarted: not a failure a replay mends
            batches = self._replay(play)
        return merge_batches(request, batches, time.perf_counter() - started)

    def _replay(self, play: Any) -> Any:
        """``play()`` again once a restarted engine has the weights: the rollout is a function of
        the request and the weights, so it is the batch it would have been. A worker may still
        see the engine as restarting for a moment: a few tries, a second apart."""
        for attempt in range(RETRIES):
            try:
                return play()
            except (WorkerLost, self.ray.exceptions.RayTaskError):
                if attempt == RETRIES - 1:
                    raise
                time.sleep(1.0 + attempt)
                self._republish_to_restarted_engines()

    def _serving(self) -> list[tuple[int, str]]:
        """(version, checksum) every engine serves, waiting for one that Ray is restarting."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                return self.ray.get([engine.status.remote() for engine in self.engines])
            except self.ray.exceptions.ActorUnavailableError:  # restarting: it will be back
                if time.monotonic() > deadline:
                    raise WorkerLost(
                        f"an engine did not come back within {STARTUP_TIMEOUT_S:.0f} s"
                    ) from None
                time.sleep(1.0)
            except self.ray.exceptions.RayActorError as err:
                raise WorkerLost(f"an engine died and was not restarted: {type(err).__name__}") from err

    def _republish_to_restarted_engines(self) -> bool:
        """After a failed collect: give every engine that Ray restarted (it serves no version)
        the current weights again; whether one was found. An engine that stays dead, or one in
        a full-weight run (its broadcast group cannot take a new member), ends the step."""
        served = self._serving()
        restarted = [
            engine
            for engine, (version, _) in zip(self.engines, served, strict=True)
            if version != self.version
        ]
        if not restarted:
            return False
        if self.weight_path == "collective":
            raise WorkerLost(
                "an engine restarted in a full-weight run, whose weights travel by a broadcast group it can "
                "no longer join"
            )
        tensors, checksum = self.learner.trained_weights.options(num_returns=2).remote()
        loaded = self._get(
            [engine.load_weights.remote(self.version, tensors) for engine in restarted], "re-publish"
        )
        expected = self._get(checksum, "re-publish")
        if any(state != (self.version, expected) for state in loaded):
            raise WorkerLost(f"a restarted engine reports {loaded}, expected version {self.version}")
        return True

    def _get(self, refs: Any, what: str) -> Any:
        """``ray.get``; a dead learner or engine becomes ``WorkerLost`` (rollout workers are
        restarted by Ray and never get here)."""
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayActorError as err:
            raise WorkerLost(f"a Ray actor died during {what}: {type(err).__name__}") from err

    def update(
        self, samples: Sequence[Turn], advantages: AdvantageResult, *, seed: int
    ) -> dict[str, dict[str, float]]:
        samples = self.ray.put(list(samples))  # once, for every rank
        refs = [rank.update.remote(samples, advantages, seed) for rank in self.learners]
        metrics = self._get(refs, "the update")[0]
        self._unpublished = True
        return metrics

    def publish(self) -> float:
        """Learner -> every engine (object store or collective, ``weight_path``); checks each
        serves the new version with the learner's checksum."""
        started = time.perf_counter()
        version = self.version + 1
        if self.weight_path == "collective":  # every member calls broadcast at once
            checksum = self.learner.broadcast_weights.remote()
            receiving = [
                engine.receive_weights.remote(version, self._weight_shapes) for engine in self.engines
            ]
        else:
            tensors, checksum = self.learner.trained_weights.options(num_returns=2).remote()
            receiving = [engine.load_weights.remote(version, tensors) for engine in self.engines]
        served = self._get(receiving, "publish")
        expected = self._get(checksum, "publish")
        wrong = [s for s in served if s != (version, expected)]
        if wrong:
            raise RuntimeError(
                f"publish: engines report {wrong}, expected version {version} with checksum {expected[:12]}"
            )
        self.version, self._unpublished = version, False
        return time.perf_counter() - started

    def engine_status(self) -> list[tuple[int, str]]:
        """(version, checksum) each engine reports serving."""
        return self.ray.get([engine.status.remote() for engine in self.engines])

    # ------------------------------------------------------------------ the learner's state
    def old_logprob_units(self) -> list[str]:
        return self.ray.get(self.learner.old_logprob_units.remote())

    def load_checkpoint(self, path: Any) -> dict[str, Any]:
        return self.ray.get([rank.load_checkpoint.remote(path) for rank in self.learners])[0]

    def save_checkpoint(self, run_dir: Any, step: int, state: Mapping[str, Any], keep: int) -> None:
        # the learner writes it: on a cluster, the run directory must be on storage its node sees
        self.ray.get(self.learner.save_checkpoint.remote(run_dir, step, dict(state), keep))

    def initialise(self, config: Any, *, resumed: bool = False) -> str:
        return self.ray.get([rank.initialise.remote(config, resumed=resumed) for rank in self.learners])[0]

    def close(self) -> None:
        """Stop the actors, and the cluster when this runtime started it."""
        for actor in [
            *getattr(self, "workers", []),
            *getattr(self, "engines", []),
            *getattr(self, "learners", []),
        ]:
            self.ray.kill(actor)
        self.workers, self.engines, self.learners, self.learner = [], [], [], None
        if self._owns_cluster and self.ray.is_initialized():
            self.ray.shutdown()
