"""Advantage estimators (docs/algorithms.md sections 1-9): one grouping engine, eight estimators.

The array layer (group ids, in-group normalisation, leave-one-out, discounted returns, group
diagnostics) lives in ``trainers.grouping`` and is re-exported here. This module holds estimators over
the training samples (``Sequence[Turn]``) that build group keys from ``Turn`` fields and return an
:class:`AdvantageResult` (one advantage and one loss weight per sample, in input order), registered
in :data:`ADVANTAGE_ESTIMATORS` and called by name through :func:`compute_advantages` (the contract
and the registry live in ``trainers.estimator_registry``; both are re-exported here).

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
from collections.abc import Callable, Hashable, Mapping, Sequence

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
from trainers.records import Turn

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


def _result(
    adv: np.ndarray, diagnostics: dict[str, float | dict], weights: np.ndarray | None = None
) -> AdvantageResult:
    adv = np.asarray(adv, dtype=np.float64)
    w = np.ones_like(adv) if weights is None else np.asarray(weights, dtype=np.float64)
    return AdvantageResult(adv, w, {"num_samples": len(adv), **diagnostics})


def _prefixed(prefix: str, stats: dict[str, float | dict]) -> dict[str, float | dict]:
    return {f"{prefix}/{k}": v for k, v in stats.items()}


def _rewards(samples: Sequence[Turn]) -> np.ndarray:
    return np.array([float(s.reward) for s in samples], dtype=np.float64)


def _members(
    samples: Sequence[Turn], member: Callable[[Turn], Hashable], group: Callable[[Turn], Hashable]
) -> tuple[np.ndarray, np.ndarray]:
    """Members made of several samples (an episode, an agent's part of one): the member id of
    every sample and the group id of every member."""
    of_sample = group_ids([member(s) for s in samples])
    group_of: list[Hashable] = [None] * (int(of_sample.max()) + 1 if len(of_sample) else 0)
    for s, m in zip(samples, of_sample.tolist(), strict=True):
        group_of[m] = group(s)
    return of_sample, group_ids(group_of)


def _member_sums(samples: Sequence[Turn], values: np.ndarray, of_sample: np.ndarray, n: int) -> np.ndarray:
    """Sum of ``values`` over the selected samples of each member (the path return)."""
    selected = np.array([s.selected for s in samples], dtype=np.float64)
    return np.bincount(of_sample, weights=values * selected, minlength=n)


def _episodes(samples: Sequence[Turn]) -> tuple[np.ndarray, np.ndarray]:
    return _members(samples, lambda s: (s.task, s.episode), lambda s: s.task)


def _agent_returns(samples: Sequence[Turn], episode_of: np.ndarray, n: int) -> list[dict[str, float]]:
    """Per episode, the return of every agent that acts in it: the sum over the selected samples
    of what each step paid that agent (``Turn.reward_of``), i.e. ``Episode.returns[agent]``."""
    returns: list[dict[str, float]] = [{} for _ in range(n)]
    for s, e in zip(samples, episode_of.tolist(), strict=True):
        returns[e][s.agent] = 0.0
    for s, e in zip(samples, episode_of.tolist(), strict=True):
        if s.selected:
            for agent in returns[e]:
                returns[e][agent] += s.reward_of(agent)
    return returns


def grpo(samples: Sequence[Turn], *, scale: str = "group") -> AdvantageResult:
    """Single-agent GRPO baseline: group key (task) over whole episodes.

    R_i = sum of the rewards of episode i, A_i = normalize_in_groups(R, task, scale) over the
    episodes of the task (one value per episode), broadcast to every sample of episode i. K = 2
    episodes per task with ``scale="group"`` is 2-GRPO: A = +-1 (0 if R_1 = R_2) up to eps.
    """
    ep, ep_task = _episodes(samples)
    returns = _member_sums(samples, _rewards(samples), ep, len(ep_task))
    return _result(normalize_in_groups(returns, ep_task, scale)[ep], group_stats(ep_task, returns))


def rloo(samples: Sequence[Turn]) -> AdvantageResult:
    """RLOO over the episodes of a task: A_i = R_i - mean_{j != i} R_j = K/(K-1) (R_i - mean R),
    R_i the episode return, broadcast to every sample of episode i. One episode -> 0."""
    ep, ep_task = _episodes(samples)
    returns = _member_sums(samples, _rewards(samples), ep, len(ep_task))
    return _result(rloo_in_groups(returns, ep_task)[ep], group_stats(ep_task, returns))


def at_grpo(samples: Sequence[Turn], *, scale: str = "group") -> AdvantageResult:
    """AT-GRPO: the K candidates of one tree node, normalised by their own ``Turn.reward``.

    Group key (task, episode, tree_node, turn, agent): the candidates that answered the same prompt.
    With one tree per task (``episode`` constant, and ``tree_node`` fixed by (turn, agent) along
    the one selected path) this is the (task, turn, agent) of docs/algorithms.md section 2; ``episode`` and
    ``tree_node`` only keep several trees of one task apart. Plain rollouts (one candidate per
    node) give singleton groups, hence A = 0: AT-GRPO needs tree rollouts with K >= 2.
    """
    ids = group_ids([(s.task, s.episode, s.tree_node, s.turn, s.agent) for s in samples])
    r = _rewards(samples)
    return _result(normalize_in_groups(r, ids, scale), group_stats(ids, r))


def per_agent(samples: Sequence[Turn], *, scale: str = "group", base: str = "turn") -> AdvantageResult:
    """Dr. MAS agent-wise normalisation: group key (task, agent), A = (R - mu_agent)/(sigma_agent + eps).

    ``base="turn"``: members are the agent's samples in the task, R = ``Turn.reward``.
    ``base="episode"``: members are the agent's episodes in the task (one value per
    (task, episode, agent)), R = ``Episode.returns[agent]``: everything the episode's executed path
    paid the agent, its own turns' rewards and the team terms paid on other agents' turns (the
    Dr. MAS paper's per-agent return), broadcast to the agent's samples of that episode.
    """
    check_choice("base", base, ("turn", "episode"))
    r = _rewards(samples)
    if base == "turn":
        ids = group_ids([(s.task, s.agent) for s in samples])
        return _result(normalize_in_groups(r, ids, scale), group_stats(ids, r))
    ep, ep_task = _episodes(samples)
    agent_returns = _agent_returns(samples, ep, len(ep_task))
    member, groups = _members(samples, lambda s: (s.task, s.episode, s.agent), lambda s: (s.task, s.agent))
    returns = np.zeros(len(groups))
    for s, e, m in zip(samples, ep.tolist(), member.tolist(), strict=True):
        returns[m] = agent_returns[e][s.agent]
    return _result(normalize_in_groups(returns, groups, scale)[member], group_stats(groups, returns))


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
    r = _rewards(samples) - invalid_penalty * np.array([s.invalid for s in samples], dtype=np.float64)
    ep, ep_task = _episodes(samples)
    returns = _member_sums(samples, r, ep, len(ep_task))
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
    return _result(
        adv_episode + omega * adv_step,
        {**_prefixed("episode", episode_diag), **_prefixed("anchor", group_stats(anchors, to_go))},
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
    ep, ep_task = _episodes(samples)
    n = len(ep_task)
    planners: list[set[str]] = [set() for _ in range(n)]
    for s, e in zip(samples, ep.tolist(), strict=True):
        if s.role == planner_role:
            planners[e].add(s.agent)
    if any(not agents for agents in planners):
        roles = sorted({s.role for s in samples})
        raise ValueError(f"matpo: an episode has no turn of role {planner_role!r} (roles seen: {roles})")
    agent_returns = _agent_returns(samples, ep, n)
    scores = np.array([np.mean([agent_returns[e][a] for a in planners[e]]) for e in range(n)])
    sizes = np.bincount(ep, minlength=n)
    weights = (len(samples) / n) / sizes[ep] if n else np.ones(0)
    return _result(normalize_in_groups(scores, ep_task, scale)[ep], group_stats(ep_task, scores), weights)


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
    r = _rewards(samples)
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
    return _result(
        total / np.maximum(count, 1),
        {
            "num_leaves": len(values),
            **_prefixed("inter", group_stats(tasks, values)),
            **_prefixed("intra", group_stats(tree_keys, values)),
        },
    )


# ---------------------------------------------------------------------------- the registry
def rae(
    samples: Sequence[Turn], *, decay: float = 0.95, debias: bool = True, state: Mapping | None = None
) -> AdvantageResult:
    """Role-conditioned advantage estimation (SPIRAL's RAE) for self-play: a baseline per seat.

    Every sample an agent played in an episode gets ``A = R - b``: ``R`` is that agent's return
    in the episode (``Episode.returns[agent]``) and ``b`` the exponential moving average of the
    returns of ``(env, agent)`` so far, read before this batch updates it. After the batch, each
    key's average moves once towards the batch's mean return of that key:
    ``m <- decay * m + (1 - decay) * mean``, from ``m = 0``. No std scaling (SPIRAL's).
    Seats have different expected returns (X's first-move edge, Kuhn's second-player edge),
    and a shared-policy baseline would credit a seat for where it sits; per-seat baselines do
    not, and unlike a group mean they need no K episodes of the same task.

    ``debias`` (default): the baseline is the average without its pull towards the zero it
    starts from, ``b = m / (1 - decay ** n)`` after ``n`` batches (Adam's bias correction: a
    weighted mean of the past batch means), and a seat's first batch is measured against that
    batch's own mean return of the seat. Why: at decay 0.95, ``m`` is still 74% zero after 6
    batches, so a short run's advantages are its raw returns (all negative while the policy
    loses): under it, 6 steps against random failed the tic-tac-toe CI learning test. ``debias=False``
    is SPIRAL's zero-started baseline (``b = m``).

    ``state``: ``{"baselines": {"<env id>|<agent>": m}, "batches": {key: n}}`` from the previous
    call (``AdvantageResult.state``); None: no history. A state without ``batches`` (saved
    before ``debias`` existed) continues as ``debias=False``, so an old run resumes exactly.
    Diagnostics: ``rae/<env>|<agent>``, the baselines after the update.

    Raises:
        ValueError: ``decay`` outside [0, 1).
    """
    if not 0.0 <= decay < 1.0:
        raise ValueError(f"rae: decay must be in [0, 1), got {decay!r}")
    state = dict(state or {})
    averages = {str(k): float(v) for k, v in dict(state.get("baselines", {})).items()}
    batches = {str(k): int(v) for k, v in dict(state.get("batches", {})).items()}
    debias = debias and ("batches" in state or not averages)  # a state from before debias: as then
    ep, _ = _episodes(samples)
    n = int(ep.max()) + 1 if len(ep) else 0
    agent_returns = _agent_returns(samples, ep, n)
    episode_key = [None] * n
    for s, e in zip(samples, ep.tolist(), strict=True):
        episode_key[e] = s.task.env_id
    batch: dict[str, list[float]] = defaultdict(list)
    for e in range(n):
        for agent, value in agent_returns[e].items():
            batch[f"{episode_key[e]}|{agent}"].append(value)
    batch_mean = {key: float(np.mean(values)) for key, values in batch.items()}

    def baseline(key: str) -> float:
        if not debias:
            return averages.get(key, 0.0)
        if batches.get(key, 0) == 0:
            return batch_mean[key]  # no history: this batch's mean return of the seat
        return averages[key] / (1.0 - decay ** batches[key])

    advantages = np.array(
        [
            agent_returns[e][s.agent] - baseline(f"{episode_key[e]}|{s.agent}")
            for s, e in zip(samples, ep.tolist(), strict=True)
        ],
        dtype=np.float64,
    )
    for key, mean in batch_mean.items():
        averages[key] = decay * averages.get(key, 0.0) + (1.0 - decay) * mean
        batches[key] = batches.get(key, 0) + 1
    diagnostics = {f"rae/{key}": baseline(key) for key in sorted(averages)}
    result = _result(advantages, diagnostics)
    new_state = {"baselines": averages, "batches": batches} if debias else {"baselines": averages}
    return AdvantageResult(result.advantages, result.weights, result.diagnostics, new_state)


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
