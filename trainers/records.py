"""What rollouts record: frozen ``Turn`` (one role's response to one prompt, a training
sample) and ``Episode`` (one played path through a task), keyed by ``TaskKey``.

Advantage estimators group turns by tuples of these fields (docs/algorithms.md section 1):
AT-GRPO by (task, turn, agent), GRPO by (task), Dr. MAS by (task, agent), GiGPO's step
level by (task, agent, state_key), Tree-GRPO by (task, tree). "Task" is always one seeded
env instance, never a batch index, so groups can never mix tasks.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

__all__ = ["TaskKey", "Turn", "Episode", "RolloutBatch", "RecordedTurn", "RecordedEpisode"]


@dataclass(frozen=True, order=True)
class TaskKey:
    """One task: an env id, the split and the task seed (``env.reset(seed=seed)``)."""

    env_id: str
    split: str
    seed: int

    def __str__(self) -> str:
        return f"{self.env_id}/{self.split}/{self.seed}"


@dataclass(frozen=True)
class Turn:
    """One role's response to one prompt, with the reward it earned.

    Attributes:
        task: The task the turn belongs to.
        episode: Index of the episode (plain rollouts) or tree (tree rollouts) within the
            task's batch.
        agent: PettingZoo agent id, e.g. ``"planner_0"``.
        role: The agent's role, e.g. ``"planner"``.
        policy: Id of the policy that produced the response (policy name, plus
            ``":" + adapter`` for a per-role adapter); the learner trains each sample with it.
        turn: Completed cycles of the turn order before this response (AT-GRPO's t).
        step: Index of this response among all agent actions of its episode path.
        prompt: Prompt text (for transcripts and debugging).
        response: The reply the env parsed: the role's response prefix + the sampled text.
        prompt_token_ids: The prompt as the model saw it (chat template applied).
        token_ids: Sampled response tokens.
        logprobs: Sampler log-probabilities of ``token_ids`` (pi_old when exact).
        reward: ``env.rewards[agent]`` right after the response (alpha * team + local).
        reward_terms: The named parts of ``reward`` (``info["reward_terms"]``).
        invalid: The env judged the response an invalid action.
        state_key: ``env.state_key()`` *before* the response (GiGPO anchor state).
        tree_node: Path of candidate indices selected before this node (tree rollouts;
            empty for plain rollouts), so (task, turn, agent, tree_node) names the node.
        candidate: Index k of this response among the K candidates of its node (0 in plain
            rollouts).
        selected: The response was executed on the episode's path (tree rollouts select one
            candidate per node; plain rollouts execute every turn).
        done: The episode ended (terminated or truncated) right after this response.
        finish_reason: The generation's finish reason (``stop``, ``eos``, ``length``).
        agent_rewards: Every agent's reward right after the response (``env.rewards``): the
            acting agent's equals ``reward``; the others hold what the step paid them (the
            team terms, which planning envs pay on the executor's step). Empty in hand-built
            turns: then only the acting agent is known to have been paid.
        agent_reward_terms: Every agent's named reward terms right after the response
            (``env.infos[agent]["reward_terms"]``), e.g. a game's ``seat/outcome`` for the seat
            that lost on the other seat's move. Empty in hand-built turns.
        feedback: What the env said about the response (``info["feedback"]``): the invalid
            reason, or what the parsed action did. Shown in run reports.
        render: The env's text picture of the state after the response (``env.render()``),
            recorded for executed responses of envs that draw one; None otherwise.
    """

    task: TaskKey
    episode: int
    agent: str
    role: str
    policy: str
    turn: int
    step: int
    prompt: str
    response: str
    prompt_token_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    reward: float
    reward_terms: Mapping[str, float]
    invalid: bool
    state_key: Hashable
    tree_node: tuple[int, ...] = ()
    candidate: int = 0
    selected: bool = True
    done: bool = False
    finish_reason: str = "stop"
    agent_rewards: Mapping[str, float] = field(default_factory=dict)
    agent_reward_terms: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    feedback: str = ""
    render: str | None = None

    def reward_of(self, agent: str) -> float:
        """What this step paid ``agent`` (``reward`` for the acting agent; 0 for another agent
        when ``agent_rewards`` was not recorded)."""
        return self.reward if agent == self.agent else float(self.agent_rewards.get(agent, 0.0))


@dataclass(frozen=True)
class Episode:
    """One played path through a task: the executed turns in order.

    Attributes:
        task: The task.
        index: Episode (or tree) index within the task's batch.
        turns: The executed turns (in tree rollouts: the selected candidate of each node).
        success: The env reported the task solved.
        returns: Sum of each agent's rewards along the path.
        truncated: The episode hit ``max_cycles`` without terminating.
    """

    task: TaskKey
    index: int
    turns: tuple[Turn, ...]
    success: bool
    returns: Mapping[str, float]
    truncated: bool

    @property
    def length(self) -> int:
        return len(self.turns)


@dataclass(frozen=True)
class RolloutBatch:
    """What one rollout phase returns.

    Attributes:
        samples: Every turn to train on: in tree rollouts all K candidates of every node,
            in plain rollouts every turn of every episode.
        episodes: The played paths (metrics, transcripts, GiGPO/MATPO episode returns).
        stats: Where the rollout's time went: ``time/generate`` (inside ``generate`` calls),
            ``time/env`` (the rest: env steps, clones, prompts), ``time/rollout`` (total),
            plus ``generated_tokens`` and ``generate_calls``.
    """

    samples: tuple[Turn, ...]
    episodes: tuple[Episode, ...]
    stats: Mapping[str, float] = field(default_factory=dict)


# What a stored episode holds when read back (``trainers.run.episodes``): text, not tokens.
@dataclass(frozen=True)
class RecordedTurn:
    """One executed reply of a stored episode."""

    agent: str
    role: str
    response: str
    finish_reason: str
    invalid: bool


@dataclass(frozen=True)
class RecordedEpisode:
    """A stored episode: its task, outcome and executed replies (``source`` names the file)."""

    task: TaskKey
    success: bool
    turns: tuple[RecordedTurn, ...]
    source: str

    def replies(self) -> tuple[tuple[str, str], ...]:
        """(agent, response) per turn: two episodes with equal replies on a task are one demo."""
        return tuple((turn.agent, turn.response) for turn in self.turns)
