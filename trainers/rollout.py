"""Rollouts: play a team on many tasks and record every response as a ``Turn``.

``tree_rollout`` is AT-GRPO's tree sampling, exactly as docs/algorithms.md section 2:

    for each task, one live env E; at every turn, for the acting agent a:
      p = E.observe(a); sample K responses to p in ONE generation call (n = K);
      for each k: E_k = E.clone(); E_k.step(y_k); r_k = reward of a in E_k;
      the K candidates form the group (task, tree, node, turn, a);
      select k* (greedy argmax with seeded tie-breaks, or softmax(r / tau)); E <- E_k*;
      the next agent samples its K candidates from this selected state.

So each candidate acts on a clone of the env it observed (the reference code acted on a
stale env), and every agent - not only the first - gets K distinct actions from one state
(the reference code generated for all agents before selecting, so later agents saw K
identical states). ``plain_rollout`` plays N independent episodes per task (GRPO, GiGPO,
MATPO). A ``RolloutRequest`` names what to play (tasks, tree or plain, K, sampling, seed) as
plain data, so a runtime can play it anywhere (``trainers.runtime``); ``play`` plays one on a
team. ``step_request`` is what one training step plays: its tasks (``training_tasks``) and
sampler seed are functions of the config's seed and the step.

Both batch across tasks: at each turn, the prompts of every live task that the same
policy (and adapter) plays go into one ``generate`` call. Each prompt carries its own sampler
seed, drawn from its path's stream (``path_rng``: a function of the rollout seed, the task and
the path index), so a path plays the same whichever paths share its calls: a rollout split
over workers (``trainers.runtime``) returns what one process returns. Responses are only ever text
for the env to parse: malformed output is an invalid action with its penalty, never an
exception.
"""

from __future__ import annotations

import dataclasses
import random
import time
import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import envs
from agents.base import Generation, SamplingParams
from agents.team import Team
from envs.core import role_of
from envs.sandbox.memo import prefetch
from envs.splits import is_validation_seed
from trainers.env_setup import make_task_env
from trainers.greedy_replies import GreedyReplies
from trainers.records import Episode, RolloutBatch, TaskKey, Turn
from trainers.rollout_clock import RolloutClock

__all__ = [
    "tree_rollout",
    "plain_rollout",
    "SELECTIONS",
    "training_tasks",
    "training_sampling",
    "role_sampling_for",
    "RolloutRequest",
    "play",
    "step_request",
    "rollout_for_step",
    "path_rng",
]

SELECTIONS = ("greedy", "softmax")


@dataclass
class _Path:
    """One live episode path: its env, the executed turns, per-agent returns, and its own
    random stream (sampler seeds, selection tie-breaks: ``path_rng``)."""

    task: TaskKey
    index: int
    env: Any
    rng: np.random.Generator
    turns: list[Turn] = dataclasses.field(default_factory=list)
    returns: dict[str, float] = dataclasses.field(default_factory=dict)
    node: tuple[int, ...] = ()
    done: bool = False

    def episode(self) -> Episode:
        return Episode(
            task=self.task,
            index=self.index,
            turns=tuple(self.turns),
            success=bool(self.env.success),
            returns=dict(self.returns),
            truncated=any(self.env.truncations.values()) and not any(self.env.terminations.values()),
        )


def path_rng(seed: int, task: TaskKey, index: int) -> np.random.Generator:
    """The random stream of path ``index`` of ``task`` in a rollout seeded ``seed``: its
    prompts' sampler seeds and its selection tie-breaks. A path's draws depend on nothing
    else, so a rollout split over workers plays what one process plays."""
    env_id = zlib.crc32(f"{task.env_id}/{task.split}".encode())
    return np.random.default_rng([seed % 2**63, env_id, task.seed % 2**63, index])


