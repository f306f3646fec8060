"""Played episodes as JSON lines: what a training run sampled, kept so that its successes can
become demonstrations (``python -m trainers.sft --demos runs/<run>``: rejection sampling /
expert iteration with your own team).

A training run writes ``episodes/train_step_<step:06d>.jsonl``, one line per played path of
the step's rollouts (tree rollouts: the path of selected candidates)::

    {"task": {"env_id": "plan_path-v1", "split": "train", "seed": 12}, "index": 0,
     "success": true, "truncated": false, "returns": {"planner_0": 1.2, ...},
     "turns": [{"agent": "planner_0", "role": "planner", "response": "<answer>R D",
                "finish_reason": "stop", "invalid": false}, ...]}

Evaluations are stored in full for the run report (``trainers.run.report``):
``episodes/eval_step_<step:06d>.jsonl`` adds each turn's ``prompt``, ``reward``,
``reward_terms``, ``feedback`` (what the env said about the reply) and ``render`` (the env's
picture after it); ``benchmarks.evaluate`` writes the same form per cell.

Only text is stored, never token ids: the replies are re-tokenized by whichever model the
warm start trains, and the prompts are re-rendered by replaying the replies in the env
(``trainers.demonstrations.replayed_demonstrations``), so the demonstrations always carry
the prompt the trained team's rollouts render.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from trainers.records import Episode, RecordedEpisode, RecordedTurn, TaskKey
from trainers.run.files import atomic_write_text, read_jsonl

__all__ = [
    "EPISODES_DIR",
    "RecordedTurn",
    "RecordedEpisode",
    "episode_to_json",
    "write_episodes",
    "write_episode_file",
    "write_eval_episodes",
    "read_episode_dicts",
    "read_episodes",
    "drop_episodes_after",
]

EPISODES_DIR = "episodes"
_TRAIN_FILE = re.compile(r"train_step_(\d+)\.jsonl")
_STEP_FILE = re.compile(r"(?:train|eval)_step_(\d+)\.jsonl")


def _turn_to_json(turn, detailed: bool) -> dict:
    stored = {
        "agent": turn.agent,
        "role": turn.role,
        "response": turn.response,
        "finish_reason": turn.finish_reason,
        "invalid": bool(turn.invalid),
    }
    if detailed:
        stored.update(
            turn=turn.turn,
            step=turn.step,
            prompt=turn.prompt,
            reward=float(turn.reward),
            reward_terms={name: float(value) for name, value in turn.reward_terms.items()},
            feedback=turn.feedback,
            render=turn.render,
        )
    return stored


def episode_to_json(episode: Episode, detailed: bool = False) -> dict:
    """The stored form of an episode (see the module docstring); ``detailed``: with each turn's
    prompt, reward, reward terms, feedback and render (evaluations)."""
    task = episode.task
    return {
        "task": {"env_id": task.env_id, "split": task.split, "seed": task.seed},
        "index": episode.index,
        "success": bool(episode.success),
        "truncated": bool(episode.truncated),
        "returns": {agent: float(value) for agent, value in episode.returns.items()},
        "turns": [_turn_to_json(turn, detailed) for turn in episode.turns],
    }


def write_episode_file(path: str | Path, episodes: Sequence[Episode], detailed: bool = False) -> Path:
    """Writes ``episodes`` as JSON lines to ``path`` atomically (a kill leaves the old file or
    the new one, never half of one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(episode_to_json(e, detailed), ensure_ascii=False) + "\n" for e in episodes)
    atomic_write_text(path, "".join(lines))
    return path


def write_episodes(run_dir: str | Path, step: int, episodes: Sequence[Episode]) -> Path:
    """Writes ``<run_dir>/episodes/train_step_<step:06d>.jsonl`` (replies and outcomes)."""
    return write_episode_file(Path(run_dir) / EPISODES_DIR / f"train_step_{step:06d}.jsonl", episodes)


def write_eval_episodes(run_dir: str | Path, step: int, episodes: Sequence[Episode]) -> Path:
    """Writes ``<run_dir>/episodes/eval_step_<step:06d>.jsonl`` (every turn in full)."""
    path = Path(run_dir) / EPISODES_DIR / f"eval_step_{step:06d}.jsonl"
    return write_episode_file(path, episodes, detailed=True)


def read_episode_dicts(path: str | Path) -> list[dict]:
    """The stored episodes of one file as plain dicts (a line a kill cut short is skipped)."""
    return [e for e in read_jsonl(path) if isinstance(e.get("turns"), list)]


def drop_episodes_after(run_dir: str | Path, step: int) -> None:
    """Deletes the episode files (training and evaluation) of steps after ``step`` (a resumed
    run redoes those steps)."""
    folder = Path(run_dir) / EPISODES_DIR
    if folder.is_dir():
        for path in folder.iterdir():
            match = _STEP_FILE.fullmatch(path.name)
            if match and int(match.group(1)) > step:
                path.unlink()


def _parse(line: str, source: str) -> RecordedEpisode:
    data = json.loads(line)
    task = data["task"]
    turns = tuple(
        RecordedTurn(
            agent=str(t["agent"]),
            role=str(t["role"]),
            response=str(t["response"]),
            finish_reason=str(t.get("finish_reason", "stop")),
            invalid=bool(t.get("invalid", False)),
        )
        for t in data["turns"]
    )
    key = TaskKey(str(task["env_id"]), str(task["split"]), int(task["seed"]))
    return RecordedEpisode(task=key, success=bool(data["success"]), turns=turns, source=source)


def read_episodes(run_dirs: Iterable[str | Path]) -> list[RecordedEpisode]:
    """Every stored episode of ``run_dirs`` (each a run directory, or its ``episodes/`` folder),
    in step order.

    Raises:
        FileNotFoundError: a directory holds no ``train_step_*.jsonl`` (names the run and why).
        ValueError: a line is not a stored episode (names the file and line).
    """
    found: list[RecordedEpisode] = []
    for run_dir in run_dirs:
        root = Path(run_dir)
        folder = root if root.name == EPISODES_DIR else root / EPISODES_DIR
        files = sorted(p for p in folder.glob("train_step_*.jsonl") if _TRAIN_FILE.fullmatch(p.name))
        if not files:
            raise FileNotFoundError(
                f"{root} has no {EPISODES_DIR}/train_step_*.jsonl: pass the run directory of a "
                "python -m trainers.at_grpo run that saved its episodes (the default; "
                "--no-save-episodes turns it off)"
            )
        for path in files:
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    found.append(_parse(line, f"{path}:{number}"))
                except (KeyError, TypeError, ValueError) as err:
                    raise ValueError(f"{path}:{number} is not a stored episode ({err!r})") from err
    return found
