r"""Reading final answers out of model text and judging them against a gold answer.

Model output is adversarial: empty, 100 kB, non-ASCII, unbalanced braces, code. Every
function here is total (never raises on any ``str``) and does bounded work:

* ``extract_boxed``: the content of the last ``\boxed{...}`` / ``\fbox{...}``, one linear scan
  of the text's first ``envs.parsing.MAX_PARSED_CHARS`` characters.
* ``extract_printed_answer``: the last non-empty line a program printed (tool agents answer
  by printing their result).
* ``answers_match``: is a predicted answer equal to the gold answer? A cheap exact path
  (normalised text, ``fractions.Fraction``) first, then ``math-verify`` for everything else
  (LaTeX, symbolic equivalence, sets, equations).
* ``gold_from_gsm8k_answer`` / ``gold_from_math_solution``: the gold answer of a GSM8K or a
  MATH-style record (these raise ``ValueError`` on a record without one: they read data
  files, not model text).

What counts as the same answer (``answers_match``):

* formatting: ``18`` = ``18.00`` = ``\$18`` = ``18 dollars`` = ``18 cm`` = ``5 apples``
  (trailing unit words are dropped) = ``1,000``-style thousands separators = ``x = 18``
  (one variable assigned) = ``The answer is 18.`` = ``\boxed{18}``;
* exact values: ``3/4`` = ``\frac{3}{4}`` = ``0.75``; a decimal that rounds to the gold at 6
  places (``0.333333`` for ``1/3``) is accepted by ``math-verify``; ``18.0001`` is not ``18``;
* percent: ``p%`` (or ``p\%``) on either side equals both ``p`` and ``p/100``. GSM8K asks
  "what percentage ..." with gold ``10`` where a model writes ``10%``, while a MATH-style gold
  ``0.75`` may be written ``75%``. A bare ``0.75`` does not match a gold of ``75``.
* a prediction longer than ``MAX_ANSWER_CHARS`` (after taking its last ``\boxed{}``) is
  wrong: a final answer is short.

Cost guard. ``math-verify`` parses LaTeX with an ANTLR grammar into sympy and compares with
``simplify``/``evalf``. Some short inputs make that take minutes or forever (measured):
exponent towers (``9^{9^{9^{9}}}``), ``(10^{100})!``, ``\binom{10^{9}}{5*10^8}``,
``\prod_{k=1}^{10^9} k``, ``\exp(10^{9999})``, ``\Gamma(10^{9})``, ``(x+1)^{999}``,
``(a+b+c+d+e+f)^{12}``, and 20 nested brackets (the parser is super-linear in the depth).
Its own timeout uses ``signal.alarm``, which works only in the main thread, so we pass a
timeout there (``_MATH_VERIFY_TIMEOUT_S``) and ``None`` in any other thread (it raises
otherwise). Off the main thread nothing could stop such a computation, so before sympy sees
either side, ``answers_match`` judges wrong any answer that is outside a conservative
whitelist (``_safe_to_parse``): printable ASCII plus ``π×÷√≤≥°·``; LaTeX commands from
``_SAFE_COMMANDS`` only (no ``\exp``, ``\Gamma``, ``\sum``, ``\prod``, ``\int``, ``\lim``);
bracket depth <= ``_MAX_DEPTH``; no power or factorial inside an exponent; exponents of at
most 4 digits on a plain number and 2 digits otherwise; factorials only of a <= 3 digit
number or a single letter; ``\binom`` only with short literals and no powers; and an
estimated polynomial expansion of at most ``_MAX_MONOMIALS`` terms (from the number of
distinct letters and the total degree). Correct final answers almost never fall outside
it; a policy that writes its answer unsimplified loses that reward. This is a heuristic:
a random-token fuzz (10,000 strings over digits, operators, ``\frac``, ``\sqrt``, ``\log``,
``\sin``, ``\binom``, ``^{``, ...) run off the main thread took at most 3 s per pair, but a
caller that checks answers in worker threads relies on it alone.

Both arguments of ``answers_match`` go through the same normalisation and guard: the env also
uses it to test whether two agents' answers agree, where neither side is trusted.

Why checking answer *text* in-process is acceptable (model *code* runs only in the sandbox):
``math_verify/parser.py`` (0.9.0) turns text into sympy two ways. LaTeX goes through
``latex2sympy2_extended``'s ANTLR parser, which builds sympy objects node by node (its only
``parse_expr`` call is on caller-given variable values, never on the input). Plain
expressions go through ``sympy.parse_expr`` -- which is ``eval`` -- but only for a regex
match ``expr_re`` whose character class is digits, ``.``, whitespace and the operators
``+ - * × / ^ ( ) ÷`` (no letters, quotes, underscores or brackets other than parentheses),
so no name, attribute or call can reach ``eval``. We checked this by reading
``lazy_expr_regex`` and ``extract_expr`` there; ``tests/envs/math/test_checking.py`` feeds
``__import__('os').system(...)`` and checks nothing ran. Pin ``math-verify==0.9.0`` and
re-read that function before upgrading.

``math_verify`` (and sympy) are imported on the first call that needs them, not on import.
Math-verify restores the previous ``SIGALRM`` handler but cancels any pending alarm of the
caller's own.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from fractions import Fraction
from typing import Any

from envs.parsing import MAX_PARSED_CHARS

__all__ = [
    "MAX_ANSWER_CHARS",
    "extract_boxed",
    "extract_printed_answer",
    "normalize_answer",
    "answers_match",
    "looks_like_prose",
    "MissingMathVerify",
    "gold_from_gsm8k_answer",
    "gold_from_math_solution",
]

MAX_ANSWER_CHARS = 300
"""Longest answer text kept by the extractors and judged by ``answers_match``."""

_MATH_VERIFY_TIMEOUT_S = 3  # per parse / per comparison, main thread only (signal.alarm)
_MAX_DEPTH = 6  # bracket nesting allowed in a prediction (parser cost grows fast with depth)

# --------------------------------------------------------------------------- extraction

_BOX_COMMANDS = ("\\boxed", "\\fbox")


def extract_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``) in ``text``, stripped.

    Braces are matched with nesting; escaped braces ``\{ \}`` do not count. ``\boxed 5``
    (no braces) yields ``5``. The content is cut to ``MAX_ANSWER_CHARS``. ``None`` when there
    is no box, when the last box is never closed (a response cut at ``max_new_tokens``), or
    when it is empty. Reads the first ``MAX_PARSED_CHARS`` characters (a box after them
    is not seen). One backwards search plus one forward scan: linear in their number.
    """
    if not isinstance(text, str):
        return None
    text = text[:MAX_PARSED_CHARS]
    start = max(text.rfind(command) for command in _BOX_COMMANDS)
    if start < 0:
        return None
    command = next(c for c in _BOX_COMMANDS if text.startswith(c, start))
    i = start + len(command)
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    if i >= n:
        return None
    if text[i] != "{":
        if i == start + len(command):  # e.g. "\boxeds": not a box command
            return None
        token = re.match(r"[^\s$]+", text[i : i + MAX_ANSWER_CHARS])  # "\boxed 5"
        return token.group(0) if token else None
    depth = 0
    j = i
    while j < n:
        char = text[j]
        if char == "\\":
            j += 2  # skip the escaped character (\{, \}, \\)
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                content = text[i + 1 : j].strip()
                return content[:MAX_ANSWER_CHARS] or None
        j += 1
    return None


