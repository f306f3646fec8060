"""Answer extraction and item splitting (model text is adversarial: never raise)."""

from __future__ import annotations

import pytest

from envs.parsing import extract_answer, split_items


@pytest.mark.parametrize(
    "text,expected",
    [
        ("<answer>U R</answer>", "U R"),
        ("< ANSWER >  d l \n</ Answer >", "d l"),
        ("first <answer>a</answer> then <answer>b</answer>", "b"),
        ("cut off <answer> R R", "R R"),
        ("no tags", None),
        ("", None),
        ("</answer>", None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_split_items():
    assert split_items("U, R;D | L -> R=>U\nD") == ["U", "R", "D", "L", "R", "U", "D"]
    assert split_items("  ") == []


@pytest.mark.parametrize(
    "text,expected",
    [
        ("```python\nprint(1)\n```", "print(1)"),
        ("intro\n```py\nx = 1\nprint(x)\n```\nouter", "x = 1\nprint(x)"),
        ("```\nprint(2)\n```", "print(2)"),
        ("```python\nprint(1)\n```\nthen\n```python\nprint(3)\n```", "print(3)"),
        ("```python\nprint(4)", "print(4)"),  # cut off before the closing fence
        ("```text\nnot code\n```", None),
        ("```python\nprint(5)\n```\n```text\nout\n```", "print(5)"),
        ("<answer>print(6)</answer>", "print(6)"),
        ("```python\n\n```", None),
        ("no code here", None),
        ("", None),
    ],
)
def test_extract_code(text, expected):
    from envs.parsing import extract_code

    assert extract_code(text) == expected
