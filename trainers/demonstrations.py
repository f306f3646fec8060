"""Demonstrations for the supervised warm start (``trainers.sft``): the env's exact solver
playing every role, recorded exactly as a rollout of the model would record it.

``oracle_demonstrations(team, tasks)`` plays each task once with every role answered by
the env's oracle (``env.oracle_response(agent)``), through ``trainers.rollout.plain_rollout``
and the team's own bindings. So each demonstration ``Turn`` carries the prompt tokens the
trained policy would see (chat template, system prompt, response prefix) and the reply
tokens it would have to sample (the oracle's text after the response prefix, tokenized
like a generation, through the stop string, and cut at the role's token budget as a sampler
would cut it), and ``Turn.policy`` names the unit that must learn it. Only episodes the oracle
solved are kept: one fails when a level needs more moves than the episode horizon allows, or
when a reply cut at its budget no longer solves the turn (code's reference solutions run to
thousands of tokens; a policy that writes 192 could never produce them, and learning from
them once cost a warm start 10 GB of logits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from agents.base import Generation, Prompt, SamplingParams, as_prompt
from agents.team import RoleBinding, Team
from trainers.records import Episode, RecordedEpisode, TaskKey, Turn
from trainers.rollout import plain_rollout, role_sampling_for

__all__ = [
    "Demonstrations",
    "OracleDemonstrator",
    "ReplayDemonstrator",
    "ReplayMismatch",
    "oracle_demonstrations",
    "replayed_demonstrations",
]


# A warm start holds every demonstration's prompt tokens at once (WebShop's preset: 8.1 M
# tokens in 20,212 turns), and a token id above 256 is its own ~32-byte int object in each
# tuple that holds it: +267 MB measured there, for ids a 49k-token vocabulary repeats
# endlessly. Tuples that point into one shared set of int objects keep only their 8-byte slots.
_SHARED_IDS: dict[int, int] = {}


def _shared(ids: Sequence[int]) -> tuple[int, ...]:
    return tuple([_SHARED_IDS.setdefault(i, i) for i in ids])


# No token budget: a reply is demonstrated whole (max_new_tokens=None).
_UNBOUNDED = 1 << 30


class Demonstrations(NamedTuple):
    """The turns of the solved episodes, how many episodes failed, and how many of those had a
    reply cut at its token budget (the rest ran out of moves within the horizon)."""

    turns: list[Turn]
    failed: int
    over_budget: int


class _Demonstrator:
    """A policy that answers scripted text, as tokens of ``policy`` (subclasses say what text).

    It carries the model policy's name, so the turns it produces are routed to the units
    that train that policy. The reply is the scripted text minus the role's response prefix
    (a newline and all of it when it does not start with the prefix); its tokens run through the first stop
    string (as a sampler's would), or end with the end-of-sequence token when the text holds
    none; past the sampling's ``max_new_tokens`` they are cut, finish reason ``length``, the
    text their decoding (as a generation that ran out of budget). Logprobs are zero (never used: the
    supervised loss needs no pi_old).

    Args:
        policy: The ``agents.hf.HFPolicy`` being trained (its tokenizer and prompt rendering).
        stop: The stop strings rollouts use.
    """

    def __init__(self, policy: Any, stop: Sequence[str] = ()) -> None:
        self.policy = policy
        self.name = policy.name
        self.adapter_names = tuple(getattr(policy, "adapter_names", ()))  # bound like the policy
        self.stop = tuple(stop)

    def _text(self, prompt: Prompt) -> str:
        """The whole reply to ``prompt``, response prefix included."""
        raise NotImplementedError

    def _reply(self, prompt: Prompt, max_new_tokens: int) -> Generation:
        text = self._text(prompt)
        # An answer that does not start with the prefix (math's and code's oracles write a bare
        # \boxed{} or a code block) is demonstrated on the line after it, as a sampled reply
        # could be (a code fence must start a line): the env then judges prefix + reply, and an
        # episode it does not solve is dropped.
        reply = text[len(prompt.prefix) :] if text.startswith(prompt.prefix) else "\n" + text
        tokenizer = self.policy.tokenizer
        found = [(reply.find(s), s) for s in self.stop if s and s in reply]
        if found:
            start, stop = min(found)  # the first stop string ends the reply
            token_ids = tokenizer(reply[: start + len(stop)], add_special_tokens=False)["input_ids"]
            shown, reason = reply[:start], "stop"
        else:
            token_ids = tokenizer(reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            shown, reason = reply, "eos"
        if len(token_ids) > max_new_tokens:
            token_ids = token_ids[:max_new_tokens]
            shown, reason = tokenizer.decode(token_ids, skip_special_tokens=True), "length"
        return Generation(
            text=shown,
            prompt_token_ids=_shared(self.policy.prompt_token_ids(prompt)),
            token_ids=_shared(token_ids),
            logprobs=(0.0,) * len(token_ids),
            finish_reason=reason,
        )

    def generate(
        self,
        prompts: Sequence[str | Prompt],
        *,
        num_samples: int = 1,
        sampling: SamplingParams | None = None,
        adapter: str | None = None,
    ) -> list[list[Generation]]:
        budget = sampling.max_new_tokens if sampling is not None else _UNBOUNDED
        return [[self._reply(as_prompt(p), budget)] * num_samples for p in prompts]


class OracleDemonstrator(_Demonstrator):
    """Answers what the env's exact solver answers (``env.oracle_response(agent)``)."""

    def _text(self, prompt: Prompt) -> str:
        env = prompt.env
        if env is None or not callable(getattr(env, "oracle_response", None)):
            raise TypeError(
                f"{type(env).__name__} has no exact solver (oracle_response), so it cannot make "
                "demonstrations; use the successful episodes of a training run instead "
                "(python -m trainers.sft --demos runs/<run>)"
            )
        return env.oracle_response(prompt.agent)


class ReplayMismatch(Exception):
    """The env asked for a reply the recorded episode does not hold (another agent, or a
    turn past its end): the env or its version changed since the episode was played."""


class ReplayDemonstrator(_Demonstrator):
    """Answers one recorded episode's replies in order (the env's ``num_steps`` is the index).

    A reply that ended at a stop string, or was cut at the token budget, is demonstrated
    through the first stop string, so the model learns to end its answer there; one that
    ended with the end-of-sequence token ends with it again."""

    def __init__(self, policy: Any, episode: RecordedEpisode, stop: Sequence[str] = ()) -> None:
        super().__init__(policy, stop)
        self.episode = episode

    def _text(self, prompt: Prompt) -> str:
        index = prompt.env.num_steps
        turns = self.episode.turns
        if index >= len(turns) or turns[index].agent != prompt.agent:
            recorded = turns[index].agent if index < len(turns) else "the end of the episode"
            raise ReplayMismatch(f"turn {index}: the env asks {prompt.agent}, the record has {recorded}")
        turn = turns[index]
        ends_at_stop = turn.finish_reason != "eos" and self.stop and self.stop[0]
        return turn.response + (self.stop[0] if ends_at_stop else "")


def demonstrator_team(team: Team, demonstrator: Callable[[Any], _Demonstrator]) -> Team:
    """``team`` with every model role answered by ``demonstrator(policy)``, bindings otherwise
    unchanged."""
    bindings = {
        role: RoleBinding(demonstrator(b.policy), b.adapter, b.system_prompt, b.response_prefix)
        for role, b in team.bindings.items()
    }
    return Team(team.roles, bindings)


def _play_scripted(
    team: Team,
    tasks: Sequence[TaskKey],
    demonstrator: Callable[[Any], _Demonstrator],
    stop: Sequence[str],
    env_kwargs: Mapping[str, Any] | None,
    max_new_tokens: int | None,
    role_max_new_tokens: Mapping[str, int] | None,
) -> list[Episode]:
    """One episode per task with every model role of ``team`` answered by ``demonstrator``,
    each role's replies cut at its token budget (None: whole)."""
    sampling = SamplingParams(temperature=0.0, stop=tuple(stop), max_new_tokens=max_new_tokens or _UNBOUNDED)
    batch = plain_rollout(
        tasks,
        demonstrator_team(team, demonstrator),
        episodes_per_task=1,
        sampling=sampling,
        env_kwargs=env_kwargs,
        role_sampling=role_sampling_for(sampling, {}, role_max_new_tokens or {}),
    )
    return list(batch.episodes)


def _over_budget(episode: Episode) -> bool:
    return any(turn.finish_reason == "length" for turn in episode.turns)


def oracle_demonstrations(
    team: Team,
    tasks: Sequence[TaskKey],
    *,
    stop: Sequence[str] = ("</answer>",),
    env_kwargs: Mapping[str, Any] | None = None,
    max_new_tokens: int | None = None,
    role_max_new_tokens: Mapping[str, int] | None = None,
) -> Demonstrations:
    """Every turn of the oracle's solved episodes on ``tasks``, and how many episodes failed.

    ``env_kwargs`` must name the team variant (``team="mas"``) the ``team`` plays;
    ``max_new_tokens`` / ``role_max_new_tokens`` are the rollouts' reply budgets (None: whole
    replies)."""
    oracle = lambda policy: OracleDemonstrator(policy, stop)  # noqa: E731
    episodes = _play_scripted(team, tasks, oracle, stop, env_kwargs, max_new_tokens, role_max_new_tokens)
    turns = [turn for episode in episodes if episode.success for turn in episode.turns]
    failed = [episode for episode in episodes if not episode.success]
    return Demonstrations(turns, len(failed), sum(map(_over_budget, failed)))


def replayed_demonstrations(
    team: Team,
    episodes: Sequence[RecordedEpisode],
    *,
    stop: Sequence[str] = ("</answer>",),
    env_kwargs: Mapping[str, Any] | None = None,
) -> Demonstrations:
    """Every turn of ``episodes`` replayed in the env, and how many did not replay.

    Each recorded episode is played again on its task with its own replies, through the
    rollout code and ``team``'s bindings, so the turns carry the prompts this team renders
    now. An episode is kept only when the replay reproduces it and the env reports it solved
    again; one whose replies no longer fit the env (another version, other ``env_kwargs``)
    is counted as not replayed. ``env_kwargs`` must name the team variant the episodes were
    played by (``team="mas"``). No budget is applied: the replies were sampled within their
    run's, and a reply cut there is demonstrated through the stop string (one token past it)."""
    turns: list[Turn] = []
    failed = 0
    for recorded in episodes:
        try:
            replay = lambda policy, r=recorded: ReplayDemonstrator(policy, r, stop)  # noqa: E731
            (episode,) = _play_scripted(team, [recorded.task], replay, stop, env_kwargs, None, None)
        except ReplayMismatch:
            failed += 1
            continue
        if episode.success and episode.length == len(recorded.turns):
            turns += episode.turns
        else:
            failed += 1
    return Demonstrations(turns, failed, 0)