def extract_printed_answer(stdout: str) -> str | None:
    """The last non-empty line of a program's output, stripped and cut to ``MAX_ANSWER_CHARS``.

    ``None`` for output with no visible line. Scans backwards from the end only as far as
    the last line, so a 100 kB output costs no more than its last line.
    """
    if not isinstance(stdout, str):
        return None
    end = len(stdout)
    while end > 0:
        start = max(stdout.rfind("\n", 0, end), stdout.rfind("\r", 0, end)) + 1
        line = stdout[start:end].strip()
        if line:
            return line[:MAX_ANSWER_CHARS]
        end = start - 1
    return None


# --------------------------------------------------------------------------- normalisation

_ENCLOSING = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_ANSWER_PREFIX = re.compile(r"^(?:the\s+)?(?:final\s+)?answer\s*(?:is\s*:?|:|=)\s*", re.IGNORECASE)
_APPROX_PREFIX = re.compile(r"^(?:\\approx|≈|~)\s*")
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textrm|textit|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_LATEX_SPACES = re.compile(r"\\[,;:! ]|\\q?quad\b")
_THOUSANDS = re.compile(r"(?<=\d)(?:,|\{,\}| )(?=\d{3}(?!\d))")
_CURRENCY_PREFIX = re.compile(r"^([+-]?)\s*(?:\$|€|£|¥|₹|USD\s*|US\$)\s*")
_ASSIGNMENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,9}(?:\([^()=]{0,20}\))?\s*=(?!=)\s*(?P<rhs>[^=]+)$")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:/\d+)?"
_NUMBER_OR_FRACTION = rf"{_NUMBER}|[+-]?\\frac\{{\d+\}}\{{\d+\}}"
_NUMBER_WITH_UNIT = re.compile(  # "18 cm", "5 apples", "12 km/h", "20 cm^2", "\frac{3}{4} cup"
    rf"^(?P<num>{_NUMBER_OR_FRACTION})\s*(?P<pct>%?)\s*"
    r"(?P<unit>[A-Za-z][A-Za-z .'/-]*?)(?:\^\{?[23]\}?)?\s*$"
)
_DEGREES = re.compile(r"(?<=\d)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree)$")
_SINGLE_LETTER_UNITS = {"m", "g", "s", "h", "l", "L"}
_NOT_UNITS = {"pi", "sqrt", "ln", "log", "sin", "cos", "tan", "exp", "mod", "i", "e"}


