"""Game metrics that need more than played episodes: a team's policy asked directly at
chosen game states.

``GAME_PROBES`` maps an env's ``metadata["name"]`` to a probe ``(team, env, task_seeds,
sampling, samples) -> metrics``; ``benchmarks.evaluate`` adds those metrics to the cells of
that env (per seed, over that seed's held-out tasks, like every other metric). ``env`` is a
test-split env; a probe resets it to each task seed, works on clones and plays no episode.

* Kuhn poker (``kuhn_poker_v0``): the policy of the ``first`` seat is asked at each of the
  12 information sets, once per task and ``samples`` replies each (parsed by the env
  itself, so an invalid reply counts as the pass it forces; a scripted policy that mixes
  by a per-task draw, like the Nash oracle, is averaged over the tasks). The resulting
  table of bet probabilities gives ``exploitability`` (exact: what a best response wins
  per hand, averaged over the two positions; Nash 0, always-bet 0.333, uniform 0.458) and
  ``chips_vs_nash`` (exact expected chips per hand against the Nash policy, half the hands
  as opener; Nash itself 0). Greedy sampling (the evaluation default) probes the greedy
  policy: a table of 0s and 1s for a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agents.base import SamplingParams
from agents.team import Team
from envs.games.kuhn_poker import game as kuhn

__all__ = ["GAME_PROBES", "kuhn_policy_table", "kuhn_metrics"]


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
    groups = binding.policy.generate(prompts, num_samples=samples, sampling=sampling, adapter=binding.adapter)
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


def kuhn_metrics(
    team: Team, env: Any, task_seeds: Sequence[int], sampling: SamplingParams | None, samples: int
) -> dict[str, float]:
    table, invalid = kuhn_policy_table(team, env, task_seeds, sampling, samples)
    return {
        "exploitability": kuhn.exploitability(table),
        "chips_vs_nash": kuhn.seat_averaged_value(table, kuhn.nash_table()),
        "probe_invalid_rate": invalid,
    }


Probe = Callable[[Team, Any, Sequence[int], SamplingParams | None, int], dict[str, float]]
GAME_PROBES: dict[str, Probe] = {
    "kuhn_poker_v0": kuhn_metrics,
}
