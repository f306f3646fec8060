"""Referential game (``referential-v0``): cooperative, shared reward, asymmetric information.

Roles
    ``speaker_0`` sees ``num_objects`` objects (default 4) with the target marked and writes
    a short message; ``listener_0`` sees the same objects in another order, numbered, plus
    the message, and names the target's number. Team variant: ``mas`` only.
Task
    The seed draws the objects (size, color, pattern, shape: 180 possible objects), the
    target and the listener's order. Each task's content (the objects and target) belongs
    to one split (``envs.splits.generate_in_split``).
Actions
    Speaker: a message inside ``<answer>...</answer>``, at most ``max_message_chars``
    (default 60) characters are passed on. Listener: one object number, ``<answer>2</answer>``.
Rewards
    ``team/correct``: 1.0 to both when the listener names the target, else 0. With
    ``oracle_reward=True`` the speaker also earns ``local/understood``: 1.0 when the scripted
    listener (``game.listener_pick``: the first object having every attribute word of the
    message) would pick the target from its message, so the K candidate messages of an
    AT-GRPO turn differ in reward before the listener acts.
Invalid actions
    Speaker: no answer tags or an empty message. Listener: no number, or one outside 1..K.
    Both get ``local/invalid`` (the penalty); an invalid speaker turn passes no message.
Oracle
    The scripted speaker names the fewest values only the target has (``"red"``, ``"big
    circle"``); the scripted listener applies the attribute filter above to the message it
    got. Two oracles always win; an oracle listener with a model speaker measures whether
    the model's messages are understandable (cross-play, ``--roles listener=oracle``).
Success
    The listener named the target. Chance is 1 / ``num_objects``.
Horizon
    One cycle (speaker, then listener).

Versions: v0, this page.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from envs.core import StepOutcome, TextAECEnv, TrainingPreset, role_of, to_ascii
from envs.games.referential import game
from envs.parsing import extract_answer
from envs.splits import generate_in_split

__all__ = ["ReferentialEnv"]

_NUMBER = re.compile(r"^\s*(?:object\s*)?#?\s*(\d{1,2})\s*[.!]?\s*$", re.IGNORECASE)


class ReferentialEnv(TextAECEnv):
    """A speaker describes the target, a listener picks it (see the module docstring).

    Args:
        num_objects: Objects per task, 2-8.
        max_message_chars: Characters of the speaker's message the listener sees.
        oracle_reward: Add the speaker's ``local/understood`` term.
        **kwargs: ``TextAECEnv`` arguments (``split``, ``invalid_action``, ...).
    """

    metadata: ClassVar[dict] = {**TextAECEnv.metadata, "name": "referential_v0", "suite": "games"}
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("speaker", "listener")}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 1
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(max_new_tokens=12, env_kwargs={"oracle_reward": True})
    APPEND_FEEDBACK: ClassVar[bool] = False  # one cycle: no later prompt to carry feedback

    def __init__(
        self, *, num_objects: int = 4, max_message_chars: int = 60, oracle_reward: bool = False, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        if isinstance(num_objects, bool) or not isinstance(num_objects, int) or not 2 <= num_objects <= 8:
            raise ValueError(f"ReferentialEnv: num_objects must be an int in 2..8, got {num_objects!r}")
        if (
            isinstance(max_message_chars, bool)
            or not isinstance(max_message_chars, int)
            or max_message_chars < 1
        ):
            raise ValueError(
                f"ReferentialEnv: max_message_chars must be an int >= 1, got {max_message_chars!r}"
            )
        self.num_objects = num_objects
        self.max_message_chars = max_message_chars
        self.oracle_reward = bool(oracle_reward)

    # ------------------------------------------------------------------ task
    def _draw(self, rng: np.random.Generator) -> tuple[list[game.Obj], int, list[int]]:
        objects = game.random_objects(rng, self.num_objects)
        target = int(rng.integers(self.num_objects))
        order = [
            int(i) for i in rng.permutation(self.num_objects)
        ]  # listener's i-th object: objects[order[i]]
        return objects, target, order

    def _start_task(self, task_seed: int) -> None:
        self.objects, self.target, order = generate_in_split(
            task_seed, self._draw, lambda task: f"{sorted(task[0])}|{task[0][task[1]]}"
        )
        self.listener_objects = [self.objects[i] for i in order]
        self.listener_target = order.index(self.target)
        self.message: str | None = None
        self.pick: int | None = None

    def task_fingerprint(self) -> str:
        return f"{sorted(self.objects)}|{self.objects[self.target]}"

    # ------------------------------------------------------------------ views
    def _prompt(self, agent: str) -> str:
        if role_of(agent) == "speaker":
            lines = [
                "Referential game. You are the speaker. The listener sees these objects in another "
                "order and must pick the target from your message alone.",
                *(
                    f"- {game.describe(obj)}" + ("  <- target" if i == self.target else "")
                    for i, obj in enumerate(self.objects)
                ),
                "Describe the target so that it cannot be confused with the others, e.g. <answer>the red "
                "one</answer>.",
            ]
            return "\n".join(lines)
        lines = [
            "Referential game. You are the listener. The speaker saw a target among these objects:",
            *(f"{i + 1}. {game.describe(obj)}" for i, obj in enumerate(self.listener_objects)),
            f'The speaker says: "{self.message or ""}"',
            f"Which one is the target? Answer with its number, 1-{self.num_objects}, as <answer>N</answer>.",
        ]
        return "\n".join(lines)

    def _legal_moves(self, agent: str) -> list[str]:
        if role_of(agent) == "listener":
            return [str(i + 1) for i in range(self.num_objects)]
        return []  # the speaker writes free text

    def _state_key(self) -> Hashable:
        return (tuple(self.objects), self.target, self.message, self.pick)

    def _render_text(self) -> str:
        rows = [
            f"{i + 1}. {game.describe(obj)}" + ("  <- target" if obj == self.objects[self.target] else "")
            for i, obj in enumerate(self.listener_objects)
        ]
        said = "(nothing yet)" if self.message is None else f'"{self.message}"'
        picked = "" if self.pick is None else f"; listener picked {self.pick + 1}"
        return "\n".join(rows + [f"speaker said {said}{picked}"])

    # ------------------------------------------------------------------ acting
    def _act(self, agent: str, text: str) -> StepOutcome:
        answer = extract_answer(text)
        if role_of(agent) == "speaker":
            message = to_ascii(" ".join((answer or "").split()))[: self.max_message_chars]
            if not message:  # the listener then hears nothing
                return StepOutcome(invalid=True, feedback="Write your message inside <answer>...</answer>.")
            self.message = message
            local = {}
            if self.oracle_reward:
                understood = game.listener_pick(self.listener_objects, message) == self.listener_target
                local["understood"] = float(understood)
            return StepOutcome(local=local, feedback="Message sent.")
        match = _NUMBER.match(answer) if answer is not None and len(answer) <= 16 else None
        number = int(match.group(1)) if match else 0
        if not 1 <= number <= self.num_objects:
            return StepOutcome(invalid=True, feedback=f"Answer with a number from 1 to {self.num_objects}.")
        self.pick = number - 1
        correct = self.pick == self.listener_target
        return StepOutcome(
            team={"correct": float(correct)},
            terminated=True,
            success=correct,
            feedback="Right!" if correct else f"Wrong: the target was {self.listener_target + 1}.",
        )

    # ------------------------------------------------------------------ oracle
    def oracle_response(self, agent: str) -> str:
        """The scripted speaker's message, or the scripted listener's pick from the message."""
        if role_of(agent) == "speaker":
            return f"<answer>{game.distinguishing_message(self.objects, self.target)}</answer>"
        return f"<answer>{game.listener_pick(self.listener_objects, self.message or '') + 1}</answer>"