def _strip_enclosing(s: str) -> str:
    for _ in range(3):
        for left, right in _ENCLOSING:
            if len(s) > len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left) : -len(right)].strip()
    return s


def _drop_unit(s: str) -> str:
    match = _NUMBER_WITH_UNIT.match(s)
    if not match:
        return s
    unit = match.group("unit").strip()
    words = [w for w in re.split(r"[ ./-]+", unit) if w]
    if any((len(w) < 2 and w not in _SINGLE_LETTER_UNITS) or w.lower() in _NOT_UNITS for w in words):
        return s
    return match.group("num") + match.group("pct")


def normalize_answer(text: str) -> str:
    r"""A canonical short form of an answer text (used before comparing; never raises).

    Takes the last ``\boxed{}`` if any; drops enclosing ``$ $``/``\( \)``/``\[ \]``, an
    "answer is" prefix, ``\text{}``-style wrappers, LaTeX spacing, ``\left``/``\right``,
    ``\dfrac``/``\tfrac`` (to ``\frac``), thousands separators, a currency sign, a trailing
    full stop, a degree sign or trailing unit words after a number, and ``x =`` before a number.
    """
    if not isinstance(text, str):
        return ""
    s = text.strip()
    if any(command in s for command in _BOX_COMMANDS):
        s = extract_boxed(s) or s
    if len(s) > 4 * MAX_ANSWER_CHARS:  # too long to be an answer; keep the work bounded
        return s[: 4 * MAX_ANSWER_CHARS]
    s = _strip_enclosing(s)
    s = _ANSWER_PREFIX.sub("", s)
    s = _strip_enclosing(s.rstrip(" .;,"))
    s = _APPROX_PREFIX.sub("", s)
    for _ in range(2):  # \text{\textbf{..}} at most two levels
        s = _TEXT_COMMAND.sub(lambda m: " " + m.group(1) + " ", s)
    s = _LATEX_SPACES.sub(" ", s).replace("\\left", "").replace("\\right", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\%", "%")
    s = s.replace("\\$", "$").replace("−", "-")
    s = _THOUSANDS.sub("", s.strip())
    s = _CURRENCY_PREFIX.sub(r"\1", s).strip().rstrip(" .;,")
    s = _drop_unit(_DEGREES.sub("", s))
    assignment = _ASSIGNMENT.match(s)
    if assignment and not re.search(r"[A-Za-z,]", assignment.group("rhs")):  # x = 3, not y = 2x
        s = assignment.group("rhs").strip()
    return " ".join(s.split())


_FRACTION_LATEX = re.compile(r"^([+-]?)\\frac\s*\{\s*([+-]?\d+)\s*\}\s*\{\s*([+-]?\d+)\s*\}$")
_PLAIN_NUMBER = re.compile(rf"^{_NUMBER}$|^[+-]?\d+(?:\.\d+)?[eE][+-]?\d{{1,3}}$")  # 1.5e3 (printed floats)


def _exact_value(s: str) -> tuple[Fraction, bool, bool] | None:
    """``(value, is_percent, is_integer_literal)`` of a plain number, fraction or percent."""
    percent = s.endswith("%")
    if percent:
        s = s[:-1].strip()
    match = _FRACTION_LATEX.match(s)
    try:
        if match:
            sign, numerator, denominator = match.groups()
            value = Fraction(int(numerator), int(denominator))
            return (-value if sign == "-" else value), percent, False
        if _PLAIN_NUMBER.match(s) and len(s) <= 60:
            return Fraction(s), percent, not any(c in s for c in "/.eE")
    except (ValueError, ZeroDivisionError):
        return None
    return None


def _candidates(value: Fraction, percent: bool) -> set[Fraction]:
    return {value, value / 100} if percent else {value}


# --------------------------------------------------------------------------- cost guard

# LaTeX commands a prediction may use before it reaches sympy. Left out on purpose: \exp and
# \Gamma (exp(10^9999), Gamma(10^9) do not finish), \sum \prod \int \lim (unbounded work),
# and everything unknown. A prediction with another command is judged wrong.
_SAFE_COMMANDS = frozenset(
    "frac sqrt pi cdot times div pm mp infty le leq ge geq neq ne lt gt approx cup cap in notin "
    "emptyset varnothing circ degree prime dots ldots cdots sin cos tan cot sec csc arcsin arccos "
    "arctan log ln lfloor rfloor lceil rceil mid vert lvert rvert to binom alpha beta gamma delta "
    "epsilon varepsilon theta lambda mu sigma tau phi varphi omega rho begin end".split()
)
_SAFE_UNICODE = frozenset("π×÷√≤≥°·")
_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
_MAX_MONOMIALS = 2000  # estimated terms of an expansion sympy may attempt (~1 s on this CPU)


def _group_after(s: str, i: int) -> str:
    """The exponent that starts at ``s[i]``: a ``{...}``/``(...)`` group or one token."""
    n = len(s)
    while i < n and s[i] == " ":
        i += 1
    if i >= n:
        return ""
    if s[i] in "{(":
        opening, closing = s[i], "}" if s[i] == "{" else ")"
        depth = 0
        for j in range(i, n):
            if s[j] == opening:
                depth += 1
            elif s[j] == closing:
                depth -= 1
                if depth == 0:
                    return s[i + 1 : j]
        return s[i + 1 :]
    match = re.match(r"\d+|\\?[A-Za-z]+|.", s[i:])
    return match.group(0) if match else s[i]


def _safe_to_parse(s: str) -> bool:
    """Whether sympy's work on this (short, normalised) prediction is bounded.

    A conservative whitelist, not a proof: in the main thread math-verify's own timeout
    backs it up; in other threads it is the only guard (see the module docstring).
    """
    if any(not (" " <= c <= "~" or c in _SAFE_UNICODE) for c in s):
        return False
    if any(name not in _SAFE_COMMANDS for name in _COMMAND.findall(s) if name.isalpha()):
        return False
    depth = max_depth = 0
    for char in s:
        if char in "({[":
            depth += 1
            max_depth = max(max_depth, depth)
        elif char in ")}]":
            depth -= 1
    if max_depth > _MAX_DEPTH:
        return False
    flat = s.replace("**", "^")
    degree = flat.count("(")  # each parenthesised factor can multiply an expansion
    for match in re.finditer(r"\^", flat):
        exponent = _group_after(flat, match.end())
        if "^" in exponent or "!" in exponent:
            return False  # towers and (n!)-th powers
        base_is_number = re.search(r"(?:^|[^\w.}\])])\d+(?:\.\d+)?\s*$", flat[: match.start()]) is not None
        if re.search(r"\d{5,}" if base_is_number else r"\d{3,}", exponent):
            return False  # 2^{1000} is fine, 2^{100000} and (x+1)^{999} are not
        if not base_is_number:
            degree += sum(int(d) for d in re.findall(r"\d+", exponent)) or 1
    if "!!" in s.replace(" ", ""):
        return False
    for match in re.finditer(r"(?<!\\)!", s):
        if not re.search(r"(?:(?<![\d.])\d{1,3}|(?<![A-Za-z\\])[A-Za-z])\s*$", s[: match.start()]):
            return False  # only 120!-sized or symbolic n! factorials; not (expr)! or 10000!
    if "\\binom" in s and (re.search(r"\d{4,}", s) or "^" in flat):
        return False
    variables = len(set(re.findall(r"[A-Za-z]", _COMMAND.sub(" ", s))))
    return math.comb(variables + degree, variables) <= _MAX_MONOMIALS


# --------------------------------------------------------------------------- judging


def _timeout() -> int | None:
    # math-verify's timeouts use signal.alarm: only possible in the main thread.
    return _MATH_VERIFY_TIMEOUT_S if threading.current_thread() is threading.main_thread() else None


class MissingMathVerify(ModuleNotFoundError):
    """``math-verify`` is not installed: a set-up error, raised rather than judged ``False``."""


def _math_verify() -> Any:
    try:
        import math_verify
    except ModuleNotFoundError as error:
        raise MissingMathVerify(
            "answers_match needs math-verify: pip install 'math-verify==0.9.0' "
            "(or install teamgym with the [reasoning] extra)"
        ) from error
    return math_verify


@functools.lru_cache(maxsize=4096)
def _parse_gold(gold: str) -> Any:
    return _math_verify().parse(f"\\boxed{{{gold}}}", parsing_timeout=_timeout())


def _math_verify_match(gold: str, predicted: str) -> bool:
    parse, verify = _math_verify().parse, _math_verify().verify
    gold_parsed = _parse_gold(gold)
    if not gold_parsed:
        return False
    timeout = _timeout()
    predicted_parsed = parse(f"\\boxed{{{predicted}}}", parsing_timeout=timeout)
    if not predicted_parsed:
        return False
    return bool(verify(gold_parsed, predicted_parsed, timeout_seconds=timeout))


_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")  # a word, not a LaTeX command's name
_MAX_WORDS = 3  # "5 apples", "18 square feet", "12 km per hour" pass; a sentence does not


def looks_like_prose(answer: str) -> bool:
    """More than ``_MAX_WORDS`` words: reasoning text (e.g. a reply cut mid-sentence), not an
    answer. Judging it would reward any sentence that happens to hold the gold number."""
    return len(_WORD.findall(answer)) > _MAX_WORDS


def answers_match(gold: str, predicted: str | None) -> bool:
    """Whether ``predicted`` is the same answer as ``gold`` (see the module docstring).

    ``gold`` is trusted text (a number, a fraction, LaTeX); ``predicted`` is model text:
    a bare answer, ``\\boxed{...}`` content, or a short line containing a box. Never raises
    on any input: any error, timeout or refused input is ``False``.

    Raises:
        MissingMathVerify: ``math-verify`` is not installed and the answers need it (the
            exact fast path works without it).
    """
    try:
        if not isinstance(gold, str) or not isinstance(predicted, str):
            return False
        gold_norm = normalize_answer(gold)
        pred_norm = normalize_answer(predicted)
        if not gold_norm or not pred_norm or max(len(gold_norm), len(pred_norm)) > MAX_ANSWER_CHARS:
            return False
        if gold_norm == pred_norm:
            return True
        gold_value = _exact_value(gold_norm)
        pred_value = _exact_value(pred_norm)
        if gold_value is not None and pred_value is not None:
            if _candidates(gold_value[0], gold_value[1]) & _candidates(pred_value[0], pred_value[1]):
                return True
            if gold_value[2] and pred_value[2]:  # two different integers: no need for sympy
                return False
        if not (_safe_to_parse(pred_norm) and _safe_to_parse(gold_norm)):
            return False
        if looks_like_prose(pred_norm):  # math-verify would pick the one number out of a sentence
            return False
        return _math_verify_match(gold_norm, pred_norm)
    except MissingMathVerify:
        raise
    except Exception:
        return False
    except BaseException as error:  # math_verify.errors.TimeoutException derives from BaseException
        if type(error).__name__ == "TimeoutException":
            return False
        raise


def gold_from_gsm8k_answer(answer_text: str) -> str:
    """The final answer of a GSM8K solution: the text after the last ``####``, commas removed.

    Raises:
        ValueError: No ``####`` marker, or nothing after it.
    """
    if "####" not in answer_text:
        raise ValueError("GSM8K answer has no '#### <final answer>' line")
    gold = answer_text.rsplit("####", 1)[1].strip().replace(",", "").replace(" ", "")
    gold = gold.removeprefix("$").rstrip(".")
    if not gold:
        raise ValueError("GSM8K answer has nothing after '####'")
    return gold


def gold_from_math_solution(solution: str) -> str:
    r"""The final answer of a MATH-style solution: the content of its last ``\boxed{}``.

    Raises:
        ValueError: The solution has no complete ``\boxed{...}``.
    """
    boxed = extract_boxed(solution)
    if boxed is None:
        raise ValueError("solution has no complete \\boxed{...} answer")
    return boxed
