"""The task of ``python -m benchmarks.peers``, as plain data and plain functions: what every
side (teamgym, TRL, CoMLRL) prompts with and how a reply is scored.

The peers run in their own virtualenv (``install.sh``) and import only this module and
teamgym's torch-free ``envs`` (on ``PYTHONPATH``), so every library is scored by the same
env code. A *spec* (JSON, written by ``benchmarks/peers.py``) names the task and budget:

* ``env``, ``env_kwargs``: the registered env and its options (one cycle of easy Plan-Path).
* ``roles``: the acting roles in turn order (``["solver"]``, or ``["planner", "executor"]``).
* ``prefix``: the reply prefix written after the chat template's assistant header (teamgym's
  ``--response-prefix``); the env parses ``prefix + reply``.
* ``steps``: the training task seeds, one list per optimiser step (train split).
* ``model``: the model directory; ``num_generations``, ``max_new_tokens``, ``temperature``,
  ``top_p``, ``lr``, ``lora_rank``, ``lora_alpha``, ``max_grad_norm``, ``seed``, ``threads``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import envs
from envs.core import role_of

__all__ = ["new_episode", "render", "play", "replay"]


def new_episode(spec: Mapping[str, Any], seed: int, split: str = "train") -> Any:
    """A fresh env of the spec's task, reset to train task ``seed``."""
    env = envs.make(spec["env"], split=split, **spec["env_kwargs"])
    env.reset(seed=seed)
    return env


def render(tokenizer: Any, observation: str, prefix: str) -> str:
    """The prompt as teamgym's HF backend writes it (``HFPolicy.prompt_token_ids``): the chat
    template around the observation (no system prompt), the assistant header, the prefix."""
    messages = [{"role": "user", "content": observation}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prefix


def play(spec: Mapping[str, Any], seed: int, replies: Sequence[str]) -> dict[str, float]:
    """Play ``replies`` (one per role, in turn order) on train task ``seed``: each role's return
    (the sum of its rewards), as teamgym's rollouts credit them."""
    env = new_episode(spec, seed)
    returns: dict[str, float] = {}
    for reply in replies:
        if not env.agents:
            break
        env.step(spec["prefix"] + reply)
        for agent in env.agents:  # as trainers.rollout credits a step's rewards
            role = role_of(agent)
            returns[role] = returns.get(role, 0.0) + float(env.rewards[agent])
    return returns


def replay(spec: Mapping[str, Any], seed: int, replies: Sequence[str], agent: str | None = None) -> str:
    """What ``agent`` (default: the one to act next) observes after ``replies`` were played on
    task ``seed`` (with none: the first role's prompt, or another role's before anyone acted)."""
    env = new_episode(spec, seed)
    for reply in replies:
        env.step(spec["prefix"] + reply)
    return env.observe(agent or env.agent_selection)["prompt"]
