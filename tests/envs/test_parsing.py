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
