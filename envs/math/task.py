"""One math task (``MathTask``): the record every math source (``envs.math.data``) and
generator (``envs.math.generators``) produces. Its own module so that both can import it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MathTask"]


@dataclass(frozen=True)
class MathTask:
    """One math problem.

    Attributes:
        id: Unique within its source, prefixed by it: ``gsm8k/473``, ``algebra/12``.
        question: The problem statement shown to the model.
        answer: Gold final answer as text: a number, a fraction ``a/b`` or LaTeX.
        source: Where it came from (``gsm8k``, ``champ``, a generator name, a file stem).
        solution: Reference worked solution, when the source has one.
    """

    id: str
    question: str
    answer: str
    source: str
    solution: str | None = None
