"""A tiny two-role task a random-init model can learn quickly (learning tests)."""

from __future__ import annotations

import envs
from envs import StepOutcome, TextAECEnv


class EvenTeamEnv(TextAECEnv):
    """Leader, then follower, each answer one character; a role is right when the code of
    its first character is even (about half the byte tokens of the tiny model), the team
    succeeds when both are right (chance about 1/4 or less). Rewards: ``local/even`` per
    role and ``team/success``."""

    metadata = {**TextAECEnv.metadata, "name": "even_team_v0"}
    TEAMS = {"mas": ("leader", "follower")}
    DEFAULT_MAX_CYCLES = 1

    def _start_task(self, task_seed):
        self.right = {}

    def _prompt(self, agent):
        return f"You are the {agent.rsplit('_', 1)[0]} of task {self.task_seed}. Answer with one character."

    def _right(self, text):
        return bool(text) and ord(text[0]) % 2 == 0

    def _act(self, agent, text):
        right = self._right(text)
        self.right[agent] = right
        if agent == self.possible_agents[-1]:  # the last role ends the episode
            both = all(self.right.get(a, False) for a in self.possible_agents)
            return StepOutcome(
                local={"even": float(right)}, team={"success": float(both)}, success=both, terminated=True
            )
        return StepOutcome(local={"even": float(right)})

    def _legal_moves(self, agent):
        return []

    def _state_key(self):
        return tuple(sorted(self.right.items()))

    def _render_text(self):
        return str(self.right)


class EvenPlanEnv(EvenTeamEnv):
    """The same task with planner/executor roles (MATPO needs a planner) and a one-role
    ``single`` team, for the training command's tests (``--env tests.trainers.conftest:test/even_plan``)."""

    metadata = {**TextAECEnv.metadata, "name": "even_plan_v0"}
    TEAMS = {"mas": ("planner", "executor"), "single": ("solver",)}


class AlwaysRightEnv(EvenPlanEnv):
    """Every reply is right: every group's rewards are equal (zero variance), so no update
    ever changes the weights (a run stuck where the tool arms of the learning benchmark are)."""

    metadata = {**TextAECEnv.metadata, "name": "always_right_v0"}

    def _right(self, text):
        return True


class OneTokenEnv(EvenPlanEnv):
    """Right only when the reply starts with 'k' (chance about 1 in 256 bytes per role): the
    warm start's test task, which the oracle demonstrates."""

    metadata = {**TextAECEnv.metadata, "name": "one_token_v0"}

    def _right(self, text):
        return text[:1] == "k"

    def oracle_response(self, agent):
        return "k"


class GradedOneTokenEnv(OneTokenEnv):
    """The one-token task under difficulty presets (the same task at each) and with a team
    named ``tool``, for the learning benchmark's smoke run of its tool arms and its
    generalisation columns (``benchmarks.learning --general``)."""

    metadata = {**TextAECEnv.metadata, "name": "graded_one_token_v0"}
    TEAMS = {**EvenPlanEnv.TEAMS, "tool": ("tool", "plan")}
    DIFFICULTIES = ("easy", "medium", "hard")
    TRAINING = envs.TrainingPreset(max_new_tokens=1, env_kwargs={"difficulty": "easy"})

    def __init__(self, difficulty="easy", **kwargs):
        if difficulty not in self.DIFFICULTIES:
            raise ValueError(f"difficulty={difficulty!r}; choose one of {self.DIFFICULTIES}")
        self.difficulty = difficulty
        super().__init__(**kwargs)


class OneLineProgramEnv(TextAECEnv):
    """A tool team on a one-line program: ``tool_0`` writes Python that reads two numbers on
    standard input and prints their sum (run in the sandbox, like a planning env's tool turn),
    ``plan_0`` answers the number its program printed. Success: the program printed the sum (the
    plan agent's copy earns ``local/copied``: the tiny random-init model does not learn to copy
    from its prompt in a CI-sized run). The warm start's test of program replies: by chance the
    model never writes the line."""

    metadata = {**TextAECEnv.metadata, "name": "one_line_program_v0"}
    TEAMS = {"mas": ("tool", "plan")}  # "mas": the variant an env is built with by default
    DEFAULT_MAX_CYCLES = 1
    PROGRAM = "print(sum(map(int, input().split())))"

    def _start_task(self, task_seed):
        self.numbers = (task_seed % 7, task_seed % 5)
        self.printed = None

    def _prompt(self, agent):
        if agent == "tool_0":
            return "Write a Python program that prints the sum of the two numbers on its input."
        return f"The program printed: {self.printed}. Answer the sum."

    def _act(self, agent, text):
        from envs.sandbox import SandboxJob
        from envs.sandbox.memo import run_remembered

        total = str(sum(self.numbers))
        if agent == "tool_0":
            code = text.removeprefix("```python\n").removesuffix("\n```")
            result = run_remembered(SandboxJob(code, stdin=f"{self.numbers[0]} {self.numbers[1]}\n"))
            self.printed = result.stdout.strip()[:20] if result.ok else "(an error)"
            return StepOutcome(local={"right": float(self.printed == total)})
        solved = self.printed == total
        copied = float(text.strip() == self.printed)
        team = {"success": float(solved)}
        return StepOutcome(team=team, local={"copied": copied}, success=solved, terminated=True)

    def oracle_response(self, agent):
        return f"```python\n{self.PROGRAM}\n```" if agent == "tool_0" else self.printed

    def _legal_moves(self, agent):
        return []

    def _state_key(self):
        return self.printed

    def _render_text(self):
        return f"{self.numbers} -> {self.printed}"


class CrashOnceEnv(EvenPlanEnv):
    """EvenPlanEnv whose process dies (``os._exit``) at its first action on task seed
    ``crash_task`` while the file ``marker`` does not exist, creating it first: a rollout worker
    killed mid-collect, at a known point, once (the Ray runtime's fault test)."""

    metadata = {**TextAECEnv.metadata, "name": "crash_once_v0"}

    def __init__(self, marker: str = "", crash_task: int = -1, **kwargs):
        super().__init__(**kwargs)
        self.marker, self.crash_task = marker, crash_task

    def _act(self, agent, text):
        import os
        from pathlib import Path

        if self.marker and self.task_seed == self.crash_task and not Path(self.marker).exists():
            Path(self.marker).touch()
            os._exit(1)
        return super()._act(agent, text)


EVEN_TEAM_ID = "test/even_team-v0"
envs.register(EVEN_TEAM_ID, entry_point="tests.trainers.conftest:EvenTeamEnv")
EVEN_PLAN_ID = "test/even_plan-v0"
envs.register(EVEN_PLAN_ID, entry_point="tests.trainers.conftest:EvenPlanEnv")
ALWAYS_RIGHT_ID = "test/always_right-v0"
envs.register(ALWAYS_RIGHT_ID, entry_point="tests.trainers.conftest:AlwaysRightEnv")
ONE_TOKEN_ID = "test/one_token-v0"
envs.register(ONE_TOKEN_ID, entry_point="tests.trainers.conftest:OneTokenEnv")
GRADED_ONE_TOKEN_ID = "test/graded_one_token-v0"
envs.register(GRADED_ONE_TOKEN_ID, entry_point="tests.trainers.conftest:GradedOneTokenEnv")
ONE_LINE_PROGRAM_ID = "test/one_line_program-v0"
envs.register(ONE_LINE_PROGRAM_ID, entry_point="tests.trainers.conftest:OneLineProgramEnv")
CRASH_ONCE_ID = "test/crash_once-v0"
envs.register(CRASH_ONCE_ID, entry_point="tests.trainers.conftest:CrashOnceEnv")
