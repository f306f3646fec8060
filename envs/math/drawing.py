"""What every math task generator shares: seeded draws, exact number formatting, and the
wrapper that keeps a generated question in its seed's split (``envs.splits.generate_in_split``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from envs.math.task import MathTask
from envs.splits import generate_in_split

NAMES = (
    "Ava Ben Chloe Diego Elena Farah Gus Hana Ivan Jada Kofi Lena Mateo Nia Omar Priya Quinn Rosa "
    "Sami Tariq Uma Viktor Wen Yusuf Zoe Arjun Bea Cyrus Dalia Emeka Fiona Goran Ines Joon Kira"
).split()


MAX_TRIES = 1000  # redraws inside one generation attempt (all from the same seeded stream)


class Draw:
    """Small helpers over one ``np.random.Generator`` (inclusive integer ranges)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def int(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))

    def pick(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def names(self, k: int) -> list[str]:
        return [NAMES[i] for i in self.rng.choice(len(NAMES), size=k, replace=False)]


def fraction_text(value: Fraction) -> str:
    """``7``, ``-5/12``: an exact value as an integer or a fraction in lowest terms."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def decimal_text(value: Fraction) -> str:
    """A terminating value as a decimal (``3.75``); otherwise as a fraction."""
    for places in range(13):
        scaled = value * 10**places
        if scaled.denominator == 1:
            if places == 0:
                return str(scaled.numerator)
            sign = "-" if scaled < 0 else ""
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            return f"{sign}{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return fraction_text(value)


def _solution(steps: list[str], answer: str) -> str:
    return "\n".join(steps) + f"\n#### {answer}"


def generated_task(name: str, seed: int, make: Callable[[Draw], tuple[str, list[str], str]]) -> MathTask:
    def generate(rng: np.random.Generator) -> tuple[str, list[str], str]:
        return make(Draw(rng))

    question, steps, answer = generate_in_split(seed, generate, fingerprint=lambda level: level[0])
    return MathTask(
        id=f"{name}/{seed}", question=question, answer=answer, source=name, solution=_solution(steps, answer)
    )
