"""Game metrics that need more than played episodes: a team's policy asked directly at
chosen game states.

``GAME_PROBES`` maps an env's registered name (its id without the version) to a probe
``(team, env, task_seeds, sampling, samples, episodes) -> metrics``; ``benchmarks.evaluate``
adds those metrics to the cells of that env (per seed, over that seed's held-out tasks and the
episodes it played, like every other metric). ``env`` is a test-split env the probe may reset and step.

* Kuhn poker (``kuhn_poker_v0``): the policy of the ``first`` seat is asked at each of the
  12 information sets, once per task and ``samples`` replies each (parsed by the env
  itself, so an invalid reply counts as the pass it forces; a scripted policy that mixes
  by a per-task draw, like the Nash oracle, is averaged over the tasks). The resulting
  table of bet probabilities gives ``exploitability`` (exact: what a best response wins
  per hand, averaged over the two positions; Nash 0, always-bet 0.333, uniform 0.458) and
  ``chips_vs_nash`` (exact expected chips per hand against the Nash policy, half the hands
  as opener; Nash itself 0). Greedy sampling (the evaluation default) probes the greedy
  policy: a table of 0s and 1s for a model.
* Everyone Contributes (``everyone_contributes_v0``): the played episodes are replayed on
  ``env`` (deterministic given the task and the replies) to read the contributions:
  ``contribution_rate`` (mean share of the endowment given), ``welfare_ratio`` (the sum of
  payoffs over the SPNE's, full contribution) and ``free_rider_gain`` (what the best
  unilateral free-rider gains over full contribution when the others then play the SPNE;
  negative under these rules, a property of the tasks, not of the team).
* Mini Hanabi (``mini_hanabi_v0``): the episodes replayed likewise: ``hanabi_score`` (the
  score over the maximum, 6; a bomb counts 0) and ``bomb_rate``.
* ALFWorld (``alfworld_v0``; not a game, but its metrics come through the same hook):
  ``success/<type>`` per task type (pick, look, clean, heat, cool, pick_two; a type no task
  of the seed drew is absent), ``steps_to_success`` (the actor's commands in won episodes)
  and ``invalid_command_rate`` (the actor's turns that were no admissible command: "Nothing
  happens." or no command at all).
* WebShop (``webshop_v0``): ``score`` (the mean purchase reward x 100, an episode that bought
  nothing scoring 0: the papers' "score"; ``success`` is theirs already, reward == 1.0),
  ``purchase_rate`` (episodes that clicked Buy Now), ``steps`` (the shopper's actions per
  episode) and ``invalid_action_rate`` (its actions that changed nothing). The catalog size and
  goal type go into the results' header (``envs.<column>.settings``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from agents.base import SamplingParams, distinct_prompts, reads_text_only
from agents.team import Team
from envs.games.everyone_contributes import game as public_goods
from envs.games.kuhn_poker import game as kuhn
from trainers.records import Episode

__all__ = [
    "GAME_PROBES",
    "kuhn_policy_table",
    "kuhn_metrics",
    "public_goods_metrics",
    "hanabi_metrics",
    "alfworld_metrics",
    "webshop_metrics",
]


def kuhn_policy_table(
    team: Team,
    env: Any,
    task_seeds: Sequence[int],
    sampling: SamplingParams | None,
    samples: int,
    seat: str = "first_0",
) -> tuple[dict[str, float], float]:
    """(information set -> probability that ``seat``'s policy bets or calls, invalid rate)
    from ``samples`` replies per information set and task, all in one generate call."""
    binding = team.binding(seat)
    states = []
    for task_seed in task_seeds:
        env.reset(seed=task_seed)
        for infoset in kuhn.INFOSETS:
            state = env.clone()
            state.set_information_set(seat, infoset)
            states.append((infoset, state))
    prompts = [team.prompt_for(state, seat) for _, state in states]
    # A greedy model answers an information set alike in every task (its prompt does not show
    # the deal), so each distinct prompt is asked once: 12 prompts instead of 12 per task (256
    # test tasks kept the default model busy for over 40 minutes on 2 cores). Sampled replies and
    # scripted policies (they read the deal: the oracle mixes per deal) are asked per task.
    if sampling is not None and sampling.greedy and reads_text_only(binding.policy):
        asked, slot = distinct_prompts(prompts)
    else:
        asked, slot = prompts, list(range(len(prompts)))
    replies_of = binding.policy.generate(
        asked, num_samples=samples, sampling=sampling, adapter=binding.adapter
    )
    groups = [replies_of[i] for i in slot]
    bets, replies, invalid = dict.fromkeys(kuhn.INFOSETS, 0), dict.fromkeys(kuhn.INFOSETS, 0), 0
    for (infoset, state), group in zip(states, groups, strict=True):
        for generation in group:
            twin = state.clone()
            twin.step(binding.response_prefix + generation.text)
            invalid += bool(twin.infos[seat]["invalid_action"])
            bets[infoset] += twin.last_move_letter == "b"
            replies[infoset] += 1
    table = {infoset: bets[infoset] / replies[infoset] for infoset in kuhn.INFOSETS}
    return table, invalid / sum(replies.values())


def _replayed(env: Any, episodes: Sequence[Episode]) -> Iterator[Any]:
    """``env`` at the end of each episode, replayed from its task seed and recorded replies
    (envs are deterministic given both), to read the game state the records do not hold."""
    for episode in episodes:
        env.reset(seed=episode.task.seed)
        for turn in episode.turns:
            env.step(turn.response)
        yield env


def kuhn_metrics(
    team: Team,
    env: Any,
    task_seeds: Sequence[int],
    sampling: SamplingParams | None,
    samples: int,
    episodes: Sequence[Episode] = (),
) -> dict[str, float]:
    table, invalid = kuhn_policy_table(team, env, task_seeds, sampling, samples)
    return {
        "exploitability": kuhn.exploitability(table),
        "chips_vs_nash": kuhn.seat_averaged_value(table, kuhn.nash_table()),
        "probe_invalid_rate": invalid,
    }


def public_goods_metrics(
    team: Team,
    env: Any,
    task_seeds: Sequence[int],
    sampling: SamplingParams | None,
    samples: int,
    episodes: Sequence[Episode] = (),
) -> dict[str, float]:
    rates, ratios, gains = [], [], []
    for ended in _replayed(env, episodes):
        rules, given = ended.rules, ended.contributions
        full = (rules.endowment,) * rules.players
        gains.append(
            max(
                public_goods.spne_values(rules, full[:player] + (0,))[player] - rules.payoff(full, player)
                for player in range(rules.players)
            )
        )
        if len(given) < rules.players:  # cut off before every player gave
            continue
        rates.append(sum(given) / (rules.endowment * rules.players))
        ratios.append(sum(rules.payoffs(given)) / sum(rules.payoffs(full)))
    metrics = {"free_rider_gain": float(np.mean(gains))} if gains else {}
    if rates:
        metrics.update(contribution_rate=float(np.mean(rates)), welfare_ratio=float(np.mean(ratios)))
    return metrics


def hanabi_metrics(
    team: Team,
    env: Any,
    task_seeds: Sequence[int],
    sampling: SamplingParams | None,
    samples: int,
    episodes: Sequence[Episode] = (),
) -> dict[str, float]:
    scores, bombs = [], []
    for ended in _replayed(env, episodes):
        scores.append(ended.score() / ended.game.max_utility())
        bombs.append(ended.bombed())
    if not scores:
        return {}
    return {"hanabi_score": float(np.mean(scores)), "bomb_rate": float(np.mean(bombs))}


ALFWORLD_TYPE_NAMES = {
    "pick_and_place_simple": "pick",
    "look_at_obj_in_light": "look",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "pick_two",
}


def alfworld_metrics(
    team: Team,
    env: Any,
    task_seeds: Sequence[int],
    sampling: SamplingParams | None,
    samples: int,
    episodes: Sequence[Episode] = (),
) -> dict[str, float]:
    by_type: dict[str, list[bool]] = {}
    steps, actor_turns = [], []
    for episode in episodes:
        env.reset(seed=episode.task.seed)
        name = ALFWORLD_TYPE_NAMES[env.problem.spec.goal.task_type]
        by_type.setdefault(name, []).append(episode.success)
        commands = [turn for turn in episode.turns if turn.role == "actor"]
        actor_turns += [turn.invalid for turn in commands]
        if episode.success:
            steps.append(len(commands))
    metrics = {f"success/{name}": float(np.mean(won)) for name, won in by_type.items()}
    if steps:
        metrics["steps_to_success"] = float(np.mean(steps))
    if actor_turns:
        metrics["invalid_command_rate"] = float(np.mean(actor_turns))
    return metrics


def webshop_metrics(
    team: Team,
    env: Any,
    task_seeds: Sequence[int],
    sampling: SamplingParams | None,
    samples: int,
    episodes: Sequence[Episode] = (),
) -> dict[str, float]:
    scores, bought, steps, invalid = [], [], [], []
    for episode in episodes:
        paid = [t.reward_terms.get("team/score") for t in episode.turns if "team/score" in t.reward_terms]
        scores.append(100.0 * (paid[-1] if paid else 0.0))
        bought.append(bool(paid))
        actions = [turn for turn in episode.turns if turn.role == "shopper"]
        steps.append(len(actions))
        invalid += [turn.invalid for turn in actions]
    if not episodes:
        return {}
    metrics = {
        "score": float(np.mean(scores)),
        "purchase_rate": float(np.mean(bought)),
        "steps": float(np.mean(steps)),
    }
    if invalid:
        metrics["invalid_action_rate"] = float(np.mean(invalid))
    return metrics


Probe = Callable[..., dict[str, float]]
"""``(team, env, task_seeds, sampling, samples, episodes) -> metrics``"""
GAME_PROBES: dict[str, Probe] = {
    "kuhn_poker": kuhn_metrics,
    "everyone_contributes": public_goods_metrics,
    "mini_hanabi": hanabi_metrics,
    "alfworld": alfworld_metrics,
    "webshop": webshop_metrics,
}
