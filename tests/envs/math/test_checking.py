"""Answer extraction and checking on tricky equivalents and on adversarial model text."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envs.math import checking
from envs.math.checking import (
    MAX_ANSWER_CHARS,
    MissingMathVerify,
    answers_match,
    extract_boxed,
    extract_printed_answer,
    gold_from_gsm8k_answer,
    gold_from_math_solution,
    normalize_answer,
)
from envs.parsing import MAX_PARSED_CHARS
from tests.envs.conftest import assert_linear_time, hostile_text, timed

# ---------------------------------------------------------------------------- extract_boxed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so the answer is \boxed{42}.", "42"),
        (r"\boxed{1} then \boxed{2}", "2"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{ \sqrt{\frac{a}{b}} }", r"\sqrt{\frac{a}{b}}"),
        (r"\fbox{7}", "7"),
        (r"\boxed{3} and finally \fbox{4}", "4"),
        (r"\boxed {5}", "5"),
        (r"$\boxed 5$", "5"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces do not count
        (r"\boxed{a \} b}", r"a \} b"),
        (r"\boxed{x = 3}", "x = 3"),
        ("\\boxed{ünïcödé √2}", "ünïcödé √2"),
    ],
)
def test_extract_boxed(text: str, expected: str) -> None:
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no box here",
        r"\boxed{",
        r"\boxed{unclosed {nested}",
        r"\boxed{}",
        r"\boxed{   }",
        r"\boxeds",
        "\\boxed",
    ],
)
def test_extract_boxed_none(text: str) -> None:
    assert extract_boxed(text) is None


def test_extract_boxed_reads_only_the_first_max_parsed_chars() -> None:
    box = "\\boxed{5}"
    assert extract_boxed("x" * (MAX_PARSED_CHARS - len(box)) + box) == "5"
    assert extract_boxed("x" * (MAX_PARSED_CHARS - len(box) + 1) + box) is None  # never closed


def test_extract_boxed_last_box_unclosed_is_none() -> None:
    # A response cut at max_new_tokens: the last box is incomplete, so there is no final answer.
    assert extract_boxed(r"\boxed{1} and then \boxed{2") is None


def test_extract_boxed_cuts_long_content_and_stays_linear() -> None:
    assert extract_boxed(r"\boxed{" + "9" * 10_000 + "}") == "9" * MAX_ANSWER_CHARS
    assert extract_boxed("x" * 20_000 + r"\boxed{" * 2_000 + "{" * 20_000 + "}" * 10) is None
    assert extract_boxed("}" * 60_000 + r"\boxed{12}") == "12"
    for unit in (r"\boxed{", "{", "}", r"\{", r"\boxed "):
        assert_linear_time(lambda size, unit=unit: timed(extract_boxed, hostile_text(unit, size)), unit)


def test_extract_boxed_non_string() -> None:
    assert extract_boxed(None) is None  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- printed answer


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        ("42\n", "42"),
        ("step 1\nstep 2\n  3/4  \n\n\n", "3/4"),
        ("a\r\nb\r\n", "b"),
        ("only", "only"),
        ("", None),
        ("\n \n\t\n", None),
    ],
)
def test_extract_printed_answer(stdout: str, expected: str | None) -> None:
    assert extract_printed_answer(stdout) == expected


def test_extract_printed_answer_bounded() -> None:
    assert extract_printed_answer("noise\n" * 20_000 + "7\n" + "\n" * 50_000) == "7"
    assert extract_printed_answer("x" * 100_000) == "x" * MAX_ANSWER_CHARS
    for unit in ("noise\n", "\n", "x", " \r"):
        assert_linear_time(lambda n, unit=unit: timed(extract_printed_answer, hostile_text(unit, n)), unit)


# ---------------------------------------------------------------------------- answers_match

EQUIVALENT = [
    ("18", "18"),
    ("18", r"\$18.00"),
    ("18", "$18"),
    ("18", "18 dollars"),
    ("18", "18.00"),
    ("18", "18 cm"),
    ("18", "18 square meters"),
    ("20", "20 cm^2"),
    ("12", "12 km/h"),
    ("5", "5 apples"),
    ("5", r"5 \text{ apples}"),
    ("18", r"\text{18 apples}"),
    ("18", r"\boxed{18 \text{ cm}}"),
    ("1000", "1,000"),
    ("1000", "1{,}000"),
    ("1000000", "1,000,000"),
    ("1000000", "1 000 000"),
    ("2500", "2,500 dollars"),
    ("1,000", "1000"),
    ("3", "x = 3"),
    ("3", "x=3"),
    ("7", "p(2) = 7"),
    ("2", "The answer is 2."),
    ("2", r"\boxed{2}"),
    ("2", "$2$"),
    ("2", r"\(2\)"),
    ("5", "5."),
    (r"\frac{1}{2}", "0.5"),
    ("1/2", r"\dfrac12"),
    ("3/4", r"\frac{3}{4}"),
    ("3/4", "0.75"),
    ("3/4", "6/8"),
    ("3.5", "7/2"),
    ("3.5", "3.50"),
    ("-5", "-5"),
    ("-7/2", "-3.5"),
    ("-7/2", r"-\frac{7}{2}"),
    ("-12", "\u221212"),  # unicode minus
    ("1/3", "0.333333"),  # math-verify rounds to 6 places
    ("100", "1e2"),  # printed floats
    ("0.3", "0.30000000000000004"),
    ("75", r"75\%"),  # percent: equal to p and to p/100
    ("10", "10%"),
    ("0.75", "75%"),
    (r"75\%", "75"),
    (r"\sqrt{2}/2", r"\frac{1}{\sqrt 2}"),
    (r"2\pi", r"2 \pi"),
    ("x=2, y=1", "x=2,y=1"),
    (r"\{1,2,3\}", r"\{3,2,1\}"),
    ("[-1, 1]", "[-1,1]"),
    ("18", r"10^{9999}-10^{9999}+18"),
    ("120", "5!"),
    ("n!", "n!"),
    ("30", "30^\\circ"),
    ("30", "30°"),
    ("3/4", r"\frac{3}{4} cup"),
    ("1000.5", r"\$1,000.50"),
    ("-5", r"-\$5"),
    ("2x+1", "y = 2x + 1"),
    ("0.01", "1e-2"),
]

DIFFERENT = [
    ("1/2", "2/1"),
    ("18", "180"),
    ("18", "1 8"),
    ("-5", "5"),
    ("5", "-5"),
    ("18", "18.0001"),
    ("1/3", "0.333"),
    ("75", "0.75"),  # no percent sign: 0.75 is not 75
    ("3", "x=3, y=4"),
    ("1", "x=2,y=1"),
    ("3", "3x"),
    ("2", "2 pi"),
    ("18", "18 or 19"),
    ("2", "2, 3"),
    ("5", "5!"),
    ("18", ""),
    ("18", "   "),
    ("18", r"\boxed{}"),
    ("18", "eighteen"),
    ("0", ""),
    ("x=2, y=1", "x=1, y=2"),
    (r"\sqrt{2}", "1.41"),
    ("30", "300°"),
    ("y=2x+1", "x = 2x + 1"),  # a different variable is a different answer
    ("15", "15 hours and 30 minutes"),
]


@pytest.mark.parametrize(("gold", "predicted"), EQUIVALENT)
def test_equivalent_answers_match(gold: str, predicted: str) -> None:
    assert answers_match(gold, predicted), (gold, predicted, normalize_answer(predicted))


@pytest.mark.parametrize(("gold", "predicted"), DIFFERENT)
def test_different_answers_do_not_match(gold: str, predicted: str) -> None:
    assert not answers_match(gold, predicted), (gold, predicted, normalize_answer(predicted))


def test_answers_match_non_strings_and_long_text() -> None:
    assert not answers_match("18", None)
    assert not answers_match(None, "18")  # type: ignore[arg-type]
    assert not answers_match("18", "1" * (MAX_ANSWER_CHARS + 1))
    # A long response is fine when it ends in a box: the box is the answer.
    assert answers_match("18", "reasoning " * 5_000 + r"so \boxed{18}")


def test_answers_match_off_the_main_thread() -> None:
    # math-verify's signal-based timeout raises off the main thread unless disabled.
    results: dict[str, bool] = {}

    def run() -> None:
        results["fraction"] = answers_match(r"\frac{3}{4}", "0.75")
        results["symbolic"] = answers_match(r"\sqrt{2}/2", r"\frac{1}{\sqrt{2}}")
        results["wrong"] = answers_match("18", "19.5")

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(60)
    assert results == {"fraction": True, "symbolic": True, "wrong": False}


def test_missing_math_verify_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "math_verify", None)  # makes `import math_verify` fail
    assert answers_match("18", "$18.00")  # the exact fast path needs no math-verify
    with pytest.raises(MissingMathVerify, match="pip install 'math-verify==0.9.0'"):
        answers_match(r"\frac{22}{7}", r"\frac{44}{14} + 0")


# ---------------------------------------------------------------------------- adversarial

ADVERSARIAL = [
    r"\boxed{9^{9^{9^{9}}}}",
    r"9^{9^{9}}",
    r"10^{10^{10}}",
    r"2^{2^{100}}",
    r"99^{99999}",
    "99999999999999999999^99999999999",
    r"1000000!",
    r"(10^{100})!",
    r"9!!!!",
    r"\binom{10^{9}}{5*10^8}",
    r"\prod_{k=1}^{10^9} k",
    r"\sum_{i=1}^{10^{10}} i",
    r"\exp(10^{9999})",
    r"\Gamma(10^{9})",
    r"e^{e^{e^{100}}}",
    r"(x+1)^{999}",
    r"(x+y+z)^{99}",
    r"(a+b+c+d+e+f)^{12}",
    "(a+b+c+d+e+f)" * 8,
    "(" * 200 + "1" + ")" * 200,
    "{" * 30 + "1" + "}" * 30,
    r"\frac{1}{" * 20 + "2" + "}" * 20,
    "1e999999999",
    r"\boxed{" * 5_000,
    "}" * 100_000,
    "x" * 100_000,
    "\x00\x01\ufffd\U0001f600",
]

PWNED = Path("/tmp/pwned_teamgym_math")
INJECTIONS = [
    rf"\boxed{{__import__('os').system('touch {PWNED}')}}",
    f"__import__('os').system('touch {PWNED}')",
    f"1+__import__('os').system('touch {PWNED}')",
    f"(lambda: open('{PWNED}', 'w'))()",
    f"[c for c in ().__class__.__base__.__subclasses__()] + 2*3 or open('{PWNED}','w')",
]


def _check_all(answers: list[str]) -> list[bool]:
    return [answers_match("18", answer) or answers_match(answer, "18") for answer in answers]


# Adversarial answers sympy may see: a float literal with a huge exponent, which it reads at once.
REACHES_MATH_VERIFY = {"1e999999999"}


@pytest.mark.parametrize("answer", ADVERSARIAL)
def test_adversarial_answer_is_refused_before_sympy_and_wrong(answer: str, monkeypatch) -> None:
    # What makes these slow (minutes or forever) is math-verify's parsing and sympy; the cost
    # guard must refuse them before either runs. Checked by what runs, not by a stopwatch.
    seen: list[str] = []
    real = checking._math_verify_match

    def spy(gold: str, predicted: str) -> bool:
        seen.append(predicted)
        return real(gold, predicted)

    monkeypatch.setattr(checking, "_math_verify_match", spy)
    assert answers_match("18", answer) is False
    assert answers_match(answer, "18") is False  # agreement checks compare two model answers
    assert seen == [] or answer in REACHES_MATH_VERIFY, seen


def test_adversarial_answers_off_the_main_thread() -> None:
    # No signal-based timeout exists off the main thread: only the cost guard bounds the work.
    box: dict[str, list[bool]] = {}
    worker = threading.Thread(target=lambda: box.setdefault("out", _check_all(ADVERSARIAL)), daemon=True)
    worker.start()
    worker.join(300)  # a hang guard: the guarded checks take well under a second
    assert not worker.is_alive(), "answers_match hung off the main thread"
    assert not any(box["out"])


def test_code_injection_runs_nothing() -> None:
    PWNED.unlink(missing_ok=True)
    assert not any(_check_all(INJECTIONS))
    assert not PWNED.exists()


_TOKENS = [*"0123456789+-*/^()[]{}!.,=%$ xyzabe\\", "\\frac", "\\sqrt", "\\boxed{", "\\text{", "\\exp", "99"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join))
def test_answers_match_never_raises_on_random_math_text(text: str) -> None:
    assert isinstance(answers_match("18", text), bool)
    assert isinstance(answers_match(text, r"\frac{1}{2}"), bool)
    assert isinstance(normalize_answer(text), str)


# ---------------------------------------------------------------------------- gold extraction


def test_gold_from_gsm8k_answer() -> None:
    assert gold_from_gsm8k_answer("2 + 2 = <<2+2=4>>4\n#### 4") == "4"
    assert gold_from_gsm8k_answer("...\n#### 1,250") == "1250"
    assert gold_from_gsm8k_answer("a #### 1 then #### -3.5 ") == "-3.5"
    with pytest.raises(ValueError, match="####"):
        gold_from_gsm8k_answer("no marker 4")
    with pytest.raises(ValueError, match="nothing after"):
        gold_from_gsm8k_answer("#### ")


def test_gold_from_math_solution() -> None:
    assert gold_from_math_solution(r"So $x = \boxed{\frac{\sqrt{3}}{2}}$.") == r"\frac{\sqrt{3}}{2}"
    assert gold_from_math_solution(r"\boxed{1} is wrong; \boxed{2}") == "2"
    with pytest.raises(ValueError, match="boxed"):
        gold_from_math_solution("The answer is 4.")


def test_a_sentence_holding_the_gold_number_is_not_an_answer():
    from envs.math.checking import looks_like_prose

    cut_reply = "Let me think. First the shark is 10 feet long, so in inches that is"
    assert looks_like_prose(cut_reply) and not answers_match("10", cut_reply)
    for answer in ("10 feet", "10 square feet", "\\text{10 apples}", "\\frac{20}{2}", "x = 10"):
        assert not looks_like_prose(answer) and answers_match("10", answer), answer
