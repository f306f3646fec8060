"""Shared by the advantage estimator tests (``test_advantages_*.py``): a Turn builder, batches by hand."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from trainers.records import TaskKey, Turn

S3 = math.sqrt(1.5)  # |r - mean| / std for (1, 2, 3) scaled: 1 / sqrt(2/3)


def turn(
    task_seed: int,
    episode: int,
    agent: str,
    turn: int,
    reward: float,
    step: int | None = None,
    state_key: object = None,
    tree_node: tuple[int, ...] = (),
    candidate: int = 0,
    invalid: bool = False,
    role: str | None = None,
    selected: bool = True,
) -> Turn:
    """A Turn with only the fields estimators read; step defaults to turn, state_key to a unique one."""
    step = turn if step is None else step
    return Turn(
        task=TaskKey("toy", "train", task_seed),
        episode=episode,
        agent=agent,
        role=agent if role is None else role,
        policy="shared",
        turn=turn,
        step=step,
        prompt="",
        response="",
        prompt_token_ids=(),
        token_ids=(),
        logprobs=(),
        reward=reward,
        reward_terms={},
        invalid=invalid,
        state_key=("unique", task_seed, episode, step, tree_node, candidate)
        if state_key is None
        else state_key,
        tree_node=tree_node,
        candidate=candidate,
        selected=selected,
    )


def close(got, expected, tol: float = 1e-5) -> bool:
    return np.allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float), atol=tol, rtol=0)


def grpo_batch() -> list[Turn]:
    """Task 0: episodes with returns 2 and 0 (K = 2). Task 1: returns 100, 200, 300 (another
    scale). Task 2: one episode. Task 3: two episodes with equal returns. Interleaved."""
    return [
        turn(0, 0, "a", 0, 1.0),
        turn(1, 0, "a", 0, 100.0),
        turn(0, 1, "a", 0, 0.0),
        turn(0, 0, "a", 1, 1.0),
        turn(1, 1, "a", 0, 150.0),
        turn(1, 1, "a", 1, 50.0),
        turn(0, 1, "a", 1, 0.0),
        turn(1, 2, "a", 0, 300.0),
        turn(2, 0, "a", 0, 5.0),
        turn(3, 0, "a", 0, 0.5),
        turn(3, 1, "a", 0, 0.25),
        turn(3, 1, "a", 1, 0.25),
    ]


def gigpo_batch(invalid: bool = False) -> list[Turn]:
    """Task 0, agent a, gamma 0.5. Episode 0: states s0 s1 s2, rewards 0 0 1 (R = 1).
    Episode 1: states s0 s2, rewards 0 0 (R = 0): s2 is met at step 2 and at step 1."""
    return [
        turn(0, 0, "a", 0, 0.0, state_key="s0"),
        turn(0, 1, "a", 0, 0.0, state_key="s0", invalid=invalid),
        turn(0, 0, "a", 2, 1.0, state_key="s2"),  # given out of time order on purpose
        turn(0, 0, "a", 1, 0.0, state_key="s1"),
        turn(0, 1, "a", 1, 0.0, state_key="s2"),
    ]


def paid(sample: Turn, **rewards: float) -> Turn:
    """``sample`` with ``agent_rewards`` recorded: its own reward plus what the others got."""
    return dataclasses.replace(sample, agent_rewards={sample.agent: sample.reward, **rewards})
