"""Seeded math task generators: unlimited training tasks, each a pure function of its seed.

* ``gsm_style``: multi-step word problems in the style of GSM8K, 2-4 reasoning steps, integer
  answers, with a worked solution ending in ``#### N``; 16 templates written for this project
  (``envs.math.word_problems``, which says why not reasoning-gym's ``gsm_symbolic``).
* ``arithmetic``: expressions with 2-4 operations over integers, fractions or decimals;
  exact answers (``7``, ``-5/12``, ``3.75``).
* ``algebra``: a linear equation in one variable, a system of two linear equations, or a
  polynomial evaluated at a point; exact answers, possibly fractions.
* ``mixed``: one of the above, picked by the seed (half ``gsm_style``, a quarter each of the
  others): the default training source.

Every generator draws from ``envs.splits.generate_in_split``: the same seed always gives
the same task, and a question's text lands in the split of its seed (train seeds and test
seeds never produce the same question); a seed must lie in a split's range (``0 <= seed <
2 * TEST_SEED_START``, else ``ValueError``). Questions are ASCII. Fractions in answers are
``a/b`` in lowest terms (``-a/b`` when negative).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from envs.math.drawing import MAX_TRIES, Draw, decimal_text, fraction_text, generated_task
from envs.math.task import MathTask
from envs.math.word_problems import GSM_TEMPLATES, gsm_style

__all__ = ["GENERATORS", "GSM_TEMPLATES", "gsm_style", "arithmetic", "algebra", "mixed", "fraction_text"]

# ============================================================================ arithmetic

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
Expr = Any  # Fraction leaf or (op, left, right)


def _tree(d: Draw, ops: int, leaf: Callable[[], Fraction], operators: str) -> Expr:
    if ops == 0:
        return leaf()
    left_ops = d.int(0, ops - 1)
    left = _tree(d, left_ops, leaf, operators)
    return (d.pick(operators), left, _tree(d, ops - 1 - left_ops, leaf, operators))


def _evaluate(expr: Expr, steps: list[tuple[Fraction, str, Fraction, Fraction]]) -> Fraction:
    if isinstance(expr, Fraction):
        return expr
    op, left, right = expr
    a, b = _evaluate(left, steps), _evaluate(right, steps)
    if op == "+":
        value = a + b
    elif op == "-":
        value = a - b
    elif op == "*":
        value = a * b
    else:
        value = a / b  # ZeroDivisionError: the caller redraws
    steps.append((a, op, b, value))
    return value


def _render(expr: Expr, number: Callable[[Fraction], str]) -> str:
    if isinstance(expr, Fraction):
        text = number(expr)
        return f"({text})" if expr < 0 or "/" in text else text
    op, left, right = expr
    parts = []
    for child, is_right in ((left, False), (right, True)):
        text = _render(child, number)
        if not isinstance(child, Fraction):
            mine, theirs = _PRECEDENCE[op], _PRECEDENCE[child[0]]
            if theirs < mine or (is_right and theirs == mine and op in "-/"):
                text = f"({text})"
        parts.append(text)
    return f"{parts[0]} {op} {parts[1]}"


def arithmetic(seed: int) -> MathTask:
    """A 2-4 operation expression over integers, fractions or decimals, with an exact answer."""

    def make(d: Draw) -> tuple[str, list[str], str]:
        kind = d.pick(["integer", "integer", "fraction", "decimal"])
        leaves: dict[str, Callable[[], Fraction]] = {
            "integer": lambda: Fraction(d.int(-12, 30)),
            "fraction": lambda: Fraction(d.int(1, 9), d.int(2, 9)),
            "decimal": lambda: Fraction(d.int(1, 999), d.pick([10, 100])),
        }
        leaf = leaves[kind]
        operators = "+-*" if kind == "decimal" else "+-*/"  # decimals stay terminating
        number = decimal_text if kind == "decimal" else fraction_text
        for _ in range(MAX_TRIES):
            expr = _tree(d, d.int(2, 4), leaf, operators)
            steps: list[tuple[Fraction, str, Fraction, Fraction]] = []
            try:
                value = _evaluate(expr, steps)
            except ZeroDivisionError:
                continue
            values = [s[3] for s in steps]
            if kind == "integer" and any(v.denominator != 1 or abs(v) > 10_000 for v in values):
                continue
            if kind == "fraction" and (any(v.denominator > 200 for v in values) or value.denominator == 1):
                continue
            if kind == "decimal" and any(abs(v) > 100_000 for v in values):
                continue
            break
        else:
            raise RuntimeError("arithmetic: no valid expression drawn")  # practically unreachable
        answer = number(value)
        how = "exact value (a fraction in lowest terms)" if kind == "fraction" else "value"
        question = f"Compute the {how} of {_render(expr, number)}."
        lines = [f"{number(a)} {op} {number(b)} = {number(v)}" for a, op, b, v in steps]
        return question, ["Work from the innermost operations out:", *lines], answer

    return generated_task("arithmetic", seed, make)


# ============================================================================ algebra


def _term(coefficient: Fraction | int, variable: str, first: bool) -> str:
    """``3x``, ``- x``, ``+ 2x`` (or a constant when ``variable`` is empty)."""
    c = Fraction(coefficient)
    sign = "-" if c < 0 else "+"
    magnitude = abs(c)
    body = fraction_text(magnitude) if not variable or magnitude != 1 else ""
    if variable and magnitude.denominator != 1:
        body = f"({body})"
    body += variable
    if first:
        return f"-{body}" if c < 0 else body
    return f"{sign} {body}"


def _linear_text(terms: list[tuple[int | Fraction, str]]) -> str:
    parts = [(c, v) for c, v in terms if c != 0]
    if not parts:
        return "0"
    return " ".join(_term(c, v, i == 0) for i, (c, v) in enumerate(parts))


def _polynomial_text(coefficients: list[int], variable: str) -> str:
    degree = len(coefficients) - 1
    terms = []
    for power, c in zip(range(degree, -1, -1), coefficients, strict=True):
        name = "" if power == 0 else variable if power == 1 else f"{variable}^{power}"
        terms.append((c, name))
    return _linear_text(terms)


def _linear_equation(d: Draw) -> tuple[str, list[str], str]:
    var = d.pick(["x", "y", "n", "t", "k"])
    for _ in range(MAX_TRIES):
        a, c = d.int(-9, 9), d.int(-9, 9)
        if a != c and a != 0:
            break
    q = abs(a - c)
    denominator = d.pick([dv for dv in range(1, q + 1) if q % dv == 0]) if d.chance(0.35) else 1
    x0 = Fraction(d.int(-12, 12), denominator)
    b = d.int(-20, 20)
    rhs_constant = int((a - c) * x0 + b)
    if d.chance(0.4) and a not in (1, -1):
        inner = d.int(-9, 9)
        outer = b - a * inner
        left = f"{a}({var} {'+' if inner >= 0 else '-'} {abs(inner)})" + (
            f" {'+' if outer >= 0 else '-'} {abs(outer)}" if outer else ""
        )
        expand = [f"Expand the left side: {_linear_text([(a, var), (b, '')])}."]
    else:
        left = _linear_text([(a, var), (b, "")])
        expand = []
    right = _linear_text([(c, var), (rhs_constant, "")])
    question = f"Solve for {var}: {left} = {right}."
    answer = fraction_text(x0)
    steps = [
        *expand,
        f"Collect the {var} terms on the left and the constants on the right: "
        f"{_linear_text([(a - c, var)])} = {rhs_constant - b}.",
        f"Divide by {a - c}: {var} = {fraction_text(Fraction(rhs_constant - b, a - c))}.",
    ]
    return question, steps, answer


def _linear_system(d: Draw) -> tuple[str, list[str], str]:
    for _ in range(MAX_TRIES):
        a1, b1, a2, b2 = (d.int(-6, 6) for _ in range(4))
        det = a1 * b2 - a2 * b1
        if det != 0 and 0 not in (a1, b1) and (a2, b2) != (0, 0):
            break
    if d.chance(0.7):
        x, y = Fraction(d.int(-9, 9)), Fraction(d.int(-9, 9))
        c1, c2 = int(a1 * x + b1 * y), int(a2 * x + b2 * y)
    else:
        c1, c2 = d.int(-20, 20), d.int(-20, 20)
        x, y = Fraction(c1 * b2 - c2 * b1, det), Fraction(a1 * c2 - a2 * c1, det)
    ask = d.pick(["x", "y", "x + y"])
    value = {"x": x, "y": y, "x + y": x + y}[ask]
    e1 = _linear_text([(a1, "x"), (b1, "y")])
    e2 = _linear_text([(a2, "x"), (b2, "y")])
    question = f"Solve the system {e1} = {c1} and {e2} = {c2}. What is {ask}?"
    steps = [
        f"The determinant is {a1} * {b2} - {a2} * {b1} = {det}.",
        f"x = ({c1} * {b2} - {c2} * {b1}) / {det} = {fraction_text(x)}.",
        f"y = ({a1} * {c2} - {a2} * {c1}) / {det} = {fraction_text(y)}.",
    ]
    if ask == "x + y":
        steps.append(f"x + y = {fraction_text(x)} + {fraction_text(y)} = {fraction_text(value)}.")
    return question, steps, fraction_text(value)


def _polynomial_value(d: Draw) -> tuple[str, list[str], str]:
    degree = d.int(2, 4)
    coefficients = [d.pick([c for c in range(-6, 7) if c != 0])] + [d.int(-9, 9) for _ in range(degree)]
    name = d.pick(["p", "f", "g", "q"])
    if d.chance(0.75):
        point = Fraction(d.int(-4, 4))
    else:
        point = Fraction(d.pick([-1, 1]) * d.int(1, 3), d.pick([2, 3]))
    value = sum(c * point ** (degree - i) for i, c in enumerate(coefficients))
    shown = fraction_text(point)
    argument = f"({shown})" if point < 0 or point.denominator != 1 else shown
    question = f"Let {name}(x) = {_polynomial_text(coefficients, 'x')}. What is {name}({shown})?"
    steps = []
    for i, c in enumerate(coefficients):
        power = degree - i
        if c != 0 and power > 0:
            shown_power = argument if power == 1 else f"{argument}^{power}"
            steps.append(f"{c} * {shown_power} = {fraction_text(c * point**power)}")
    if coefficients[-1] != 0:
        steps.append(f"The constant term is {coefficients[-1]}.")
    steps.append(f"Adding the terms: {name}({shown}) = {fraction_text(value)}.")
    return question, steps, fraction_text(value)


def algebra(seed: int) -> MathTask:
    """A linear equation, a 2x2 linear system or a polynomial value; exact answer."""

    def make(d: Draw) -> tuple[str, list[str], str]:
        return d.pick([_linear_equation, _linear_system, _polynomial_value])(d)

    return generated_task("algebra", seed, make)


# ============================================================================ mixture

_MIXTURE = (("gsm_style", 0.5), ("arithmetic", 0.25), ("algebra", 0.25))
_MIXTURE_STREAM = 0x6D6978  # separates the mixture draw from the generators' own streams


def mixed(seed: int) -> MathTask:
    """One of ``gsm_style`` (1/2), ``arithmetic`` (1/4), ``algebra`` (1/4), picked by the seed.

    The task is exactly that generator's task for the same seed (same id, e.g. ``algebra/7``).
    """
    if seed < 0:
        raise ValueError(f"task seed must be >= 0, got {seed}")
    names = [name for name, _ in _MIXTURE]
    weights = [weight for _, weight in _MIXTURE]
    choice = np.random.default_rng([seed, _MIXTURE_STREAM]).choice(len(names), p=weights)
    return GENERATORS[names[int(choice)]](seed)


GENERATORS: dict[str, Callable[[int], MathTask]] = {
    "gsm_style": gsm_style,
    "arithmetic": arithmetic,
    "algebra": algebra,
    "mixed": mixed,
}
