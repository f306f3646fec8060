"""Math: a tool agent (Python in the sandbox) and a reasoner (``\\boxed{}``) solve a problem.

Roles (``team="mas"``, turn order tool, reasoner):

* ``tool_0`` writes a Python program in a ```python block; it runs in ``envs.sandbox``
  (separate process, no network, time and memory limits) and the last line it prints is
  the tool's answer.
* ``reasoner_0`` sees the tool's program and output and answers in ``\\boxed{...}``. Its
  latest answer is the team's final answer.

They go round until their latest answers agree (judged with ``envs.math.checking``) or
``max_cycles`` is reached; the final answer is then checked against the gold answer with
``math-verify``. ``team="single"``: ``solver_0`` answers in ``\\boxed{}`` alone; its first
readable answer ends the episode (pass@1 semantics, no retries against the checker).

Answers may also be written as ``<answer>...</answer>`` (the trainer's default reply
prefix), for code as well as for final answers: the tool's program is the last fenced
block, else the answer block's content (``envs.parsing.extract_code``); a final answer is
the last ``\\boxed{}``, else the answer block's content.

Tasks (``envs.math.data.MATH_SOURCES``): ``train_source`` (default ``mixed``: seeded
GSM-style, arithmetic and algebra generators) for a ``split="train"`` env,
``test_source`` (default ``gsm8k``: the 100 real GSM8K test items; ``champ`` for CHAMP
competition problems) for ``split="test"``, or a path to a GSM8K / MATH style jsonl file.
Task seed ``s`` of a split plays item ``s - first seed of the split`` of the source.

Rewards (``reward = alpha * team + local``; sizes are constructor arguments):

==========================  =====================================================
``team/correct``            ``correct_bonus`` on the episode's last step when the
                            final answer is correct (the episode's success).
``team/agreement``          ``agreement_bonus`` when the two roles' latest answers
                            come to agree (the episode then ends).
``local/correct``           ``own_correct_bonus`` when the acting role's own answer
                            this turn is correct (the tool's printed answer counts).
``local/exec_error``        ``-exec_error_penalty``: the tool's program raised, timed
                            out, ran out of memory or output, or printed nothing.
``local/invalid``           ``-invalid_penalty``: no code block (tool), no
                            ``\\boxed{}`` or answer block (reasoner, solver).
==========================  =====================================================

Version history: v0 - first release.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar

from envs.core import StepOutcome, TextAECEnv, TrainingPreset, role_of, to_ascii
from envs.math.checking import answers_match, extract_boxed, extract_printed_answer, looks_like_prose
from envs.math.data import DEFAULT_TEST_SOURCE, DEFAULT_TRAIN_SOURCE, MATH_SOURCES, MathTask
from envs.parsing import extract_answer, extract_code
from envs.sandbox import SandboxLimits, run_python
from envs.tasks import SourcedEnv

__all__ = ["MathEnv"]

_MAX_BLOCK_ANSWER = 100  # longer (or multi-line) <answer> content is reasoning, not an answer

_INSTRUCTIONS = {
    "tool": (
        "You are the tool agent of a two-agent team solving a math problem. Write a short Python "
        "program that computes the answer and prints it; the last line it prints is your answer. Put "
        "the program in a ```python code block. It runs in a sandbox (standard library only, no "
        "input, a few seconds at most)."
    ),
    "reasoner": (
        "You are the reasoner of a two-agent team solving a math problem. A tool agent writes Python "
        "for it; you check its result, reason briefly and give the final answer as \\boxed{ANSWER}."
    ),
    "solver": "Solve the math problem. Reason briefly, then give the final answer as \\boxed{ANSWER}.",
}


class MathEnv(SourcedEnv):
    """Math word and competition problems for a tool + reasoner team (module docstring).

    Args:
        train_source, test_source: Task source names (``envs.math.data.MATH_SOURCES``) or
            file paths, used by ``split="train"`` and ``split="test"`` envs respectively.
        correct_bonus, agreement_bonus, own_correct_bonus, exec_error_penalty: Reward
            sizes (module docstring).
        sandbox_timeout_s: Wall-clock limit of one tool program.
        **kwargs: ``TextAECEnv`` arguments (team, alpha, max_cycles, split, ...).
    """

    metadata: ClassVar[dict[str, Any]] = {**TextAECEnv.metadata, "name": "math_v0", "suite": "math"}
    APPEND_FEEDBACK = False  # _prompt places feedback_line() before the final instruction
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("tool", "reasoner"), "single": ("solver",)}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 3
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(max_new_tokens=96)  # a program or a worked answer
    SOURCES = MATH_SOURCES

    def __init__(
        self,
        *,
        train_source: str = DEFAULT_TRAIN_SOURCE,
        test_source: str = DEFAULT_TEST_SOURCE,
        correct_bonus: float = 1.0,
        agreement_bonus: float = 0.1,
        own_correct_bonus: float = 0.5,
        exec_error_penalty: float = 0.5,
        sandbox_timeout_s: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(train_source=train_source, test_source=test_source, **kwargs)
        name = type(self).__name__
        if exec_error_penalty < 0:
            raise ValueError(
                f"{name}: exec_error_penalty is a size, use a value >= 0 (got {exec_error_penalty})"
            )
        self.correct_bonus = float(correct_bonus)
        self.agreement_bonus = float(agreement_bonus)
        self.own_correct_bonus = float(own_correct_bonus)
        self.exec_error_penalty = float(exec_error_penalty)
        self.sandbox_limits = SandboxLimits(timeout_s=sandbox_timeout_s)

    # ------------------------------------------------------------- TextAECEnv hooks
    def _start_task(self, task_seed: int) -> None:
        self.task: MathTask = self._task_for_seed(task_seed)
        self.answers: dict[str, str | None] = dict.fromkeys(self.roles)  # latest readable answer
        self.programs: dict[str, str] = {}  # tool: latest program and what running it showed
        self.final_answer: str | None = None

    def _prompt(self, agent: str) -> str:
        role = role_of(agent)
        parts = [_INSTRUCTIONS[role], "", "Problem:", self.task.question]
        if role == "reasoner" and "tool" in self.answers:
            if "code" in self.programs:
                parts += ["", "The tool agent's program:", "```python", self.programs["code"], "```"]
                parts += ["It printed:" if self.answers["tool"] else "It failed:", self.programs["result"]]
            else:
                parts += ["", "The tool agent has no result yet."]
        if role == "tool" and self.answers.get("reasoner"):
            parts += ["", f"The reasoner's answer so far: {self.answers['reasoner']}"]
        if feedback := self.feedback_line(agent):
            parts += ["", feedback]
        parts += ["", "Answer in a ```python block." if role == "tool" else "Answer with \\boxed{...}."]
        return "\n".join(parts)

    def _legal_moves(self, agent: str) -> list[str]:
        return []  # free text: no enumerable moves

    def _state_key(self) -> Hashable:
        return (self.task.id, tuple(sorted((r, a or "") for r, a in self.answers.items())))

    def _render_text(self) -> str:
        lines = [f"[{self.task.id}] {self.task.question}", f"gold answer: {self.task.answer}"]
        lines += [f"{role}: {answer}" for role, answer in self.answers.items()]
        return "\n".join(lines)

    def _act(self, agent: str, text: str) -> StepOutcome:
        role = role_of(agent)
        outcome = self._tool_turn(text) if role == "tool" else self._answer_turn(role, text)
        if outcome.invalid:
            return self._finish_if_last(outcome)
        answer = self.answers[role]
        if answer is not None and answers_match(self.task.answer, answer):
            outcome.local["correct"] = self.own_correct_bonus
        if self.team == "single" and answer is not None:
            outcome.terminated = True  # one readable answer is the solver's final answer
        elif self._answers_agree() and answer is not None:
            outcome.team["agreement"] = self.agreement_bonus
            outcome.terminated = True
            outcome.feedback += " The team agrees."
        return self._finish_if_last(outcome)

    # ------------------------------------------------------------- turns
    def _tool_turn(self, text: str) -> StepOutcome:
        code = extract_code(text)
        if code is None:
            return StepOutcome(invalid=True, feedback="No ```python code block found.")
        result = run_python(code, limits=self.sandbox_limits)
        printed = extract_printed_answer(result.stdout) if result.ok else None
        self.programs["code"] = to_ascii(code, max_chars=1500)
        if printed is None:
            why = result.reason if not result.ok else "it printed nothing"
            detail = to_ascii(_tail(result.stderr), max_chars=300)
            self.programs["result"] = f"{why}. {detail}".strip()
            self.answers["tool"] = None
            return StepOutcome(
                local={"exec_error": -self.exec_error_penalty},
                feedback=f"Your program failed ({why}). {detail}".strip(),
            )
        self.programs["result"] = to_ascii(printed, max_chars=300)
        self.answers["tool"] = to_ascii(printed, max_chars=300)
        return StepOutcome(feedback=f"Your program printed: {self.answers['tool']}")

    def _answer_turn(self, role: str, text: str) -> StepOutcome:
        answer = extract_boxed(text)
        if answer is None:  # an answer block counts only when it holds just the answer
            block = (extract_answer(text) or "").strip()
            short = "\n" not in block and len(block) <= _MAX_BLOCK_ANSWER
            answer = block if short and not looks_like_prose(block) else None
        if not answer:
            return StepOutcome(
                invalid=True,
                feedback="No \\boxed{...} answer found (an <answer> block must hold only the answer).",
            )
        self.answers[role] = to_ascii(answer, max_chars=300)
        self.final_answer = self.answers[role]
        return StepOutcome(feedback=f"Your answer: {self.answers[role]}.")

    def _answers_agree(self) -> bool:
        if self.team == "single":
            return False
        tool, reasoner = self.answers.get("tool"), self.answers.get("reasoner")
        return tool is not None and reasoner is not None and answers_match(reasoner, tool)

    def _finish_if_last(self, outcome: StepOutcome) -> StepOutcome:
        """On the episode's last step (agreement, the solver's answer, or the last turn of
        ``max_cycles``), judge the team's final answer."""
        last_turn = self.num_steps + 1 >= self.max_cycles * len(self.possible_agents)
        if not (outcome.terminated or last_turn):
            return outcome
        if self.final_answer is not None and answers_match(self.task.answer, self.final_answer):
            outcome.team["correct"] = self.correct_bonus
            outcome.success = True
            outcome.terminated = True
        return outcome

    # ------------------------------------------------------------- oracle support
    def oracle_response(self, agent: str) -> str:
        """The gold answer in the role's format: a program printing it (tool), or
        ``\\boxed{gold}`` (reasoner, solver)."""
        if role_of(agent) == "tool":
            return f"```python\nprint({self.task.answer!r})\n```"
        return f"\\boxed{{{self.task.answer}}}"


def _tail(text: str, lines: int = 3) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