def _generate_for(
    paths: Sequence[_Path],
    team: Team,
    num_samples: int,
    sampling: SamplingParams,
    clock: RolloutClock,
    role_sampling: Mapping[str, SamplingParams] | None = None,
    greedy_replies: GreedyReplies | None = None,
) -> dict[int, list[Generation]]:
    """Sample ``num_samples`` responses for the acting agent of every path, one
    ``generate`` call per (policy, adapter, sampling) triple (``role_sampling`` gives some roles
    their own), each prompt with a seed from its path's stream. Returns path position ->
    generations.

    ``greedy_replies``: greedy replies so far in this rollout; a prompt answered before is not
    asked again (``trainers.greedy_replies``). None: every prompt is asked."""
    role_sampling = role_sampling or {}
    by_binding: dict[tuple[int, str | None, SamplingParams], list[int]] = defaultdict(list)
    for position, path in enumerate(paths):
        agent = path.env.agent_selection
        binding = team.binding(agent)
        params = role_sampling.get(role_of(agent), sampling)
        by_binding[(id(binding.policy), binding.adapter, params)].append(position)
    out: dict[int, list[Generation]] = {}
    for group_key, positions in by_binding.items():
        sampling = group_key[2]
        binding = team.binding(paths[positions[0]].env.agent_selection)
        prompts = [
            dataclasses.replace(
                team.prompt_for(paths[p].env, paths[p].env.agent_selection),
                seed=int(paths[p].rng.integers(2**31)),
            )
            for p in positions
        ]
        reuse = greedy_replies is not None and GreedyReplies.applies_to(binding.policy, sampling)
        asked = greedy_replies.unanswered(group_key, prompts) if reuse else prompts
        started = time.perf_counter()
        groups = []
        if asked:
            groups = binding.policy.generate(
                asked, num_samples=num_samples, sampling=sampling, adapter=binding.adapter
            )
            clock.generate_calls += 1
        clock.generate_seconds += time.perf_counter() - started
        clock.generated_tokens += sum(len(g.token_ids) for group in groups for g in group)
        if reuse:
            groups = greedy_replies.replies(group_key, asked, groups, prompts)
        for position, group in zip(positions, groups, strict=True):
            out[position] = group
    return out


def _prefetch_programs(
    paths: Sequence[_Path], generations: dict[int, list[Generation]], team: Team, clock: RolloutClock
) -> None:
    """Start, all at once, the sandbox runs this turn's responses will make (every candidate of
    every live task), for envs that say which (``sandbox_jobs(agent, replies)``, e.g. a planning
    env's tool team); the env steps then reuse the results (``envs.sandbox.memo``)."""
    jobs = []
    for position, path in enumerate(paths):
        hook = getattr(path.env, "sandbox_jobs", None)
        if hook is not None:
            agent = path.env.agent_selection
            prefix = team.binding(agent).response_prefix
            jobs += hook(agent, [prefix + generation.text for generation in generations[position]])
    if jobs:
        started = time.perf_counter()
        clock.sandbox_runs += prefetch(jobs)
        clock.sandbox_seconds += time.perf_counter() - started


@dataclass(frozen=True)
class _Node:
    """What every candidate of one node shares: the acting agent and the state it observed."""

    agent: str
    prompt: str
    state_key: Any
    turn: int
    step: int
    binding: Any  # agents.team.RoleBinding


def _start_paths(
    tasks: Sequence[TaskKey], per_task: int, team: Team, env_kwargs: Mapping[str, Any] | None, seed: int
) -> list[_Path]:
    """``per_task`` live paths per task, each on its own freshly reset env the team fits."""
    paths = [
        _Path(task, index, make_task_env(task, env_kwargs), path_rng(seed, task, index))
        for task in tasks
        for index in range(per_task)
    ]
    for path in paths:
        team.check_env(path.env)
    return paths


def _node(path: _Path, team: Team) -> _Node:
    env, agent = path.env, path.env.agent_selection
    prompt = env.observe(agent)["prompt"]
    return _Node(agent, prompt, env.state_key(), env.turn, env.num_steps, team.binding(agent))


