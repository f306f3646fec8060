"""The three kinds of worker a distributed runtime places, as plain classes.

``trainers.runtime.ray`` wraps each in ``ray.remote`` at run time; tests build them directly,
without Ray, and wire them together in one process. Nothing here imports Ray unless it is
handed a Ray actor handle (``call``) or already runs inside a Ray worker.

* ``EngineServer``: one replica of the team's model policies (built by ``build_team`` from the
  run's config, so the same backend, adapters and roles as a local run). It generates for
  rollout workers and loads the weights the learner publishes, each load a new ``version``.
* ``RolloutWorker``: plays ``RolloutRequest``s: it makes the envs, runs scripted roles itself
  and asks an engine for every model role's replies (``RemotePolicy``).
* ``LearnerWorker``: the run's ``Learner`` on its own copy of the team: updates, checkpoints,
  and the trained tensors to publish; several of them form a data-parallel group
  (``join_group``; ``trainers.learner.DataParallel``).

Published weights are the trained parameters only (``"<unit>/<parameter name>" -> tensor``:
LoRA adapters, or every weight of a full-weight unit), with a checksum both ends compute.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist

from agents.base import Generation, Prompt, SamplingParams, ServedPolicy, as_prompt
from agents.hf import HFPolicy
from agents.scripted import SCRIPTED_POLICIES, RandomPolicy
from agents.team import RoleBinding, Team
from trainers.learner import DataParallel, Learner
from trainers.records import RolloutBatch
from trainers.role_flags import scripted_roles
from trainers.rollout import RolloutRequest, play
from trainers.run.checkpoint import unit_tensors
from trainers.run.trained_team import build_run_team
from trainers.runtime.base import LearnerVerbs
from trainers.seeding import seed_everything

__all__ = [
    "EngineServer",
    "RolloutWorker",
    "LearnerWorker",
    "RemotePolicy",
    "weights_checksum",
    "call",
]


def call(target: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``method`` on a plain worker, or on a Ray actor handle (waiting for the result)."""
    bound = getattr(target, method)
    remote = getattr(bound, "remote", None)
    if remote is None:
        return bound(*args, **kwargs)
    import ray

    return ray.get(remote(*args, **kwargs))


def weights_checksum(tensors: Mapping[str, Any]) -> str:
    """sha256 over the names, shapes, dtypes and bytes of ``tensors``, in name order."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tuple(tensor.shape)}|{tensor.dtype}|".encode())
        digest.update(tensor.view(-1).view(dtype=torch.uint8).numpy().tobytes())
    return digest.hexdigest()


class _Placed:
    """What every worker can say about where it runs (for start-up and placement checks)."""

    def where(self) -> tuple[int, str | None]:
        """This process's id, and its Ray node's id when it runs as a Ray actor (else None)."""
        node = None
        if "ray" in sys.modules:  # only a Ray actor has Ray imported already; never import it here
            ray = sys.modules["ray"]
            if ray.is_initialized():
                node = ray.get_runtime_context().get_node_id()
        return os.getpid(), node


def _node_ip() -> str:
    """This node's address as the cluster sees it (loopback outside Ray)."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return ray.util.get_node_ip_address()
    return "127.0.0.1"


def _weights_device(backend: str) -> str:
    return "cuda" if backend == "nccl" else "cpu"


class _Group:
    """Membership of the run's torch.distributed group: the learner ranks 0..G-1, then the
    engines G..G+R-1 when full weights are broadcast to them (gloo on CPU, NCCL on GPU, the same
    code). Two subgroups: the learners' (data-parallel gradients) and the weights' (rank 0 and
    the engines)."""

    weight_group: Any = None

    def join_group(self, address: str, rank: int, world: int, backend: str, learners: int) -> None:
        dist.init_process_group(backend, init_method=f"tcp://{address}", rank=rank, world_size=world)
        self.weight_backend = backend
        # every member creates every subgroup, in the same order (torch.distributed's rule)
        learner_group = dist.new_group(list(range(learners))) if learners > 1 else None
        if world > learners:
            self.weight_group = dist.new_group([0, *range(learners, world)])
        if learner_group is not None and rank < learners:
            self.learner.group = DataParallel(rank, learners, learner_group)


