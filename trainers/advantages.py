"""Advantage estimators (docs/algorithms.md sections 1-9): one grouping engine, eight estimators.

The array layer (group ids, in-group normalisation, leave-one-out, discounted returns, group
diagnostics) lives in ``trainers.grouping`` and is re-exported here. This module holds estimators over
the training samples (``Sequence[Turn]``) that build group keys from ``Turn`` fields and return an
:class:`AdvantageResult` (one advantage and one loss weight per sample, in input order), registered
in :data:`ADVANTAGE_ESTIMATORS` and called by name through :func:`compute_advantages` (the contract
and the registry live in ``trainers.estimator_registry``; both are re-exported here). Episodes,
agents' parts of them and their returns are built by ``trainers.sample_returns``; the self-play
estimator (RAE, the one that keeps state between batches) lives in ``trainers.rae``.

A new estimator is one function and one :func:`register_estimator` call that declares what it
needs (the rollouts it is meaningful on, a role the team must have, which keyword takes
``--advantage-scale``); its other keyword-only parameters become its ``--estimator-kwargs``
options. The training command checks a config against that declaration, never against names.

Rules (on top of ``trainers.grouping``'s: singleton and all-equal groups get A = 0, population
std + eps):

* every record-level key starts with ``Turn.task``, so groups never mix tasks;
* an *episode* is the samples with equal (task, episode). Its return is the sum of the rewards of
  its ``selected`` samples (all of a plain rollout; the executed path of a tree rollout). Every
  sample of the episode, selected or not, gets its advantage;
* an *agent's* return in an episode is what every selected step paid that agent
  (``Turn.reward_of``), its own turns and the team terms paid on other agents' turns alike:
  exactly ``Episode.returns[agent]``. Planning envs pay success on the executor's step, so this is
  the only per-agent return in which a planner sees the outcome (MATPO, Dr. MAS per episode).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence

import numpy as np

from trainers.estimator_registry import (
    ADVANTAGE_ESTIMATORS,
    STATE_KEYWORD,
    AdvantageResult,
    EstimatorSpec,
    register_estimator,
)
from trainers.grouping import (
    EPS,
    check_choice,
    discounted_returns,
    group_ids,
    group_stats,
    normalize_in_groups,
    rloo_in_groups,
)
from trainers.rae import rae
from trainers.records import Turn
from trainers.sample_returns import (
    advantage_result,
    episode_agent_returns,
    episode_members,
    member_sums,
    members,
    prefixed,
    sample_rewards,
)

_GIGPO_NORMS = {"mean_std_norm": "group", "mean_norm": "none"}

__all__ = [
    "ADVANTAGE_ESTIMATORS",
    "EPS",
    "EstimatorSpec",
    "GIGPO_ANCHORS",
    "GIGPO_STEP_RETURNS",
    "AdvantageResult",
    "at_grpo",
    "compute_advantages",
    "discounted_returns",
    "gigpo",
    "grpo",
    "group_ids",
    "group_stats",
    "matpo",
    "normalize_in_groups",
    "per_agent",
    "register_estimator",
    "rae",
    "rloo",
    "rloo_in_groups",
    "tree",
]

# Layer 2: record-level estimators


def grpo(samples: Sequence[Turn], *, scale: str = "group") -> AdvantageResult:
    """Single-agent GRPO baseline: group key (task) over whole episodes.

    R_i = sum of the rewards of episode i, A_i = normalize_in_groups(R, task, scale) over the
    episodes of the task (one value per episode), broadcast to every sample of episode i. K = 2
    episodes per task with ``scale="group"`` is 2-GRPO: A = +-1 (0 if R_1 = R_2) up to eps.
    """
    ep, ep_task = episode_members(samples)
    returns = member_sums(samples, sample_rewards(samples), ep, len(ep_task))
    return advantage_result(normalize_in_groups(returns, ep_task, scale)[ep], group_stats(ep_task, returns))


def rloo(samples: Sequence[Turn]) -> AdvantageResult:
    """RLOO over the episodes of a task: A_i = R_i - mean_{j != i} R_j = K/(K-1) (R_i - mean R),
    R_i the episode return, broadcast to every sample of episode i. One episode -> 0."""
    ep, ep_task = episode_members(samples)
    returns = member_sums(samples, sample_rewards(samples), ep, len(ep_task))
    return advantage_result(rloo_in_groups(returns, ep_task)[ep], group_stats(ep_task, returns))


def at_grpo(samples: Sequence[Turn], *, scale: str = "group") -> AdvantageResult:
    """AT-GRPO: the K candidates of one tree node, normalised by their own ``Turn.reward``.

    Group key (task, episode, tree_node, turn, agent): the candidates that answered the same prompt.
    With one tree per task (``episode`` constant, and ``tree_node`` fixed by (turn, agent) along
    the one selected path) this is the (task, turn, agent) of docs/algorithms.md section 2; ``episode`` and
    ``tree_node`` only keep several trees of one task apart. Plain rollouts (one candidate per
    node) give singleton groups, hence A = 0: AT-GRPO needs tree rollouts with K >= 2.
    """
    ids = group_ids([(s.task, s.episode, s.tree_node, s.turn, s.agent) for s in samples])
    r = sample_rewards(samples)
    return advantage_result(normalize_in_groups(r, ids, scale), group_stats(ids, r))


def per_agent(samples: Sequence[Turn], *, scale: str = "group", base: str = "turn") -> AdvantageResult:
    """Dr. MAS agent-wise normalisation: group key (task, agent), A = (R - mu_agent)/(sigma_agent + eps).

    ``base="turn"``: members are the agent's samples in the task, R = ``Turn.reward``.
    ``base="episode"``: members are the agent's episodes in the task (one value per
    (task, episode, agent)), R = ``Episode.returns[agent]``: everything the episode's executed path
    paid the agent, its own turns' rewards and the team terms paid on other agents' turns (the
    Dr. MAS paper's per-agent return), broadcast to the agent's samples of that episode.
    """
    check_choice("base", base, ("turn", "episode"))
    r = sample_rewards(samples)
    if base == "turn":
        ids = group_ids([(s.task, s.agent) for s in samples])
        return advantage_result(normalize_in_groups(r, ids, scale), group_stats(ids, r))
    ep, ep_task = episode_members(samples)
    agent_returns = episode_agent_returns(samples, ep, len(ep_task))
    member, groups = members(samples, lambda s: (s.task, s.episode, s.agent), lambda s: (s.task, s.agent))
    returns = np.zeros(len(groups))
    for s, e, m in zip(samples, ep.tolist(), member.tolist(), strict=True):
        returns[m] = agent_returns[e][s.agent]
    return advantage_result(normalize_in_groups(returns, groups, scale)[member], group_stats(groups, returns))


GIGPO_STEP_RETURNS = ("agent", "path")
GIGPO_ANCHORS = ("state", "observation")


def _discounted_agent_returns(
    samples: Sequence[Turn], r: np.ndarray, episode_of: np.ndarray, gamma: float
) -> np.ndarray:
    """R_{i,t} = sum_{k >= t} gamma^(k-t) (what step k paid the agent acting at t), along each
    episode ordered by ``Turn.step`` (k - t counts steps of the path, every agent's)."""
    out = np.zeros(len(samples))
    by_episode: dict[int, list[int]] = defaultdict(list)
    for i, e in enumerate(episode_of.tolist()):
        by_episode[e].append(i)
    for idx in by_episode.values():
        idx.sort(key=lambda i: samples[i].step)
        for agent in {samples[i].agent for i in idx}:
            running = 0.0
            for i in reversed(idx):
                own = samples[i].agent == agent
                running = (r[i] if own else samples[i].reward_of(agent)) + gamma * running
                if own:
                    out[i] = running
    return out


def gigpo(
    samples: Sequence[Turn],
    *,
    omega: float = 1.0,
    gamma: float = 0.95,
    norm: str = "mean_std_norm",
    episode_stats: str = "trajectory",
    invalid_penalty: float = 0.0,
    step_return: str = "agent",
    anchor: str = "state",
) -> AdvantageResult:
    """GiGPO: A = A^E + omega * A^S over plain (un-branched) episodes.

    Rewards first: r = Turn.reward - invalid_penalty for invalid turns. The default 0.0 differs
    from the GiGPO paper's 0.1 because teamgym envs already put their invalid penalty in the reward
    (``local/invalid``); 0.1 reproduces verl-agent's extra penalty on top.

    Episode level: R_i = sum_t r_{i,t}, A^E_i = (R_i - mean R)/F over the episodes of the task,
    F = std + eps (``norm="mean_std_norm"``) or 1 (``"mean_norm"``). ``episode_stats="trajectory"``
    takes mean/std over one value per episode; ``"step"`` pools them over the step samples (each
    sample carries its episode's R_i, so long episodes weigh more: verl-agent's default). Parity is
    in the pooling only: verl-agent's std is Bessel-corrected and its one-episode tasks keep A = R;
    here population std and A = 0 (docs/algorithms.md section 1).

    Step level: R_{i,t} = sum_{k >= t} gamma^(k-t) r_{i,k}(a) along episode i ordered by
    ``Turn.step`` (k - t counts every agent's steps), for the agent a acting at t. Which rewards
    of the later steps count (the spec, written for one agent, leaves it open):

    * ``step_return="agent"`` (default): what each later step paid *a* (``Turn.reward_of``): its
      own rewards and the team terms paid on other agents' steps (a planner sees the success the
      executor's step earns), not the other agents' local terms (a planner is not charged for
      the executor's invalid replies). The per-agent return of multi-agent RL.
    * ``step_return="path"``: the acting agent's reward of every later step, whoever acted
      (team terms and other agents' local terms alike); teamgym before this option existed.

    Anchor group: the samples of one task and one acting agent, from all episodes and time
    indices, with equal ``anchor``:

    * ``anchor="state"`` (default): ``Turn.state_key``, the env's game state. An executor's
      steps under different plans share a group: the baseline averages over the plans it was
      given, which keeps it action-independent (unbiased) and the groups large.
    * ``anchor="observation"``: the state key and the exact prompt the agent answered (plans,
      feedback, messages included): a baseline per observation, smaller groups.

    A^S = (R_{i,t} - mean)/F in the anchor group (same F), singleton anchors -> 0.

    Raises:
        ValueError: Two samples of one episode share a ``step`` (tree samples are not plain
            episodes), or an option outside its choices.
    """
    check_choice("norm", norm, tuple(_GIGPO_NORMS))
    check_choice("episode_stats", episode_stats, ("trajectory", "step"))
    check_choice("step_return", step_return, GIGPO_STEP_RETURNS)
    check_choice("anchor", anchor, GIGPO_ANCHORS)
    scale = _GIGPO_NORMS[norm]
    steps = Counter((s.task, s.episode, s.step) for s in samples)
    clash = next((key for key, count in steps.items() if count > 1), None)
    if clash is not None:
        raise ValueError(
            f"gigpo needs plain episodes: task {clash[0]} episode {clash[1]} repeats step {clash[2]}"
        )
    r = sample_rewards(samples) - invalid_penalty * np.array([s.invalid for s in samples], dtype=np.float64)
    ep, ep_task = episode_members(samples)
    returns = member_sums(samples, r, ep, len(ep_task))
    if episode_stats == "trajectory":
        adv_episode = normalize_in_groups(returns, ep_task, scale)[ep]
        episode_diag = group_stats(ep_task, returns)
    else:
        adv_episode = normalize_in_groups(returns[ep], ep_task[ep], scale)
        episode_diag = group_stats(ep_task[ep], returns[ep])
    if step_return == "agent":
        to_go = _discounted_agent_returns(samples, r, ep, gamma)
    else:
        to_go = discounted_returns(r, ep, gamma, order=[s.step for s in samples])
    if anchor == "state":
        anchors = group_ids([(s.task, s.agent, s.state_key) for s in samples])
    else:
        anchors = group_ids([(s.task, s.agent, s.state_key, s.prompt) for s in samples])
    adv_step = normalize_in_groups(to_go, anchors, scale)
    return advantage_result(
        adv_episode + omega * adv_step,
        {**prefixed("episode", episode_diag), **prefixed("anchor", group_stats(anchors, to_go))},
    )


def matpo(samples: Sequence[Turn], *, planner_role: str = "planner", scale: str = "group") -> AdvantageResult:
    """MATPO: planner-rooted episodes normalised per task, broadcast to their worker turns.

    Episode i = the samples with equal (task, episode): its planner turns and the worker turns they
    spawned. Its score r_i is the episode's outcome for the team: the planner's return
    ``Episode.returns[planner]``, everything the executed path paid the planner agent (its own
    rewards, e.g. a format penalty, and the team terms wherever they were paid: planning envs pay
    success on the executor's step). With several agents of ``planner_role`` in an episode, the
    mean of their returns. A_i is normalised over the planner episodes of the task; every sample
    of episode i (planner and worker) gets A_i. The workers' own local terms (their invalid
    replies) do not enter r_i: MATPO scores the planner's outcome.

    Weights: w = (S / E) / n_i for each of the n_i samples of episode i (S samples, E episodes in
    the call). Every episode's weights sum to S / E, so each planner episode counts equally however
    many worker turns it has, and the weights sum to S (mean 1): a loss that averages w * loss over
    samples keeps the scale of an unweighted one, a loss divided by sum(w) is unaffected.

    Raises:
        ValueError: An episode has no turn of ``planner_role``.
    """
    ep, ep_task = episode_members(samples)
    n = len(ep_task)
    planners: list[set[str]] = [set() for _ in range(n)]
    for s, e in zip(samples, ep.tolist(), strict=True):
        if s.role == planner_role:
            planners[e].add(s.agent)
    if any(not agents for agents in planners):
        roles = sorted({s.role for s in samples})
        raise ValueError(f"matpo: an episode has no turn of role {planner_role!r} (roles seen: {roles})")
    agent_returns = episode_agent_returns(samples, ep, n)
    scores = np.array([np.mean([agent_returns[e][a] for a in planners[e]]) for e in range(n)])
    sizes = np.bincount(ep, minlength=n)
    weights = (len(samples) / n) / sizes[ep] if n else np.ones(0)
    return advantage_result(
        normalize_in_groups(scores, ep_task, scale)[ep], group_stats(ep_task, scores), weights
    )


def _tree_leaves(samples: Sequence[Turn], idx: list[int], r: np.ndarray) -> list[tuple[float, list[int]]]:
    """(path return, samples on the root-to-leaf path) for every leaf of one tree."""
    if all(samples[i].tree_node == () and samples[i].candidate == 0 for i in idx):
        return [(float(sum(r[i] for i in idx if samples[i].selected)), idx)]  # plain episode: one path
    node: dict[tuple[int, ...], int] = {}
    for i in idx:
        path = (*samples[i].tree_node, samples[i].candidate)
        if path in node:
            raise ValueError(
                f"tree: two samples at node path {path} of {samples[i].task} tree {samples[i].episode}"
            )
        node[path] = i
    inner = {samples[i].tree_node[:m] for i in idx for m in range(1, len(samples[i].tree_node) + 1)}
    leaves = []
    for path, i in node.items():
        if path in inner:
            continue
        try:
            on_path = [node[path[:m]] for m in range(1, len(path) + 1)]
        except KeyError as missing:
            raise ValueError(f"tree: node {path} of {samples[i].task} lacks ancestor {missing}") from None
        leaves.append((float(r[on_path].sum()), on_path))
    return leaves


def tree(samples: Sequence[Turn], *, scale: str = "group") -> AdvantageResult:
    """Tree-GRPO: A = A_inter + A_intra over leaves, then from leaves to every node.

    A tree is the samples with equal (task, episode). A node's path is ``tree_node + (candidate,)``;
    a leaf is a node no other node descends from; its value is its path return (the rewards of the
    selected ancestors on its path plus its own). A plain rollout (all ``tree_node == ()`` and
    ``candidate == 0``) is a one-path tree: one leaf, its value the episode return.

    A_inter normalises the leaf values over all leaves of the task, A_intra over the leaves of the
    same tree (``scale`` for both). A leaf gets A_inter + A_intra; an inner node gets the mean of
    that over the leaves below it (a trajectory-level loss counts a shared prefix once per leaf;
    the mean keeps its advantage on the leaves' scale). On plain rollouts A_intra = 0 and ``tree``
    equals ``grpo``. In AT-GRPO trees the unselected candidates are leaves whose paths stop early,
    so their returns count fewer turns than the full path: prefer ``at_grpo`` for those.

    Raises:
        ValueError: Two samples share a node, or a node's ancestor is missing.
    """
    r = sample_rewards(samples)
    trees: dict[tuple[Hashable, int], list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        trees[(s.task, s.episode)].append(i)
    values, tasks, tree_keys, paths = [], [], [], []
    for key, idx in trees.items():
        for value, on_path in _tree_leaves(samples, idx, r):
            values.append(value)
            tasks.append(key[0])
            tree_keys.append(key)
            paths.append(on_path)
    leaf_adv = normalize_in_groups(values, tasks, scale) + normalize_in_groups(values, tree_keys, scale)
    total, count = np.zeros(len(samples)), np.zeros(len(samples))
    for a, on_path in zip(leaf_adv, paths, strict=True):
        total[on_path] += a
        count[on_path] += 1
    return advantage_result(
        total / np.maximum(count, 1),
        {
            "num_leaves": len(values),
            **prefixed("inter", group_stats(tasks, values)),
            **prefixed("intra", group_stats(tree_keys, values)),
        },
    )


# ---------------------------------------------------------------------------- the registry
register_estimator("grpo", grpo)
register_estimator("rloo", rloo, scale_option=None)  # A = r - mean of the others, never std-scaled
# A tree node's K candidates are the group: plain rollouts give singletons, hence A = 0.
register_estimator("at_grpo", at_grpo, rollouts=("tree",))
register_estimator("per_agent", per_agent)
register_estimator(
    "gigpo",
    gigpo,
    rollouts=("plain",),
    scale_option="norm",
    scale_values={scale: norm for norm, scale in _GIGPO_NORMS.items()},
)
register_estimator("matpo", matpo, rollouts=("plain",), role_option="planner_role")
register_estimator("tree", tree)
# Episode returns against a per-seat moving baseline: meaningful on whole episodes (plain rollouts).
register_estimator("rae", rae, rollouts=("plain",), scale_option=None)


def compute_advantages(samples: Sequence[Turn], estimator: str, **options: object) -> AdvantageResult:
    """Run the estimator registered as ``estimator`` on ``samples`` with keyword ``options``.

    Raises:
        KeyError: Unknown estimator name (the message lists the valid ones).
        TypeError: An option the estimator does not take (named in the message).
        ValueError: An option value outside its choices.
    """
    try:
        spec = ADVANTAGE_ESTIMATORS[estimator]
    except KeyError:
        raise KeyError(
            f"unknown advantage estimator {estimator!r}; valid: {', '.join(ADVANTAGE_ESTIMATORS)}"
        ) from None
    unknown = sorted(set(options) - set(spec.options) - ({STATE_KEYWORD} if spec.stateful else set()))
    if unknown:
        raise TypeError(
            f"advantage estimator {estimator!r} got unknown option(s) {unknown}; "
            f"accepted: {list(spec.options)}"
        )
    return spec.fn(samples, **options)
