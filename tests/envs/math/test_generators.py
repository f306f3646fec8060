"""Generators: determinism, variety, and answers re-derived independently from the question text."""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import pytest

from envs.math.checking import answers_match, gold_from_gsm8k_answer
from envs.math.data import MathTask
from envs.math.generators import GENERATORS, GSM_TEMPLATES, algebra, arithmetic, gsm_style, mixed
from envs.splits import TEST_SEED_START, fingerprint_split

NAMES = sorted(GENERATORS)


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_task(name: str) -> None:
    generate = GENERATORS[name]
    for seed in (0, 1, 17, 123_456, TEST_SEED_START + 5):
        assert generate(seed) == generate(seed)


@pytest.mark.parametrize("name", NAMES)
def test_seeds_give_varied_tasks(name: str) -> None:
    tasks = [GENERATORS[name](seed) for seed in range(200)]
    assert len({t.question for t in tasks}) >= 190
    assert len({t.id for t in tasks}) == 200
    assert sum(a.question != b.question for a, b in zip(tasks, tasks[1:], strict=False)) >= 195


@pytest.mark.parametrize("name", NAMES)
def test_task_fields_are_well_formed(name: str) -> None:
    for seed in range(100):
        task = GENERATORS[name](seed)
        assert isinstance(task, MathTask)
        assert task.id == f"{task.source}/{seed}"
        assert task.question.isascii() and task.question.strip() == task.question
        assert task.answer and task.solution is not None
        # The worked solution ends with the answer, and the checker accepts it.
        assert gold_from_gsm8k_answer(task.solution) == task.answer
        assert answers_match(task.answer, task.answer)


@pytest.mark.parametrize("name", NAMES)
def test_question_content_lands_in_the_seed_split(name: str) -> None:
    for seed in [*range(30), *range(TEST_SEED_START, TEST_SEED_START + 30)]:
        task = GENERATORS[name](seed)
        assert fingerprint_split(task.question) == ("train" if seed < TEST_SEED_START else "test")


def test_negative_seed_is_refused() -> None:
    for generate in GENERATORS.values():
        with pytest.raises(ValueError):
            generate(-1)


def test_mixed_draws_from_all_three_with_the_declared_weights() -> None:
    tasks = [mixed(seed) for seed in range(1000)]
    counts = Counter(t.source for t in tasks)
    assert set(counts) == {"gsm_style", "arithmetic", "algebra"}
    assert 420 <= counts["gsm_style"] <= 580
    assert 180 <= counts["arithmetic"] <= 320 and 180 <= counts["algebra"] <= 320
    for seed, task in enumerate(tasks[:50]):
        assert task == GENERATORS[task.source](seed)  # same task (and id) as the generator's own


# ---------------------------------------------------------------------------- gsm_style

# Template -> (a phrase that identifies it, answer from the integers of the question in order).
Rule = Callable[[list[int]], Fraction]


def _frac(a: int, b: int) -> Fraction:
    return Fraction(a, b)


GSM_RULES: dict[str, tuple[str, Rule]] = {
    "shop_discount": ("delivery fee", lambda n: n[0] * n[1] * _frac(100 - n[2], 100) + n[3]),
    "work_rate": ("keeps working alone", lambda n: (n[0] + n[1]) * n[2] + n[0] * n[3]),
    "ages": ("times as old as", lambda n: _frac(n[2] - n[1], n[0]) + n[1]),
    "signups": ("signed up for", lambda n: n[0] * _frac(n[1], 100) * (1 - _frac(n[2], 100))),
    "ribbon": ("-meter ribbon", lambda n: _frac(n[0] * 100, n[1]) - n[2]),
    "practice": ("minutes every day", lambda n: _frac(n[0] * 7 * n[1], 60)),
    "recipe": ("cups of flour", lambda n: Fraction(math.ceil(_frac(n[1] * n[2], n[0] * n[3])))),
    "savings": ("exactly enough money", lambda n: _frac(n[1] - n[0], n[2] - n[3])),
    "travel": ("kilometers per hour for", lambda n: n[0] * n[1] + _frac(n[2] * n[3], 60)),
    "harvest": ("rows of", lambda n: _frac(n[0] * n[1] * n[2] - n[3], n[4])),
    "profit": ("of profit", lambda n: Fraction(n[0] * n[1] + n[2] * n[3] - n[4])),
    "change": ("of change", lambda n: Fraction(n[4] * n[5] - n[0] * n[2] - n[1] * n[3])),
    "fuel": ("liters of fuel", lambda n: 2 * n[2] * _frac(n[0], n[1]) * n[3]),
    "inventory": ("on Tuesday", lambda n: Fraction(n[0] * n[1] - n[2] * (1 + n[3]))),
    "shared_bill": ("split the whole bill", lambda n: _frac(n[1] * n[2] + n[3] * n[4] + n[5], n[0])),
    "reading": ("pages are left", lambda n: Fraction(n[0] - n[3] * (5 * n[1] + 2 * n[2]))),
}


def test_every_template_has_an_independent_rule() -> None:
    assert set(GSM_RULES) == set(GSM_TEMPLATES)
    assert len(GSM_TEMPLATES) >= 12


