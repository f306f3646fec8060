"""``Team``: which policy plays each role of an env, and in which order the roles speak.

A team binds every role of an env (``"planner"``, ``"executor"``, ...) to a
``RoleBinding``: a policy, optionally one of its per-role adapters, and the role's system
prompt. Three common shapes have constructors:

* ``Team.shared(env, policy)``: one policy plays every role (adapter ``None``); roles
  differ by their prompts only. ``team.policy_layout == "shared"``.
* ``Team.per_role(env, policy)``: one LoRA adapter per role on one ``HFPolicy`` (adapter
  name = role name; make the policy with ``HFPolicy(..., adapters=env.roles)``).
* ``Team.per_role_models(env, {role: policy})``: separate full models.

The general constructor mixes freely, e.g. a scripted planner with a model executor::

    Team(env, {"planner": OraclePolicy(), "executor": model_policy})

Who speaks when is the env's business: its ``turn_order`` argument (default: the team
variant's roles in ``TEAMS`` order). A team's ``turn_order`` is its roles in the order given
(an env's ``roles`` when built from an env), and ``team.check_env(env)`` names the
``envs.make(..., turn_order=...)`` call when they disagree. (An earlier workflow graph here
only restated that order, so it went.)

A team is small on purpose: ``act`` makes one generation for one agent. Trainers batch
prompts across envs themselves (``prompt_for`` + ``binding(agent).policy.generate``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.base import Generation, Policy, Prompt, SamplingParams
from envs.core import role_of

__all__ = ["RoleBinding", "Team", "close_policies"]

_ROLE = re.compile(r"^[a-z][a-z0-9]*$")


@dataclass(frozen=True)
class RoleBinding:
    """What plays one role.

    Attributes:
        policy: The policy that generates the role's responses.
        adapter: The policy's per-role adapter to use (``None``: the base/shared policy).
        system_prompt: System prompt of the role (``None``: none).
        response_prefix: Start of every reply of the role, written into the prompt for the
            model to continue (``agents.base.Prompt.prefix``, e.g. ``"<answer>"``); the env
            receives ``response_prefix + sampled text``. For model policies only.
        trains: Whether a learner updates this role's policy. False: a frozen role (a fixed
            partner or opponent): it plays and its turns are recorded, but they are never in
            the loss and its weights never change.
    """

    policy: Policy
    adapter: str | None = None
    system_prompt: str | None = None
    response_prefix: str = ""
    trains: bool = True

    @property
    def policy_id(self) -> str:
        """``"name"`` or ``"name:adapter"``: recorded in ``Turn.policy`` by rollouts and used by
        the learner to train every sample with the policy (and adapter) that produced it."""
        return self.policy.name + (f":{self.adapter}" if self.adapter else "")


def close_policies(policies: Iterable[Any]) -> None:
    """``close()`` each distinct policy of ``policies`` that has one, once: a vLLM policy
    shuts its engines down (weights, KV cache); model and scripted policies have nothing to
    release."""
    closed: list[Any] = []
    for policy in policies:
        close = getattr(policy, "close", None)
        if callable(close) and not any(policy is done for done in closed):
            close()
            closed.append(policy)


def _roles_of(env_or_roles: Any) -> tuple[str, ...]:
    """An env's ``roles`` (its turn order), or a sequence of role names, validated."""
    if isinstance(env_or_roles, str):
        raise TypeError(f"roles must be a sequence of role names or an env, got the string {env_or_roles!r}")
    source = getattr(env_or_roles, "roles", env_or_roles)
    try:
        roles = tuple(source)
    except TypeError:
        raise TypeError(
            f"roles must be a sequence of role names or an env with .roles, got {type(env_or_roles).__name__}"
        ) from None
    if not roles:
        raise ValueError("a team needs at least one role")
    bad = [r for r in roles if not isinstance(r, str) or not _ROLE.match(r)]
    if bad:
        raise ValueError(f"roles are single lowercase words such as 'planner'; got {bad!r}")
    if len(set(roles)) != len(roles):
        raise ValueError(f"roles must be distinct, got {roles!r}")
    return roles