def _play(path: _Path, node: _Node, env: Any, generation: Generation, candidate: int, selected: bool) -> Turn:
    """Step ``env`` (a clone of ``path.env``, or the env itself in plain rollouts) with one
    response to ``node``'s prompt; the Turn it earned."""
    response = node.binding.response_prefix + generation.text  # the reply the env parses
    env.step(response)
    info = env.infos[node.agent]
    return Turn(
        task=path.task,
        episode=path.index,
        agent=node.agent,
        role=role_of(node.agent),
        policy=node.binding.policy_id,
        turn=node.turn,
        step=node.step,
        prompt=node.prompt,
        response=response,
        prompt_token_ids=generation.prompt_token_ids,
        token_ids=generation.token_ids,
        logprobs=generation.logprobs,
        reward=float(env.rewards[node.agent]),
        reward_terms=dict(info["reward_terms"]),
        invalid=bool(info["invalid_action"]),
        state_key=node.state_key,
        tree_node=path.node,
        candidate=candidate,
        selected=selected,
        done=bool(env.terminations[node.agent] or env.truncations[node.agent]),
        finish_reason=generation.finish_reason,
        agent_rewards={agent: float(reward) for agent, reward in env.rewards.items()},
        agent_reward_terms={agent: dict(env.infos[agent]["reward_terms"]) for agent in env.agents},
        feedback=str(info.get("feedback", "")),
    )


def _with_render(turn: Turn, env: Any) -> Turn:
    """``turn`` with the picture of ``env`` (stepped with it) for run reports; executed turns
    only, so a tree node draws its state once, not K times. An env that draws nothing (a
    third-party env without ``_render_text``, or ``render_mode="human"``) leaves None."""
    if getattr(env, "render_mode", None) == "human":
        return turn
    try:
        picture = env.render()
    except NotImplementedError:
        return turn
    return dataclasses.replace(turn, render=picture if isinstance(picture, str) else None)


def _advance(path: _Path, env: Any, turn: Turn) -> None:
    """Make ``env`` (already stepped with ``turn``) the path's live env."""
    for agent in env.agents:
        path.returns[agent] = path.returns.get(agent, 0.0) + float(env.rewards[agent])
    path.env = env
    path.turns.append(turn)
    path.done = turn.done


def _select(rewards: list[float], selection: str, tau: float, rng: np.random.Generator) -> int:
    values = np.asarray(rewards, dtype=np.float64)
    if selection == "greedy":
        best = np.flatnonzero(values == values.max())
        return int(rng.choice(best))  # seeded tie-break
    logits = (values - values.max()) / tau
    probs = np.exp(logits) / np.exp(logits).sum()
    return int(rng.choice(len(values), p=probs))