def test_gsm_style_answers_rederived_from_the_question() -> None:
    seen: Counter[str] = Counter()
    for seed in range(800):
        task = gsm_style(seed)
        matches = [name for name, (phrase, _) in GSM_RULES.items() if phrase in task.question]
        assert len(matches) == 1, (task.question, matches)
        phrase, rule = GSM_RULES[matches[0]]
        numbers = [int(x) for x in re.findall(r"\d+", task.question)]
        expected = rule(numbers)
        assert expected.denominator == 1 and expected > 0, (task.question, expected)
        assert task.answer == str(expected.numerator), (task.question, task.answer, expected)
        seen[matches[0]] += 1
        steps = task.solution.splitlines()
        assert 2 <= len(steps) - 1 <= 4 and steps[-1] == f"#### {task.answer}"  # 2-4 steps
    assert set(seen) == set(GSM_TEMPLATES), seen  # every template was exercised


# ---------------------------------------------------------------------------- arithmetic / algebra


def _evaluate(source: str, variables: dict[str, Fraction] | None = None) -> Fraction:
    """Exact value of a +-*/ and ** expression; number literals read exactly from the text."""
    variables = variables or {}
    tree = ast.parse(source, mode="eval")

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return Fraction(ast.get_source_segment(source, node))  # type: ignore[arg-type]
        if isinstance(node, ast.Name):
            return variables[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = walk(node.left), walk(node.right)
            ops: dict[type, Callable[[Fraction, Fraction], Fraction]] = {
                ast.Add: lambda x, y: x + y,
                ast.Sub: lambda x, y: x - y,
                ast.Mult: lambda x, y: x * y,
                ast.Div: lambda x, y: x / y,
                ast.Pow: lambda x, y: x ** int(y),
            }
            return ops[type(node.op)](a, b)
        raise AssertionError(f"unexpected syntax in {source!r}: {ast.dump(node)}")

    return walk(tree)


def _python(expression: str) -> str:
    """Implicit multiplication (``3x``, ``2(x - 1)``, ``(1/2)x``) and ``^`` as Python."""
    expression = expression.replace("^", "**")
    return re.sub(r"(?<=[\d)a-z])\s*(?=[a-z(])", "*", expression)


def test_arithmetic_answers_rederived() -> None:
    kinds: Counter[str] = Counter()
    for seed in range(300):
        task = arithmetic(seed)
        match = re.fullmatch(
            r"Compute the (?:exact )?value (?:\(a fraction in lowest terms\) )?of (.+)\.", task.question
        )
        assert match, task.question
        value = _evaluate(match.group(1))
        assert Fraction(task.answer) == value, (task.question, task.answer, value)
        if "/" in task.answer:
            numerator, denominator = (int(p) for p in task.answer.split("/"))
            assert math.gcd(numerator, denominator) == 1 and denominator > 1  # lowest terms
        kinds[
            "fraction" if "fraction" in task.question else "decimal" if "." in match.group(1) else "integer"
        ] += 1
    assert min(kinds.values()) >= 30, kinds


def _solve_2x2(e1: str, c1: Fraction, e2: str, c2: Fraction) -> tuple[Fraction, Fraction]:
    def coefficients(expression: str) -> tuple[Fraction, Fraction]:
        at = lambda x, y: _evaluate(_python(expression), {"x": Fraction(x), "y": Fraction(y)})  # noqa: E731
        return at(1, 0) - at(0, 0), at(0, 1) - at(0, 0)

    (a1, b1), (a2, b2) = coefficients(e1), coefficients(e2)
    # Eliminate x from the second equation.
    y = (c2 * a1 - c1 * a2) / (b2 * a1 - b1 * a2)
    x = (c1 - b1 * y) / a1 if a1 else (c2 - b2 * y) / a2
    return x, y


def test_algebra_answers_substitute_back() -> None:
    kinds: Counter[str] = Counter()
    for seed in range(300):
        task = algebra(seed)
        answer = Fraction(task.answer)
        if task.question.startswith("Solve for"):
            match = re.fullmatch(r"Solve for ([a-z]): (.+) = (.+)\.", task.question)
            assert match, task.question
            var, left, right = match.groups()
            env = {var: answer}
            assert _evaluate(_python(left), env) == _evaluate(_python(right), env), task.question
            # ... and it is the only solution: the equation is not an identity.
            env_other = {var: answer + 1}
            assert _evaluate(_python(left), env_other) != _evaluate(_python(right), env_other)
            kinds["linear"] += 1
        elif task.question.startswith("Solve the system"):
            match = re.fullmatch(
                r"Solve the system (.+) = (-?\d+) and (.+) = (-?\d+)\. What is (x|y|x \+ y)\?", task.question
            )
            assert match, task.question
            e1, c1, e2, c2, ask = match.groups()
            x, y = _solve_2x2(e1, Fraction(c1), e2, Fraction(c2))
            assert answer == {"x": x, "y": y, "x + y": x + y}[ask], task.question
            kinds["system"] += 1
        else:
            match = re.fullmatch(r"Let ([a-z])\(x\) = (.+)\. What is \1\((.+)\)\?", task.question)
            assert match, task.question
            _, polynomial, point = match.groups()
            assert _evaluate(_python(polynomial), {"x": Fraction(point)}) == answer, task.question
            kinds["polynomial"] += 1
        assert answer.denominator == 1 or "/" in task.answer
    assert min(kinds.values()) >= 60, kinds
    assert any("/" in algebra(seed).answer for seed in range(300))  # fractional answers occur
