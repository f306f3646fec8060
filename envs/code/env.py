"""Code: a coder writes the solution, a tester writes unit tests; both run in the sandbox.

Roles (``team="mas"``, turn order coder, tester):

* ``coder_0`` writes the solution in a ```python block: the whole function for function
  tasks (HumanEval, CodeI/O, MBPP; a block that does not define the entry point is taken
  as the body's continuation and appended to the task's signature, HumanEval style), or
  a program reading stdin for stdin/stdout tasks (APPS, CodeContests, LiveCodeBench).
* ``tester_0`` sees the problem and the coder's latest code and writes tests in a
  ```python block: ``assert`` statements calling the function, or for stdin/stdout tasks
  ``<input>...</input><output>...</output>`` pairs. At most ``max_tests`` are read, from
  the first ``envs.parsing.MAX_PARSED_CHARS`` characters of the reply (of the code block
  for asserts), in time linear in them: ``parse_io_tests`` and ``parse_assert_tests``.

Every coder turn runs the new code against the task's hidden tests; every tester turn
runs the new tests against the task's reference solution (are they right?) and against
the coder's latest code (do they catch a bug?). The coder's next prompt lists the
tester's tests that its code failed, with the error: the transcript of failures feeds
the next turn. Hidden-test results are never shown to either role (only rewarded), so a
HumanEval score stays a pass@1 score. The episode ends when the coder's code passes all
of the tester's (at least one) tests, or after ``max_cycles``; the final code is then
judged on all hidden tests. ``team="single"``: ``coder_0`` alone, one submission.

Tasks (``envs.code.data.CODE_SOURCES``): ``train_source`` (default ``codeio``: CodeI/O
functions with tests made by running the reference on seeded inputs) for ``split="train"``,
``test_source`` (default ``humaneval``: the 164 HumanEval problems) for ``split="test"``,
or a path to an MBPP / APPS / CodeContests / LiveCodeBench style jsonl file.

Rewards (``reward = alpha * team + local``; sizes are constructor arguments):

==========================  =====================================================
``team/success``            ``success_bonus`` on the episode's last step when the
                            final code passes every hidden test.
``local/hidden_pass``       coder: ``pass_weight`` x the fraction of hidden tests its
                            new code passes.
``local/valid_tests``       tester: ``valid_weight`` x the fraction of its tests that
                            the reference solution passes (tests that agree with the
                            hidden tests' ground truth; 0 when there is no reference).
``local/catches_bug``       tester: ``catch_bonus`` when the coder's code fails a
                            hidden test and at least one of the tester's *valid* tests
                            fails on it too (a test that catches a real bug).
``local/invalid``           ``-invalid_penalty``: no code block, or no readable test.
==========================  =====================================================

Version history: v0 - first release.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
import string
from collections.abc import Hashable
from typing import Any, ClassVar

from envs.code.data import CODE_SOURCES, DEFAULT_TEST_SOURCE, DEFAULT_TRAIN_SOURCE, CodeTask
from envs.code.harness import TestReport, run_function_tests, run_io_tests, run_task
from envs.core import StepOutcome, TextAECEnv, TrainingPreset, role_of, to_ascii
from envs.parsing import MAX_PARSED_CHARS, extract_code
from envs.sandbox import SandboxLimits, isolation_layers
from envs.tasks import SourcedEnv

__all__ = ["CodeEnv", "parse_assert_tests", "parse_io_tests"]

_MAX_TEST_CHARS = 2000
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)  # keeps every index
_SPACES = re.compile(r"\s*")
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")  # where ast's line numbers advance


def parse_assert_tests(code: str, max_tests: int) -> list[str]:
    """The top-level ``assert`` statements of a test block, as source strings (at most
    ``max_tests``, each at most 2000 characters, from the block's first
    ``MAX_PARSED_CHARS`` characters).

    ``ast.parse`` only parses (nothing runs). Code that does not parse falls back to its
    single-line ``assert`` lines; statements other than asserts are dropped. Each
    statement is sliced out with a line-offset table built once (``ast.get_source_segment``
    re-splits the whole source for every node: quadratic in the number of statements).
    """
    code = code[:MAX_PARSED_CHARS]
    try:
        tree = ast.parse(code)
        source = code.encode("utf-8")  # ast's column offsets count UTF-8 bytes
        line_starts = [0] + [match.end() for match in _LINE_BREAK.finditer(source)]
        tests: list[str] = []
        for node in tree.body:
            if not isinstance(node, ast.Assert) or node.end_lineno is None or node.end_col_offset is None:
                continue
            start = line_starts[node.lineno - 1] + node.col_offset
            end = line_starts[node.end_lineno - 1] + node.end_col_offset
            test = source[start:end].decode("utf-8") if end - start <= 4 * _MAX_TEST_CHARS else ""
            if test and len(test) <= _MAX_TEST_CHARS:
                tests.append(test)
                if len(tests) == max_tests:
                    break
        return tests
    except (SyntaxError, ValueError, RecursionError, MemoryError, IndexError):
        pass
    tests = []
    for line in code.splitlines():
        if _is_one_assert(line.strip()):
            tests.append(line.strip())
            if len(tests) == max_tests:
                break
    return tests


def _is_one_assert(line: str) -> bool:
    if not line.startswith("assert ") or len(line) > _MAX_TEST_CHARS:
        return False
    try:
        return isinstance(ast.parse(line).body[0], ast.Assert)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def parse_io_tests(text: str, max_tests: int) -> list[tuple[str, str]]:
    """``<input>...</input><output>...</output>`` pairs (stdin, expected stdout): at most
    ``max_tests`` of at most 2000 characters each, from the first ``MAX_PARSED_CHARS``
    characters of ``text``.

    Tags are case-insensitive (ASCII); only whitespace may separate ``</input>`` from
    ``<output>``. Each ``<input>`` is closed by the next ``</input>`` (no nesting); an input
    not followed by an output is skipped. One left-to-right scan with ``str.find``: linear
    in the text (a lazy regex for the pair backtracks cubically on repeated tags).
    """
    text = text[:MAX_PARSED_CHARS]
    lower = text.translate(_ASCII_LOWER)
    pairs: list[tuple[str, str]] = []
    pos = 0
    while len(pairs) < max_tests:
        opened = lower.find("<input>", pos)
        if opened < 0:
            break
        closed = lower.find("</input>", opened + len("<input>"))
        if closed < 0:
            break
        pos = _SPACES.match(lower, closed + len("</input>")).end()
        if not lower.startswith("<output>", pos):
            continue  # scanning on from here: every character is looked at a bounded number of times
        output_end = lower.find("</output>", pos + len("<output>"))
        if output_end < 0:
            break
        stdin = text[opened + len("<input>") : closed].strip("\n")
        expected = text[pos + len("<output>") : output_end].strip()
        pos = output_end + len("</output>")
        if len(stdin) + len(expected) <= _MAX_TEST_CHARS:
            pairs.append((stdin, expected))
    return pairs


class CodeEnv(SourcedEnv):
    """Programming problems for a coder + tester team (module docstring).

    Args:
        train_source, test_source: Task source names (``envs.code.data.CODE_SOURCES``) or
            file paths, used by ``split="train"`` and ``split="test"`` envs respectively.
        max_tests: Tester tests read from one answer.
        success_bonus, pass_weight, valid_weight, catch_bonus: Reward sizes (module docstring).
        test_timeout_s: Time budget of one test (hidden or the tester's) in the sandbox.
        **kwargs: ``TextAECEnv`` arguments (team, alpha, max_cycles, split, ...);
            ``max_action_chars`` defaults to 16384 here (whole programs).
    """

    metadata: ClassVar[dict[str, Any]] = {**TextAECEnv.metadata, "name": "code_v0", "suite": "code"}
    APPEND_FEEDBACK = False  # _prompt places feedback_line() before the final instruction
    TEAMS: ClassVar[dict[str, tuple[str, ...]]] = {"mas": ("coder", "tester"), "single": ("coder",)}
    DEFAULT_MAX_CYCLES: ClassVar[int] = 3
    TRAINING: ClassVar[TrainingPreset] = TrainingPreset(max_new_tokens=192)  # a whole function
    SOURCES = CODE_SOURCES

    def __init__(
        self,
        *,
        train_source: str = DEFAULT_TRAIN_SOURCE,
        test_source: str = DEFAULT_TEST_SOURCE,
        max_tests: int = 8,
        success_bonus: float = 1.0,
        pass_weight: float = 1.0,
        valid_weight: float = 0.5,
        catch_bonus: float = 0.5,
        test_timeout_s: float = 1.0,
        **kwargs: Any,
    ) -> None:
        # Whole programs: the base class's 4096-character cut would break many references.
        kwargs.setdefault("max_action_chars", 16_384)
        super().__init__(train_source=train_source, test_source=test_source, **kwargs)
        if not isinstance(max_tests, int) or max_tests < 1:
            raise ValueError(f"{type(self).__name__}: max_tests must be a positive int, got {max_tests!r}")
        self.max_tests = max_tests
        self.success_bonus = float(success_bonus)
        self.pass_weight = float(pass_weight)
        self.valid_weight = float(valid_weight)
        self.catch_bonus = float(catch_bonus)
        if not test_timeout_s > 0:
            raise ValueError(
                f"{type(self).__name__}: test_timeout_s must be > 0 seconds, got {test_timeout_s!r}"
            )
        self.test_timeout_s = float(test_timeout_s)
        # Fail here, not at the first step of a training run, when model code could not run
        # isolated (SandboxUnavailableError says how to install bubblewrap or opt in); cached.
        isolation_layers()

    # ------------------------------------------------------------- TextAECEnv hooks
    def _start_task(self, task_seed: int) -> None:
        self.task: CodeTask = self._task_for_seed(task_seed)
        self.code: str | None = None  # the coder's latest solution program
        self.code_passes_hidden = False
        self.tests: list[Any] = []  # the tester's latest tests
        self.failures: list[str] = []  # tester tests the latest code failed, with errors

    def _prompt(self, agent: str) -> str:
        role = role_of(agent)
        stdio = self.task.kind == "stdio"
        if role == "coder":
            what = (
                "a complete Python program that reads stdin and prints the answer"
                if stdio
                else (f"the complete function `{self.task.entry_point}` (with any imports it needs)")
            )
            parts = [f"Solve the programming problem: write {what} in a ```python block."]
        else:
            form = (
                "test cases as <input>STDIN</input><output>EXPECTED STDOUT</output> pairs"
                if stdio
                else f"`assert` statements that call `{self.task.entry_point}`"
            )
            parts = [
                f"You are the tester. Write up to {self.max_tests} {form} in a ```python block. Good tests "
                "are correct for the problem and catch mistakes in the coder's code."
            ]
        parts += ["", "Problem:", self.task.prompt]
        if role == "tester" and self.code is not None:
            parts += ["", "The coder's latest code:", "```python", to_ascii(self.code, max_chars=3000), "```"]
        if role == "coder" and self.failures:
            parts += ["", "Your code failed the tester's tests:", *self.failures]
        if feedback := self.feedback_line(agent):
            parts += ["", feedback]
        return "\n".join(parts)

    def _legal_moves(self, agent: str) -> list[str]:
        return []  # free text: no enumerable moves

    def _state_key(self) -> Hashable:
        code_hash = hashlib.sha1((self.code or "").encode("utf-8", "replace")).hexdigest()
        return (self.task.id, code_hash, tuple(map(str, self.tests)))

    def _render_text(self) -> str:
        lines = [f"[{self.task.id}] ({self.task.kind})", self.task.prompt.strip()]
        lines += ["coder's code:", self.code or "(none)", f"tester's tests: {len(self.tests)}"]
        return "\n".join(lines)

    def _act(self, agent: str, text: str) -> StepOutcome:
        outcome = self._coder_turn(text) if role_of(agent) == "coder" else self._tester_turn(text)
        if self.team == "single" and not outcome.invalid:
            outcome.terminated = True  # one submission: pass@1
        last_turn = self.num_steps + 1 >= self.max_cycles * len(self.possible_agents)
        if (outcome.terminated or last_turn) and self.code is not None and self.code_passes_hidden:
            outcome.team["success"] = self.success_bonus
            outcome.success = outcome.terminated = True
        return outcome

    # ------------------------------------------------------------- turns
    def _coder_turn(self, text: str) -> StepOutcome:
        code = extract_code(text)
        if code is None:
            return StepOutcome(invalid=True, feedback="No ```python code block found.")
        self.code = self._as_solution(code)
        hidden_tests = self.task.io_tests if self.task.kind == "stdio" else self.task.tests
        hidden = self._run_tests(self.code, list(hidden_tests))  # per test: a graded pass rate
        self.code_passes_hidden = hidden.total > 0 and hidden.passed == hidden.total
        if self.code_passes_hidden and self.task.check_program:  # HumanEval: check() has the last word
            final = run_task(self.task, self.code, authoritative=True)
            self.code_passes_hidden = final.total > 0 and final.passed == final.total
        outcome = StepOutcome(local={"hidden_pass": self.pass_weight * hidden.pass_rate})
        if hidden.compile_error:
            outcome.feedback = f"Your code does not run: {to_ascii(hidden.compile_error, max_chars=300)}"
        else:
            outcome.feedback = (
                "Code received; the tester checks it next." if self.team == "mas" else "Submitted."
            )
        if self.tests:  # re-run the tester's standing tests on the new code
            report = self._run_tests(self.code, self.tests)
            self._record_failures(report)
            if report.total and report.passed == report.total:
                outcome.terminated = True
                outcome.feedback += " It passes all of the tester's tests."
        return outcome

    def _tester_turn(self, text: str) -> StepOutcome:
        block = extract_code(text) or ""
        tests: list[Any] = (
            parse_io_tests(text, self.max_tests)
            if self.task.kind == "stdio"
            else parse_assert_tests(block, self.max_tests)
        )
        if not tests:
            return StepOutcome(invalid=True, feedback="No readable test found.")
        self.tests = tests
        local: dict[str, float] = {}
        valid = [True] * len(tests)
        if self.task.reference:
            on_reference = self._run_tests(self._as_solution(self.task.reference), tests)
            valid = [o.passed for o in on_reference.outcomes] + [False] * (len(tests) - on_reference.total)
            local["valid_tests"] = self.valid_weight * sum(valid) / len(tests)
        feedback = f"{len(tests)} test(s) read"
        terminated = False
        if self.code is not None:
            report = self._run_tests(self.code, tests)
            self._record_failures(report)
            failed_valid = any(not o.passed and ok for o, ok in zip(report.outcomes, valid, strict=False))
            if self.task.reference and failed_valid and not self.code_passes_hidden:
                local["catches_bug"] = self.catch_bonus
            feedback += f"; the coder's code passes {report.passed} of them"
            terminated = report.total > 0 and report.passed == report.total
        return StepOutcome(local=local, terminated=terminated, feedback=feedback + ".")

    # ------------------------------------------------------------- running code
    def _as_solution(self, code: str) -> str:
        """A function task's code that does not define the entry point continues the
        task's signature (HumanEval completion style)."""
        if self.task.kind == "function" and self.task.entry_point:
            if not re.search(rf"def\s+{re.escape(self.task.entry_point)}\s*\(", code):
                return self.task.prompt + code
        return code

    def _run_tests(self, solution: str, tests: list[Any]) -> TestReport:
        """Function asserts in one sandbox run, or one run per stdin/stdout case, with
        ``test_timeout_s`` per test: a stuck solution costs seconds, not minutes."""
        budget = self.test_timeout_s
        if self.task.kind == "stdio":
            return run_io_tests(solution, tests, limits=SandboxLimits(timeout_s=budget + 1.0))
        whole = 2.0 + budget * len(tests)  # loading the solution + every test's budget
        limits = SandboxLimits(timeout_s=whole, cpu_s=math.ceil(whole))
        return run_function_tests(
            solution, tests, setup=self.task.setup, limits=limits, test_timeout_s=budget
        )

    def _record_failures(self, report: TestReport) -> None:
        self.failures = [
            f"- {to_ascii(str(o.test), max_chars=300)} -> {to_ascii(o.error, max_chars=200)}"
            for o in report.outcomes
            if not o.passed
        ][: self.max_tests]

    # ------------------------------------------------------------- oracle support
    def oracle_response(self, agent: str) -> str:
        """Reference behaviour: the reference solution (coder), or the first ``max_tests``
        hidden tests (tester). Tasks without a reference get an empty block (invalid)."""
        if role_of(agent) == "coder":
            return f"```python\n{self.task.reference or ''}\n```"
        if self.task.kind == "stdio":
            pairs = self.task.io_tests[: self.max_tests]
            return "\n".join(f"<input>{i}</input><output>{o}</output>" for i, o in pairs)
        return "```python\n" + "\n".join(self.task.tests[: self.max_tests]) + "\n```"