def tree_rollout(
    tasks: Sequence[TaskKey],
    team: Team,
    *,
    num_candidates: int,
    sampling: SamplingParams,
    selection: str = "greedy",
    selection_temperature: float = 1.0,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    role_sampling: Mapping[str, SamplingParams] | None = None,
) -> RolloutBatch:
    """AT-GRPO tree sampling (module docstring).

    Args:
        tasks: The tasks to play (one tree, one live env per task).
        team: Who plays each role.
        num_candidates: K, candidates sampled per (task, turn, agent) node.
        sampling: Sampling parameters (each prompt gets its own seed from its path's stream).
        selection: ``"greedy"`` (argmax reward, seeded ties) or ``"softmax"``
            (k* ~ softmax(r / selection_temperature)).
        selection_temperature: tau of the softmax selection.
        env_kwargs: Passed to ``envs.make`` (team variant, difficulty, max_cycles...).
        seed: Seeds every path's stream (``path_rng``): its prompts' sampler seeds and its
            selection tie-breaks.
        role_sampling: Role -> its own sampling parameters (temperature, reply length), for
            the roles that do not use ``sampling``.

    Returns:
        ``RolloutBatch``: samples = all K candidates of every node (in node order, then
        candidate order); episodes = the selected path of every tree.
    """
    if selection not in SELECTIONS:
        raise ValueError(f"selection={selection!r}; choose one of {SELECTIONS}")
    if not isinstance(num_candidates, int) or num_candidates < 1:
        raise ValueError(f"num_candidates (K) must be an int >= 1, got {num_candidates!r}")
    if selection_temperature <= 0:
        raise ValueError(f"selection_temperature must be > 0, got {selection_temperature}")
    clock = RolloutClock()
    paths = _start_paths(tasks, 1, team, env_kwargs, seed)
    samples: list[Turn] = []
    while live := [path for path in paths if not path.done]:
        generations = _generate_for(live, team, num_candidates, sampling, clock, role_sampling)
        _prefetch_programs(live, generations, team, clock)
        for position, path in enumerate(live):
            node, branches = _node(path, team), []
            for k, generation in enumerate(generations[position]):
                branch = path.env.clone()  # the candidate acts on a copy of the env it observed
                branches.append((branch, _play(path, node, branch, generation, k, selected=False)))
            chosen = _select(
                [turn.reward for _, turn in branches], selection, selection_temperature, path.rng
            )
            node_turns = [
                dataclasses.replace(turn, selected=(k == chosen)) for k, (_, turn) in enumerate(branches)
            ]
            node_turns[chosen] = _with_render(node_turns[chosen], branches[chosen][0])
            samples.extend(node_turns)
            _advance(path, branches[chosen][0], node_turns[chosen])
            path.node = path.node + (chosen,)
    episodes = tuple(path.episode() for path in paths)
    return RolloutBatch(samples=tuple(samples), episodes=episodes, stats=clock.stats())


def plain_rollout(
    tasks: Sequence[TaskKey],
    team: Team,
    *,
    episodes_per_task: int,
    sampling: SamplingParams,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int = 0,
    role_sampling: Mapping[str, SamplingParams] | None = None,
) -> RolloutBatch:
    """N independent episodes per task, one response per turn (GRPO, GiGPO, MATPO, and
    evaluation with N = 1). Samples are every turn of every episode. ``role_sampling``: as in
    ``tree_rollout``."""
    if not isinstance(episodes_per_task, int) or episodes_per_task < 1:
        raise ValueError(f"episodes_per_task must be an int >= 1, got {episodes_per_task!r}")
    clock = RolloutClock()
    paths = _start_paths(tasks, episodes_per_task, team, env_kwargs, seed)
    greedy_replies = GreedyReplies()
    while live := [path for path in paths if not path.done]:
        generations = _generate_for(live, team, 1, sampling, clock, role_sampling, greedy_replies)
        _prefetch_programs(live, generations, team, clock)
        for position, path in enumerate(live):
            node = _node(path, team)
            turn = _play(path, node, path.env, generations[position][0], candidate=0, selected=True)
            turn = _with_render(turn, path.env)
            _advance(path, path.env, turn)
    samples = tuple(turn for path in paths for turn in path.turns)
    episodes = tuple(path.episode() for path in paths)
    return RolloutBatch(samples=samples, episodes=episodes, stats=clock.stats())


# ---------------------------------------------------------------------------- a training step's rollouts
def training_tasks(config: Any, step: int) -> list[TaskKey]:
    """Fresh training tasks for ``step``: a pure function of (seed, step), distinct in a step,
    never from the validation slice (``envs.splits``). ``random.sample`` over a range this
    large draws one seed at a time, so the first draws do not depend on how many are asked."""
    draws = random.Random(f"{config.seed}-{step}").sample(
        range(envs.TEST_SEED_START), config.tasks_per_step + 8
    )
    seeds = [seed for seed in draws if not is_validation_seed(seed)][: config.tasks_per_step]
    return [TaskKey(envs.spec(config.env).id, "train", seed) for seed in seeds]


