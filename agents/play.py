"""Watch a team play one episode, turn by turn.

    python -m agents.play --env sokoban --team scripted        # the exact solver, every role
    python -m agents.play --env plan_path --team random --seed 3
    python -m agents.play --env sokoban --team model --max-new-tokens 96

Each turn prints the acting agent, its prompt (indented), its response, the reward terms
and the env's feedback; the end prints success, the total reward per agent and the number
of turns. Teams: ``scripted`` (``OraclePolicy`` for every role), ``random``
(``RandomPolicy``), ``model`` (one shared ``HFPolicy``; ``--model tiny-test`` is the
in-process test model). ``main(argv)`` returns the summary as a dict.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import envs
from agents.base import Generation, SamplingParams
from agents.models import DEFAULT_MODEL
from agents.scripted import OraclePolicy, RandomPolicy
from agents.team import Team

__all__ = ["main", "build_parser", "play_episode"]

TEAMS = ("scripted", "random", "model")
ANSWER_STOP = "</answer>"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m agents.play",
        description="Play one episode of a teamgym env with a team and print every turn.",
    )
    parser.add_argument("--env", default="sokoban", help="registered env id, e.g. sokoban, plan_path, sudoku")
    parser.add_argument(
        "--team",
        choices=TEAMS,
        default="scripted",
        help="who plays: scripted (exact-solver oracle), random (random legal moves) or model (an LLM)",
    )
    parser.add_argument(
        "--difficulty", default=None, help="difficulty preset (easy, medium, hard); default: the env's (easy)"
    )
    parser.add_argument("--seed", type=int, default=0, help="task seed (picks the level) and sampling seed")
    parser.add_argument(
        "--team-variant",
        default="mas",
        help="env team variant: mas (planner + executor) or single (one solver role)",
    )
    parser.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help=f"model for --team model (default {DEFAULT_MODEL}; or tiny-test)",
    )
    parser.add_argument("--max-new-tokens", type=int, default=96, help="most tokens per model response")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (0 = greedy)")
    parser.add_argument("--max-cycles", type=int, default=None, help="turn cycles before truncation")
    parser.add_argument(
        "--response-prefix",
        default="<answer>",
        help="start of every model reply, written into the prompt for the model to continue "
        "(small models then answer in the env's grammar far more often; '' disables it)",
    )
    return parser


def _make_team(args: argparse.Namespace, env: Any) -> Team:
    if args.team == "scripted":
        return Team.shared(env, OraclePolicy())
    if args.team == "random":
        return Team.shared(env, RandomPolicy(seed=args.seed))
    from agents.hf import HFPolicy  # torch is only needed for model play

    return Team.shared(env, HFPolicy(args.model), response_prefix=args.response_prefix)


def _response_text(generation: Generation, sampling: SamplingParams) -> str:
    """The response as the env gets it: a sample cut at the ``</answer>`` stop string gets
    its closing tag back (the parser would accept it without, but the transcript that the
    other roles read stays well-formed)."""
    text = generation.text
    if generation.finish_reason == "stop" and ANSWER_STOP in sampling.stop and not text.endswith(ANSWER_STOP):
        text += ANSWER_STOP
    return text


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix, lambda line: True)


def play_episode(env: Any, team: Team, *, seed: int, sampling: SamplingParams, out=None) -> dict[str, Any]:
    """Play one episode of ``env`` (task ``seed``) with ``team``, printing every turn to ``out``.

    Returns:
        ``{"success": bool, "rewards": {agent: total reward}, "turns": int}``.
    """
    out = out or sys.stdout
    team.check_env(env)
    env.reset(seed=seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    turns = 0
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        turns += 1
        prompt_text = env.observe(agent)["prompt"]
        # A fresh sampling seed per turn: reproducible, but turns do not repeat each other's draws.
        turn_sampling = dataclasses.replace(
            sampling, seed=None if sampling.seed is None else sampling.seed + turns
        )
        generation = team.act(env, agent, sampling=turn_sampling)
        response = _response_text(generation, turn_sampling)
        env.step(response)
        for other, reward in env.rewards.items():
            totals[other] += reward
        info = env.infos[agent]
        print(f"=== turn {turns}: {agent} ({team.binding(agent).policy.name}) ===", file=out)
        print("prompt:", file=out)
        print(_indent(prompt_text), file=out)
        print("response:", file=out)
        print(_indent(response or "(empty)"), file=out)
        terms = ", ".join(f"{k}={v:+.3f}" for k, v in info["reward_terms"].items()) or "(none)"
        print(f"reward: {env.rewards[agent]:+.3f}  terms: {terms}", file=out)
        print(f"feedback: {info['feedback'] or '(none)'}", file=out)
        print(file=out)
    summary = {"success": bool(env.success), "rewards": totals, "turns": turns}
    print("=== episode over ===", file=out)
    print("final state:", file=out)
    print(_indent(env.render() or ""), file=out)
    print(f"success: {summary['success']}", file=out)
    print("total reward: " + ", ".join(f"{a}={r:+.3f}" for a, r in totals.items()), file=out)
    print(f"turns: {turns}", file=out)
    return summary


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse ``argv`` (default ``sys.argv[1:]``), play one episode, return its summary dict
    (``success``, ``rewards`` per agent, ``turns``, plus ``env`` and ``team``). Exits with
    code 2 on an unknown env or a bad env argument."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.max_new_tokens < 1:
        parser.error(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    if args.temperature < 0:
        parser.error(f"--temperature must be >= 0, got {args.temperature}")
    kwargs: dict[str, Any] = {"team": args.team_variant}
    if args.difficulty is not None:
        kwargs["difficulty"] = args.difficulty
    if args.max_cycles is not None:
        kwargs["max_cycles"] = args.max_cycles
    try:
        env = envs.make(args.env, **kwargs)
    except KeyError as err:  # unknown id: the message lists close matches and registered ids
        parser.error(str(err.args[0]) if err.args else str(err))
    except (ValueError, TypeError) as err:  # malformed id, unknown team variant / difficulty
        parser.error(f"cannot make env {args.env!r} with {kwargs}: {err}")
    team = _make_team(args, env)
    sampling = SamplingParams(
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        stop=(ANSWER_STOP,),
        seed=args.seed,
    )
    print(f"env {env.spec.id if env.spec else args.env}, task seed {args.seed}; {team!r}\n")
    summary = play_episode(env, team, seed=args.seed, sampling=sampling)
    return {"env": env.spec.id if env.spec else args.env, "team": args.team, **summary}


if __name__ == "__main__":
    main()
