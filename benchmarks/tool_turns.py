"""A tool team's turn in a tree step: K candidate programs on each task's board, run the way a
rollout runs them (``envs.sandbox.memo.prefetch``: the distinct programs of the whole turn
concurrently on the sandbox pool, each duplicate once) next to stepping the K clones of every
task one after another (each step runs its own program), measured side by side in one run.

    python -m benchmarks.tool_turns                      # ~20 s on 2 cores
    python -m benchmarks.tool_turns --env sokoban --tasks 8 --k 8

The candidates mimic a tool agent part-way through training: half of them the env's reference
program (so duplicates, as when a policy has learnt it), the rest distinct programs that print
a guess, crash or print nothing. Both ways step the same clones with the same replies, and the
test asserts they give the same rewards; the table prints runs made, wall seconds, runs/s and
the speed-up (``sequential s / prefetched s``).
"""

from __future__ import annotations

import argparse
import time

import envs
from benchmarks.tables import print_table
from envs.sandbox import memo

WRONG = ('print("U R")', 'raise ValueError("no plan")', "x = 1", 'print("D D L")', "print(input())")


def candidate_replies(env, k: int) -> list[str]:
    """K tool replies: the reference program for half of them, distinct wrong programs for the rest."""
    reference = env.oracle_response("tool_0")
    wrong = [f"```python\n{WRONG[i % len(WRONG)]}  # candidate {i}\n```" for i in range(k)]
    return [reference if i % 2 == 0 else wrong[i] for i in range(k)]


def tool_turn(env_id: str, tasks: int, k: int, prefetched: bool) -> tuple[float, int, list[float]]:
    """(wall seconds, sandbox runs, the tool's rewards) of one tool turn on ``tasks`` fresh boards."""
    memo.forget_all()
    live = []
    for seed in range(tasks):
        env = envs.make(env_id, team="tool")
        env.reset(seed=seed)
        live.append((env, candidate_replies(env, k)))
    before = memo.remembered_stats()["runs"]
    started = time.perf_counter()
    if prefetched:  # what trainers.rollout does before stepping a turn's clones
        memo.prefetch(job for env, replies in live for job in env.sandbox_jobs("tool_0", replies))
    rewards = []
    for env, replies in live:
        for reply in replies:
            if not prefetched:
                memo.forget_all()  # the baseline runs every program, a repeated one again
            branch = env.clone()
            branch.step(reply)
            rewards.append(branch.rewards["tool_0"])
    seconds = time.perf_counter() - started
    return seconds, int(memo.remembered_stats()["runs"] - before), rewards


def measure(env_id: str, tasks: int, k: int) -> list[dict]:
    rows = []
    for name, prefetched in (("one step at a time", False), ("prefetched (rollout)", True)):
        seconds, runs, rewards = tool_turn(env_id, tasks, k, prefetched)
        rows.append({"way": name, "programs": tasks * k, "runs": runs, "s": seconds, "rewards": rewards})
    base, fast = rows
    for row in rows:
        row["runs/s"] = row["runs"] / row["s"]
        row["programs/s"] = row["programs"] / row["s"]
    fast["speed-up"] = base["s"] / fast["s"]
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    summary = (__doc__ or "").split(":")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tool_turns", description=summary)
    parser.add_argument("--env", default="plan_path", help="a planning env with a tool team")
    parser.add_argument("--tasks", type=int, default=4, help="tasks in the turn (default 4: a training step)")
    parser.add_argument("--k", type=int, default=4, help="candidates per task (default 4)")
    args = parser.parse_args(argv)
    rows = measure(args.env, args.tasks, args.k)
    print(f"{args.env}: one tool turn of a tree step, {args.tasks} tasks x K={args.k} candidate programs")
    cells = [
        [row["way"], str(row["programs"]), str(row["runs"]), f"{row['s']:.2f}", f"{row['runs/s']:.1f}"]
        + [f"{row['programs/s']:.1f}", f"{row['speed-up']:.2f}x" if "speed-up" in row else ""]
        for row in rows
    ]
    print_table(["way", "programs", "runs", "s", "runs/s", "programs/s", "speed-up"], cells)
    return rows


if __name__ == "__main__":
    main()