def _names(items: Sequence[str]) -> str:
    return ", ".join(repr(item) for item in items)


class Team:
    """Role -> ``RoleBinding``; ``turn_order`` is the roles in the order given.

    Args:
        roles: The role names in turn order, or an env (its ``roles``, i.e. its turn order).
        bindings: Role -> ``RoleBinding`` or a plain policy (bound with adapter ``None``).

    Raises:
        ValueError: A role without a binding, a binding for an unknown role, or an adapter
            the policy lacks (the message names what is wrong).
        TypeError: A binding that is not a policy / RoleBinding.
    """

    def __init__(
        self,
        roles: Sequence[str] | Any,
        bindings: Mapping[str, RoleBinding | Policy],
    ) -> None:
        self.roles = _roles_of(roles)
        if not isinstance(bindings, Mapping):
            raise TypeError(f"bindings must be a mapping role -> policy, got {type(bindings).__name__}")
        missing = [r for r in self.roles if r not in bindings]
        if missing:
            noun = "role" if len(missing) == 1 else "roles"
            raise ValueError(
                f"team has no policy for {noun} {_names(missing)}; the env's roles are {self.roles!r}"
            )
        extra = [r for r in bindings if r not in self.roles]
        if extra:
            noun = "role" if len(extra) == 1 else "roles"
            raise ValueError(
                f"team binds {noun} {_names(map(str, extra))} that the env does not have; "
                f"the env's roles are {self.roles!r}"
            )
        self.bindings: dict[str, RoleBinding] = {r: self._as_binding(r, bindings[r]) for r in self.roles}
        self.turn_order: tuple[str, ...] = self.roles

    @staticmethod
    def _as_binding(role: str, value: Any) -> RoleBinding:
        binding = value if isinstance(value, RoleBinding) else RoleBinding(value)
        policy = binding.policy
        if not callable(getattr(policy, "generate", None)) or not hasattr(policy, "name"):
            raise TypeError(
                f"role {role!r}: expected a Policy (with .name and .generate) or a RoleBinding, "
                f"got {type(policy).__name__}"
            )
        if binding.adapter is not None:
            adapters = tuple(getattr(policy, "adapter_names", ()))
            if binding.adapter not in adapters:
                raise ValueError(
                    f"role {role!r} is bound to adapter {binding.adapter!r}, but policy {policy.name!r} has "
                    f"adapters {list(adapters)}; create them with HFPolicy(..., adapters=env.roles)"
                )
        if binding.system_prompt is not None and not isinstance(binding.system_prompt, str):
            raise TypeError(f"role {role!r}: system_prompt must be a string or None")
        return binding

    # ------------------------------------------------------------------ constructors
    @classmethod
    def shared(
        cls,
        env_or_roles: Sequence[str] | Any,
        policy: Policy,
        system_prompts: Mapping[str, str] | None = None,
        response_prefix: str = "",
    ) -> Team:
        """Every role played by ``policy`` itself (adapter ``None``); roles differ by prompt only."""
        roles = _roles_of(env_or_roles)
        prompts = cls._system_prompts(roles, system_prompts)
        return cls(roles, {r: RoleBinding(policy, None, prompts[r], response_prefix) for r in roles})

    @classmethod
    def per_role(
        cls,
        env_or_roles: Sequence[str] | Any,
        policy: Policy,
        system_prompts: Mapping[str, str] | None = None,
        response_prefix: str = "",
    ) -> Team:
        """One LoRA adapter per role on one policy; adapter name = role name (make the policy
        with ``HFPolicy(..., adapters=env.roles)``)."""
        roles = _roles_of(env_or_roles)
        prompts = cls._system_prompts(roles, system_prompts)
        return cls(roles, {r: RoleBinding(policy, r, prompts[r], response_prefix) for r in roles})

    @classmethod
    def per_role_models(
        cls,
        env_or_roles: Sequence[str] | Any,
        policies: Mapping[str, Policy],
        system_prompts: Mapping[str, str] | None = None,
        response_prefix: str = "",
    ) -> Team:
        """A separate policy (full model) per role: ``policies`` maps role -> policy."""
        roles = _roles_of(env_or_roles)
        prompts = cls._system_prompts(roles, system_prompts)
        bindings = {r: RoleBinding(p, None, prompts.get(r), response_prefix) for r, p in policies.items()}
        return cls(roles, bindings)

    @staticmethod
    def _system_prompts(roles: tuple[str, ...], system_prompts: Mapping[str, str] | None) -> dict[str, Any]:
        system_prompts = dict(system_prompts or {})
        unknown = [r for r in system_prompts if r not in roles]
        if unknown:
            raise ValueError(
                f"system_prompts for unknown role(s) {_names(map(str, unknown))}; roles: {roles!r}"
            )
        return {r: system_prompts.get(r) for r in roles}

    # ------------------------------------------------------------------ properties
    @property
    def policy_layout(self) -> str:
        """``"shared"``: every role is the same policy object with adapter ``None``;
        ``"per_role"`` otherwise (adapters, separate models, or a mix)."""
        bindings = list(self.bindings.values())
        first = bindings[0].policy
        if all(b.policy is first and b.adapter is None for b in bindings):
            return "shared"
        return "per_role"

    @property
    def policies(self) -> list[Policy]:
        """The distinct policy objects of the team, in role order."""
        out: list[Policy] = []
        for binding in self.bindings.values():
            if not any(binding.policy is p for p in out):
                out.append(binding.policy)
        return out

    def close(self) -> None:
        """Release what the team's policies hold (``close_policies``). The team cannot
        generate afterwards."""
        close_policies(self.policies)

    # ------------------------------------------------------------------ env interaction
    def check_env(self, env: Any) -> None:
        """Raise ``ValueError`` unless ``env`` has this team's roles in ``turn_order``."""
        env_roles = tuple(getattr(env, "roles", ()))
        env_id = getattr(getattr(env, "spec", None), "id", None) or "<env id>"
        if sorted(env_roles) != sorted(self.roles):
            raise ValueError(
                f"the env's roles {env_roles!r} are not this team's roles {self.roles!r}; make the env "
                "with the matching team variant (e.g. envs.make(env_id, team='mas'))"
            )
        if env_roles != self.turn_order:
            raise ValueError(
                f"the env's turn order {env_roles!r} differs from the team's "
                f"{self.turn_order!r}; make the env with "
                f"envs.make({env_id!r}, turn_order={self.turn_order!r})"
            )

    def binding(self, agent: str) -> RoleBinding:
        """The ``RoleBinding`` of a PettingZoo agent id such as ``"planner_0"``."""
        role = role_of(agent)
        try:
            return self.bindings[role]
        except KeyError:
            raise KeyError(
                f"agent {agent!r} has role {role!r}, which this team does not play; roles: {self.roles!r}"
            ) from None

    def prompt_for(self, env: Any, agent: str) -> Prompt:
        """The ``Prompt`` of ``agent`` now: its observation, its role's system prompt, and the
        env and agent attached (scripted policies read them)."""
        binding = self.binding(agent)
        return Prompt(
            text=env.observe(agent)["prompt"],
            system=binding.system_prompt,
            env=env,
            agent=agent,
            prefix=binding.response_prefix,
        )

    def act(self, env: Any, agent: str, sampling: SamplingParams | None = None) -> Generation:
        """One generation for ``agent`` from its bound policy (with the role's adapter). Its
        ``text`` is the full reply for the env: the role's ``response_prefix`` + the sampled
        text (``token_ids`` stay the sampled tokens only)."""
        binding = self.binding(agent)
        prompt = self.prompt_for(env, agent)
        generation = binding.policy.generate(
            [prompt], num_samples=1, sampling=sampling, adapter=binding.adapter
        )
        return dataclasses.replace(generation[0][0], text=binding.response_prefix + generation[0][0].text)

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{r}={b.policy.name}" + (f"[{b.adapter}]" if b.adapter else "") for r, b in self.bindings.items()
        )
        return f"Team({parts}; layout={self.policy_layout}, turn_order={self.turn_order})"
