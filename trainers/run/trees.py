"""AT-GRPO trees as JSON lines, for the run report (``trainers.run.report``): which of the K
candidates at each node won, and by how much.

A training run with tree rollouts writes ``trees/train_step_<step:06d>.jsonl`` for every step,
one line per recorded task (the step's first ``report_trees`` tasks)::

    {"task": {"env_id": "plan_path-v1", "split": "train", "seed": 12},
     "nodes": [{"turn": 0, "agent": "planner_0", "role": "planner", "path": [],
                "prompt": "...", "zero_variance": false,
                "candidates": [{"k": 0, "response": "<answer>R D", "reward": 0.4,
                                "advantage": 1.2, "invalid": false, "selected": true,
                                "feedback": "...", "reward_terms": {...},
                                "finish_reason": "stop"}, ...]}, ...]}

``path`` is the node's tree path (the candidate indices selected before it). A node's K
candidates are its AT-GRPO group (docs/algorithms.md section 2); ``zero_variance`` marks a group
whose rewards are all equal: every advantage is 0 and the node teaches nothing.
Plain rollouts (GRPO, GiGPO, MATPO) have no trees: nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from trainers.records import Turn
from trainers.run.files import atomic_write_text, read_jsonl

__all__ = ["TREES_DIR", "tree_records", "write_trees", "read_trees", "drop_trees_after"]

TREES_DIR = "trees"
_TREE_FILE = re.compile(r"train_step_(\d+)\.jsonl")


def tree_records(samples: Sequence[Turn], advantages: Sequence[float], tasks: int) -> list[dict]:
    """The trees of the first ``tasks`` tasks (in sample order) of a tree rollout's samples,
    each node with its candidates; ``advantages`` align with ``samples``. Samples of plain
    rollouts (no tree paths, one candidate per node) give no trees."""
    if len(samples) != len(advantages):
        raise ValueError(f"{len(samples)} samples but {len(advantages)} advantages")
    trees: dict = {}
    for turn, advantage in zip(samples, advantages, strict=True):
        if turn.task not in trees:
            if len(trees) == tasks:
                continue
            trees[turn.task] = {}
        node = (turn.episode, turn.turn, turn.step, turn.agent, turn.tree_node)
        trees[turn.task].setdefault(node, []).append((turn, float(advantage)))
    records = []
    for task, nodes in trees.items():
        if not any(len(candidates) > 1 or key[4] for key, candidates in nodes.items()):
            continue  # a plain rollout's turns: no tree
        records.append(
            {
                "task": {"env_id": task.env_id, "split": task.split, "seed": task.seed},
                "nodes": [_node_json(candidates) for candidates in nodes.values()],
            }
        )
    return records


def _node_json(candidates: list[tuple[Turn, float]]) -> dict:
    first = candidates[0][0]
    rewards = {turn.reward for turn, _ in candidates}
    return {
        "turn": first.turn,
        "agent": first.agent,
        "role": first.role,
        "path": list(first.tree_node),
        "prompt": first.prompt,
        "zero_variance": len(candidates) > 1 and len(rewards) == 1,
        "candidates": [
            {
                "k": turn.candidate,
                "response": turn.response,
                "reward": float(turn.reward),
                "advantage": advantage,
                "invalid": bool(turn.invalid),
                "selected": bool(turn.selected),
                "feedback": turn.feedback,
                "reward_terms": {name: float(value) for name, value in turn.reward_terms.items()},
                "finish_reason": turn.finish_reason,
            }
            for turn, advantage in candidates
        ],
    }


def write_trees(
    run_dir: str | Path, step: int, samples: Sequence[Turn], advantages: Sequence[float], tasks: int
) -> Path | None:
    """Writes ``trees/train_step_<step:06d>.jsonl`` (atomically); None when there is no tree
    to write (plain rollouts, or ``tasks`` 0)."""
    records = tree_records(samples, advantages, tasks) if tasks > 0 else []
    if not records:
        return None
    path = Path(run_dir) / TREES_DIR / f"train_step_{step:06d}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


def read_trees(run_dir: str | Path) -> dict[int, list[dict]]:
    """Step -> the recorded trees of that step (lines a kill cut short are skipped)."""
    folder = Path(run_dir) / TREES_DIR
    found: dict[int, list[dict]] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.iterdir()):
        match = _TREE_FILE.fullmatch(path.name)
        if not match:
            continue
        trees = [tree for tree in read_jsonl(path) if isinstance(tree.get("nodes"), list)]
        found[int(match.group(1))] = trees
    return found


def drop_trees_after(run_dir: str | Path, step: int) -> None:
    """Deletes the tree files of steps after ``step`` (a resumed run redoes those steps)."""
    folder = Path(run_dir) / TREES_DIR
    if folder.is_dir():
        for path in folder.iterdir():
            match = _TREE_FILE.fullmatch(path.name)
            if match and int(match.group(1)) > step:
                path.unlink()