def training_sampling(config: Any) -> SamplingParams:
    """How training rollouts sample (the learner evaluates log pi under the same settings)."""
    return SamplingParams(
        temperature=config.temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens,
        stop=config.stop,
    )


def role_sampling_for(
    sampling: SamplingParams, temperature: Mapping[str, float], max_new_tokens: Mapping[str, int]
) -> dict[str, SamplingParams]:
    """``sampling`` with each named role's own temperature and reply length (the roles a
    config's ``role_temperature`` / ``role_max_new_tokens`` name; the others use ``sampling``)."""
    return {
        role: dataclasses.replace(
            sampling,
            temperature=temperature.get(role, sampling.temperature),
            max_new_tokens=max_new_tokens.get(role, sampling.max_new_tokens),
        )
        for role in {*temperature, *max_new_tokens}
    }


@dataclass(frozen=True)
class RolloutRequest:
    """What to play, as plain data a runtime can ship to a worker: ``play(request, team)`` is
    a function of (request, the team's weights).

    Attributes:
        tasks: The tasks, in order.
        sampling: How to sample (each prompt gets its own seed, drawn from ``seed``).
        mode: ``"tree"`` (AT-GRPO tree sampling, ``per_task`` = K candidates per node) or
            ``"plain"`` (``per_task`` independent episodes per task).
        per_task: K (tree) or episodes per task (plain).
        selection: Tree rollouts: ``"greedy"`` or ``"softmax"`` (``tree_rollout``).
        selection_temperature: Tree rollouts: the softmax selection's tau.
        env_kwargs: ``envs.make`` arguments of every task's env.
        seed: Seeds every path's stream (``path_rng``): sampler seeds and selection tie-breaks.
        role_sampling: Role -> its own sampling parameters, for roles not using ``sampling``.
    """

    tasks: tuple[TaskKey, ...]
    sampling: SamplingParams
    mode: str = "plain"
    per_task: int = 1
    selection: str = "greedy"
    selection_temperature: float = 1.0
    env_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    seed: int = 0
    role_sampling: Mapping[str, SamplingParams] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("tree", "plain"):
            raise ValueError(f"RolloutRequest.mode must be 'tree' or 'plain', got {self.mode!r}")
        object.__setattr__(self, "tasks", tuple(self.tasks))


def play(request: RolloutRequest, team: Team) -> RolloutBatch:
    """Play ``request`` with ``team`` in this process."""
    if request.mode == "tree":
        return tree_rollout(
            request.tasks,
            team,
            num_candidates=request.per_task,
            sampling=request.sampling,
            selection=request.selection,
            selection_temperature=request.selection_temperature,
            env_kwargs=request.env_kwargs,
            seed=request.seed,
            role_sampling=request.role_sampling,
        )
    return plain_rollout(
        request.tasks,
        team,
        episodes_per_task=request.per_task,
        sampling=request.sampling,
        env_kwargs=request.env_kwargs,
        seed=request.seed,
        role_sampling=request.role_sampling,
    )


def step_request(config: Any, step: int, sampling: SamplingParams) -> RolloutRequest:
    """The rollouts of training step ``step`` (tree or plain, per ``config.rollout``;
    ``config``: a ``trainers.config.TrainConfig``): a function of (config, step) alone."""
    return RolloutRequest(
        tasks=tuple(training_tasks(config, step)),
        sampling=sampling,
        mode="tree" if config.rollout == "tree" else "plain",
        per_task=config.num_generations,
        selection=config.selection,
        env_kwargs=config.env_setup.make_kwargs,
        seed=config.seed * 1_000_003 + step,
        role_sampling=role_sampling_for(sampling, config.role_temperature, config.role_max_new_tokens),
    )


def rollout_for_step(config: Any, team: Team, step: int, sampling: SamplingParams) -> RolloutBatch:
    """Play training step ``step``'s rollouts (``step_request``) with ``team`` in this process:
    a pure function of (config, step, weights)."""
    return play(step_request(config, step, sampling), team)