def _build(config: Any, threads: int | None) -> tuple[Any, Team]:
    """The run's env and team, built as the training command builds them (seeded first: LoRA
    initialisation draws from the global torch RNG), on ``threads`` torch threads (None:
    ``config.threads``; None there too: torch's choice)."""
    if threads or config.threads:
        torch.set_num_threads(threads or config.threads)
    seed_everything(config.seed)
    env = config.env_setup.make()
    return env, build_run_team(config, env)


def _trained_parameters(team: Team) -> dict[str, Any]:
    """``"<unit>/<parameter name>" -> parameter`` of every model binding of ``team``, named as
    the learner names its units (``RoleBinding.policy_id``); whole models, adapters included."""
    out: dict[str, Any] = {}
    for binding in team.bindings.values():
        policy = binding.policy.trainable if isinstance(binding.policy, ServedPolicy) else binding.policy
        if not isinstance(policy, HFPolicy):
            continue
        for name, parameter in policy.model.named_parameters():
            out[f"{binding.policy_id}/{name}"] = parameter
    return out


class EngineServer(_Placed, _Group):
    """One replica of the team's model policies (module docstring).

    Args:
        config: The run's resolved ``TrainConfig``.
        threads: torch threads of this process (None: ``config.threads``; None there too: torch's).
    """

    def __init__(self, config: Any, threads: int | None = None) -> None:
        _, self.team = _build(config, threads)
        self.policies = {id(b.policy): b.policy for b in self.team.bindings.values()}
        self.version = -1  # nothing published yet
        self.checksum = ""

    def layout(self) -> dict[str, tuple[str, str | None, str | None, str, bool]]:
        """Role -> (policy name, adapter, system prompt, response prefix, played by a model)."""
        model_names = {b.policy.name for b in self.team.bindings.values() if _is_model(b.policy)}
        return {
            role: (b.policy.name, b.adapter, b.system_prompt, b.response_prefix, b.policy.name in model_names)
            for role, b in self.team.bindings.items()
        }

    def generate(
        self,
        policy_name: str,
        prompts: Sequence[Prompt],
        num_samples: int,
        sampling: SamplingParams,
        adapter: str | None,
        version: int,
    ) -> list[list[Generation]]:
        """The policy's generations; refuses a request for weights it does not serve (the
        on-policy invariant: a rollout of version v samples from version v)."""
        if version != self.version:
            raise RuntimeError(
                f"EngineServer serves weights version {self.version}, the rollout asked for {version}: "
                "publish before collecting"
            )
        policy = next(p for p in self.policies.values() if p.name == policy_name)
        return policy.generate(prompts, num_samples=num_samples, sampling=sampling, adapter=adapter)

    def load_weights(self, version: int, tensors: Mapping[str, Any]) -> tuple[int, str]:
        """Serve ``tensors`` (the learner's trained parameters) from now on, as ``version``;
        returns (version, checksum of what is now served)."""
        parameters = _trained_parameters(self.team)
        unknown = sorted(set(tensors) - set(parameters))
        if unknown:
            raise ValueError(f"EngineServer: published weights it has no parameter for: {unknown[:3]}")
        with torch.no_grad():
            for name, tensor in tensors.items():
                parameters[name].copy_(tensor.to(parameters[name].device))
        for policy in self.policies.values():
            if isinstance(policy, ServedPolicy):
                policy.sync_weights()  # a vLLM engine serves its HF copy's new weights
        self.version = version
        self.checksum = weights_checksum({name: parameters[name] for name in tensors})
        return self.version, self.checksum

    def receive_weights(
        self, version: int, shapes: Mapping[str, tuple[tuple[int, ...], str]]
    ) -> tuple[int, str]:
        """``load_weights`` of the tensors rank 0 broadcasts now, in name order (``shapes``:
        name -> (shape, dtype name); ``LearnerWorker.broadcast_weights`` is the other end)."""
        received = {}
        for name in sorted(shapes):
            shape, dtype = shapes[name]
            buffer = torch.empty(
                shape, dtype=getattr(torch, dtype), device=_weights_device(self.weight_backend)
            )
            dist.broadcast(buffer, src=0, group=self.weight_group)
            received[name] = buffer
        return self.load_weights(version, received)

    def status(self) -> tuple[int, str]:
        """(version served, checksum of the published weights it loaded)."""
        return self.version, self.checksum


