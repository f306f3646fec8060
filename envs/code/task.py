"""One programming task (``CodeTask``): the record the code sources (``envs.code.data``,
``envs.code.files``) produce and the harness (``envs.code.harness``) runs, and ``parse_python``,
the quiet parser the sources share. Its own module so that all of them can import it."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

__all__ = ["CodeTask"]


@dataclass(frozen=True, kw_only=True)
class CodeTask:
    """One programming problem.

    Attributes:
        id: Unique id, e.g. ``"HumanEval/0"``, ``"codeio/17"``, ``"mbpp.jsonl:11"``.
        kind: ``"function"`` (tests call ``entry_point``) or ``"stdio"`` (a program run on
            each ``io_tests`` stdin).
        prompt: What the coder sees: signature + docstring (function), statement (stdio).
        entry_point: The function under test (function tasks), else ``None``.
        tests: Hidden tests of a function task: self-contained Python statements, usually
            one ``assert``, run by ``harness.run_function_tests`` in the solution's
            namespace (after ``setup``); they may use the harness's ``values_match``.
        io_tests: Hidden ``(stdin, expected stdout)`` cases of a stdio task.
        reference: A solution that passes the tests (``None`` when the data has none).
        check_program: HumanEval only: the original ``def check(candidate)`` program, the
            authoritative full test (``harness.run_check_program``); ``None`` elsewhere.
        setup: Trusted code run before the solution (e.g. MBPP's ``test_setup_code``).
        source: The source name (``"humaneval"``, ``"codeio"``, a file path).
    """

    id: str
    kind: str
    prompt: str
    entry_point: str | None = None
    tests: tuple[str, ...] = ()
    io_tests: tuple[tuple[str, str], ...] = ()
    reference: str | None = None
    check_program: str | None = None
    setup: str = ""
    source: str

    def __post_init__(self) -> None:
        if self.kind not in ("function", "stdio"):
            raise ValueError(f"CodeTask {self.id}: kind must be 'function' or 'stdio', got {self.kind!r}")
        if self.kind == "function" and not self.entry_point:
            raise ValueError(f"CodeTask {self.id}: a function task needs an entry_point")


def parse_python(source: str) -> ast.Module:
    """``ast.parse`` without SyntaxWarnings (data sets' own invalid escapes); parses only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)
