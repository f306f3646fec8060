"""A held-out test evaluation played in parts that a stop does not lose.

A 256-task test of a tool or household team can take an hour on a CPU; played as one batch,
a stop (Ctrl-C, a session's end, a lost machine) an hour in loses all of it. So the run plays
its test ``PART_TASKS`` tasks at a time and writes each finished part under
``test_parts/step_<step:06d>/``; the resumed run plays only the parts still missing, then logs
the whole test's metrics to test.jsonl and deletes the parts.

A part is only reused for the weights it was played with: the directory records a fingerprint
of them (the step's checkpoint manifest, which holds the weights' sha256; ``initial`` for step
0, whose weights a resume cannot change), and parts of other weights are deleted. A step redone
after a resume from an older checkpoint therefore plays its test again.

A part stores what the test's metrics are computed from: each episode's outcome and each turn's
role, reward, reward terms, validity, reply token ids and finish reason, as JSON (not pickle:
like checkpoints, run files never run code when read). Prompts, log-probabilities and state keys
are left out, so a read-back part gives the metrics exactly but cannot be trained on.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainers.records import Episode, RolloutBatch, TaskKey, Turn
from trainers.run.checkpoint import checkpoint_dir
from trainers.run.checkpoint_files import MANIFEST
from trainers.run.files import atomic_write_text

__all__ = ["PARTS_DIR", "PART_TASKS", "TestParts", "weights_fingerprint"]

PARTS_DIR = "test_parts"
PART_TASKS = 64
"""Tasks per part: the HF policy decodes at most 64 rows together, so a part keeps its batches
full, and a stop loses at most a quarter of a 256-task test."""

_FINGERPRINT = "weights.txt"


def weights_fingerprint(run_dir: str | Path, step: int) -> str:
    """What identifies the weights a run evaluates at ``step``: ``initial`` at step 0, else the
    sha256 of the step's checkpoint manifest (``missing`` when there is none: such parts are
    never reused, since every later checkpoint differs)."""
    if step == 0:
        return "initial"
    manifest = checkpoint_dir(Path(run_dir), step) / MANIFEST
    if not manifest.is_file():
        return "missing"
    return hashlib.sha256(manifest.read_bytes()).hexdigest()


class TestParts:
    """The finished parts of one step's test evaluation (module docstring).

    Args:
        run_dir: The run directory.
        step: The evaluated step.
        fingerprint: ``weights_fingerprint(run_dir, step)``; parts of other weights are deleted.
    """

    __test__ = False  # not a pytest class

    def __init__(self, run_dir: str | Path, step: int, fingerprint: str) -> None:
        self.dir = Path(run_dir) / PARTS_DIR / f"step_{step:06d}"
        recorded = self.dir / _FINGERPRINT
        if self.dir.exists() and (not recorded.is_file() or recorded.read_text() != fingerprint):
            shutil.rmtree(self.dir)
        if fingerprint == "missing":
            self._reuse = False
            return
        self._reuse = True
        self.dir.mkdir(parents=True, exist_ok=True)
        if not recorded.is_file():
            atomic_write_text(recorded, fingerprint)

    def _path(self, index: int) -> Path:
        return self.dir / f"part_{index:04d}.json"

    def load(self, index: int, tasks: tuple[TaskKey, ...]) -> RolloutBatch | None:
        """Part ``index`` as played before, or None when it was not (or for other ``tasks``)."""
        path = self._path(index)
        if not self._reuse or not path.is_file():
            return None
        stored = json.loads(path.read_text())
        if [_task(t) for t in stored["tasks"]] != list(tasks):
            return None
        episodes = tuple(_episode(e) for e in stored["episodes"])
        samples = tuple(turn for episode in episodes for turn in episode.turns)
        return RolloutBatch(samples=samples, episodes=episodes, stats=stored["stats"])

    def save(self, index: int, tasks: tuple[TaskKey, ...], batch: RolloutBatch) -> None:
        """Write part ``index`` (atomically: a stop while writing leaves no half part).

        Raises:
            ValueError: The batch has samples off its episodes' paths (a tree rollout): a
                read-back part could not give its metrics.
        """
        if not self._reuse:
            return
        if len(batch.samples) != sum(episode.length for episode in batch.episodes):
            raise ValueError("a test part must be a plain rollout: every sample on an episode's path")
        stored = {
            "tasks": [_task_json(t) for t in tasks],
            "episodes": [_episode_json(e) for e in batch.episodes],
            "stats": {k: float(v) for k, v in batch.stats.items()},
        }
        atomic_write_text(self._path(index), json.dumps(stored))

    def clear(self) -> None:
        """Delete the parts (the whole test is logged)."""
        shutil.rmtree(self.dir, ignore_errors=True)
        try:
            self.dir.parent.rmdir()  # the last step's parts: no empty test_parts/ left behind
        except OSError:
            pass


def _task_json(task: TaskKey) -> list[Any]:
    return [task.env_id, task.split, task.seed]


def _task(stored: list[Any]) -> TaskKey:
    return TaskKey(*stored)


def _floats(mapping: Mapping[str, float]) -> dict[str, float]:
    return {name: float(value) for name, value in mapping.items()}


def _turn_json(turn: Turn) -> dict[str, Any]:
    return {
        "episode": turn.episode,
        "agent": turn.agent,
        "role": turn.role,
        "policy": turn.policy,
        "turn": turn.turn,
        "step": turn.step,
        "response": turn.response,
        "token_ids": list(turn.token_ids),
        "reward": float(turn.reward),
        "reward_terms": _floats(turn.reward_terms),
        "invalid": bool(turn.invalid),
        "done": bool(turn.done),
        "finish_reason": turn.finish_reason,
        "agent_rewards": _floats(turn.agent_rewards),
        "agent_reward_terms": {agent: _floats(terms) for agent, terms in turn.agent_reward_terms.items()},
        "feedback": turn.feedback,
    }


def _turn(stored: dict[str, Any], task: TaskKey) -> Turn:
    return Turn(
        task=task,
        prompt="",
        prompt_token_ids=(),
        logprobs=(),
        state_key=None,
        **{**stored, "token_ids": tuple(stored["token_ids"])},
    )


def _episode_json(episode: Episode) -> dict[str, Any]:
    return {
        "task": _task_json(episode.task),
        "index": episode.index,
        "success": bool(episode.success),
        "truncated": bool(episode.truncated),
        "returns": _floats(episode.returns),
        "turns": [_turn_json(turn) for turn in episode.turns],
    }


def _episode(stored: dict[str, Any]) -> Episode:
    task = _task(stored["task"])
    return Episode(
        task=task,
        index=stored["index"],
        turns=tuple(_turn(turn, task) for turn in stored["turns"]),
        success=stored["success"],
        returns=stored["returns"],
        truncated=stored["truncated"],
    )