def _is_model(policy: Any) -> bool:
    return isinstance(policy, (HFPolicy, ServedPolicy))


class RemotePolicy:
    """A model policy whose replies come from an ``EngineServer``: a plain one, or the name of
    a Ray actor (looked up on first use: an actor handle among a restartable actor's
    constructor arguments would have to outlive it in Ray's object store). Prompts travel
    without their env (model policies never read it)."""

    text_only = True  # replies depend on the prompt, never on its env (agents.base.reads_text_only)

    def __init__(self, name: str, engine: Any, adapter_names: Sequence[str] = (), version: int = 0) -> None:
        self.name = name
        self._engine = engine
        self.adapter_names = tuple(adapter_names)
        self.version = version

    @property
    def engine(self) -> Any:
        if isinstance(self._engine, str):
            import ray

            self._engine = ray.get_actor(self._engine)
        return self._engine

    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        prompts = [dataclasses.replace(as_prompt(p), env=None) for p in prompts]
        return call(
            self.engine, "generate", self.name, prompts, num_samples, sampling or SamplingParams(), adapter,
            self.version,
        )  # fmt: skip


class RolloutWorker(_Placed):
    """Plays rollout requests: envs and scripted roles here, model replies from ``engine``.

    Args:
        config: The run's resolved ``TrainConfig`` (scripted roles, ``--roles``).
        engine: The ``EngineServer`` this worker's model roles ask, or its Ray actor's name.
        layout: ``EngineServer.layout()``: how the team binds its roles.
    """

    def __init__(self, config: Any, engine: Any, layout: Mapping[str, tuple]) -> None:
        config.env_setup.make()  # imports the module of a third-party env (--env module:id) here too
        scripted = scripted_roles(getattr(config, "roles", ()))
        remote: dict[str, RemotePolicy] = {}
        bindings = {}
        adapters: dict[str, list[str]] = {}
        for name, adapter, *_ in layout.values():
            adapters.setdefault(name, []).extend([adapter] if adapter else [])
        for role, (name, adapter, system, prefix, is_model) in layout.items():
            if is_model:
                policy = remote.setdefault(name, RemotePolicy(name, engine, adapters[name]))
            else:
                cls = SCRIPTED_POLICIES[scripted[role]]
                policy = cls(seed=config.seed) if cls is RandomPolicy else cls()
            bindings[role] = RoleBinding(policy, adapter, system, prefix)
        self.remote = list(remote.values())
        self.team = Team(tuple(layout), bindings)

    def collect(self, request: RolloutRequest, version: int) -> RolloutBatch:
        """Play ``request`` on weights ``version`` (the engine refuses any other)."""
        for policy in self.remote:
            policy.version = version
        return play(request, self.team)


class LearnerWorker(LearnerVerbs, _Placed, _Group):
    """The run's learner on its own copy of the team (module docstring).

    Args:
        config: The run's resolved ``TrainConfig``.
        threads: torch threads of this process (None: ``config.threads``; None there too: torch's).
    """

    def __init__(self, config: Any, threads: int | None = None) -> None:
        _, team = _build(config, threads)
        self.learner = Learner(team, config.learner_config())

    def update(self, samples: Sequence[Any], advantages: Any, seed: int) -> dict[str, dict[str, float]]:
        return self.learner.step(samples, advantages, seed=seed)

    def trained_weights(self) -> tuple[dict[str, Any], str]:
        """The trained parameters to publish and their checksum."""
        tensors = unit_tensors(self.learner)
        return tensors, weights_checksum(tensors)

    def group_address(self) -> str:
        """host:port where the run's group meets (rank 0 is this process): a free port now."""
        with socket.socket() as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
        return f"{_node_ip()}:{port}"

    def weight_shapes(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """name -> (shape, dtype name) of every trained tensor, for the receiving ends."""
        return {
            n: (tuple(t.shape), str(t.dtype).removeprefix("torch."))
            for n, t in unit_tensors(self.learner).items()
        }

    def broadcast_weights(self) -> str:
        """Send every trained tensor to the weights group in name order; their checksum."""
        tensors = unit_tensors(self.learner)
        device = _weights_device(self.weight_backend)
        for name in sorted(tensors):
            dist.broadcast(tensors[name].to(device), src=0, group=self.weight_group)
        return weights_checksum(tensors)
