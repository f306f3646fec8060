"""The WebShop reward's matching: fuzz_score, normalize_color, and the attribute and option rewards."""

from __future__ import annotations

import json

import pytest

from envs.webshop import reward as rw
from envs.webshop.reward import COLOR_SET, attribute_reward, fuzz_score, normalize_color, option_reward
from tests.envs.webshop.reward_helpers import FIXTURES


def _decode(value):
    return tuple(_decode(v) for v in value["tuple"]) if isinstance(value, dict) else value


# --------------------------------------------------------------------------------------------
# fuzz_score: thefuzz 0.22's token_set_ratio
# --------------------------------------------------------------------------------------------


def test_fuzz_score_matches_real_thefuzz_golden():
    data = json.loads((FIXTURES / "fuzz_golden.json").read_text(encoding="utf-8"))
    rows = data["pairs"]
    assert len(rows) >= 200
    wrong = [(a, b, want, fuzz_score(_decode(a), _decode(b))) for a, b, want in rows]
    wrong = [row for row in wrong if row[2] != row[3]]
    assert wrong == [], f"{len(wrong)} of {len(rows)} pairs differ from {data['made_by']}"


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        ("pack of 12", "pack of 1", 95),  # the report's lenient matches: all count (> 85)
        ("small", "x-small", 100),
        ("x-large", "xx-large", 93),
        ("Small", "x-small", 100),  # preprocessing lowercases and splits on "-"
        ("essential oil", "essential oils", 96),
        ("tea bag", "tea tree", 60),
    ],
)
def test_fuzz_score_report_examples(a, b, score):
    assert fuzz_score(a, b) == score


def test_fuzz_score_rounds_before_the_cut():
    # 2 * 20 / 47 = 85.1: thefuzz rounds to 85, which is not > 85.
    assert fuzz_score("abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrst1234") == 85
    assert not rw._fuzzy_match("abcdefghijklmnopqrstuvw", "abcdefghijklmnopqrst1234")
    assert rw._fuzzy_match("essential oil", "essential oils")


@pytest.mark.parametrize(
    ("a", "b", "score"),
    [
        ("", "", 0),  # empty after processing scores 0, even against itself
        ("!!!", "???", 0),
        ("ä", "ä", 0),  # chars 128-255 are deleted ...
        ("café", "cafe", 86),
        ("›", "›", 0),  # ... others are kept, and punctuation becomes a space
        ("łódź", "lodz", 29),  # "ł" is kept (outside Latin-1), "ó" deleted
        (None, "a", 0),
        ("a", None, 0),
        (12, "12", 100),  # str() of anything
    ],
)
def test_fuzz_score_edge_cases(a, b, score):
    assert fuzz_score(a, b) == score


def test_fuzz_score_stringifies_tuples():
    assert fuzz_score(("color", "black"), "black") == 100  # "('color', 'black')" -> "color black"
    assert fuzz_score(("size", "large"), "x-large") == 83  # the option name is a token too
    assert fuzz_score(("size", "large"), "size large") == 100


# --------------------------------------------------------------------------------------------
# normalize_color (WebShop's test_normalize.py, plus the substring quirks)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ""),
        ("black forest", "black"),
        ("violet lavender", "lavender"),  # list order, not position in the string
        ("steelivy fuchsia", "fuchsia"),
        ("123alabaster", "alabaster"),
        ("webshop", "webshop"),
        ("standard", "tan"),  # substring test
        ("rose gold", "gold"),
        ("washed black", "ash"),
        ("mint green", "green"),
        ("10.5 wide", "10.5 wide"),
    ],
)
def test_normalize_color_strings(value, expected):
    out = normalize_color(value)
    assert type(out) is str
    assert out == expected


def test_normalize_color_tuples_use_element_membership():
    assert normalize_color(("color", "black")) == "black"
    assert normalize_color(("color", "navy blue")) == ("color", "navy blue")
    assert normalize_color(("size", "x-large")) == ("size", "x-large")


def test_color_set_is_webshops_list():
    assert len(COLOR_SET) == 102
    assert COLOR_SET[:3] == ("alabaster", "apricot", "aqua") and COLOR_SET[-1] == "yellow"
    assert COLOR_SET.index("ash") < COLOR_SET.index("black") < COLOR_SET.index("tan")


# --------------------------------------------------------------------------------------------
# attribute_reward (WebShop's test_get_attribute_reward, plus the quirks)
# --------------------------------------------------------------------------------------------

TEA_TREE = {"attributes": ["tea tree", "essential oils", "natural ingredients"]}


def _product(attributes=(), title="", bullets=(), description=""):
    return {
        "Attributes": list(attributes),
        "Title": title,
        "BulletPoints": bullets,
        "Description": description,
    }


def test_attribute_reward_fuzzy_match_never_reads_text_fields():
    listed = {"Attributes": ["tea tree", "essential oil", "natural ingredients"]}  # no Title etc.
    assert attribute_reward(listed, TEA_TREE) == (1, 3)


def test_attribute_reward_partial_match():
    r_att, n = attribute_reward(_product(["essential oil", "natural ingredients"]), TEA_TREE)
    assert (r_att, n) == (2 / 3, 2)


def test_attribute_reward_found_in_text_fields():
    product = _product(
        bullets=["This shampoo has essential oils and smells like lemons"],
        description="Best shampoo on the market, made with natural ingredients",
    )
    assert attribute_reward(product, TEA_TREE) == (2 / 3, 2)


def test_attribute_reward_no_match():
    product = _product(
        ["tea bag", "earl gray", "lipton"],
        "English tea for breakfast",
        ["Soothing aroma", "Calming, great feeling"],
        "Best tea made by Lipton, great to pair with breakfast",
    )
    assert attribute_reward(product, TEA_TREE) == (0, 0)


def test_attribute_reward_goal_attribute_is_not_lowercased():
    goal = {"attributes": ["Dry Skin"]}
    assert attribute_reward(_product(description="For DRY SKIN."), goal) == (0, 0)
    assert attribute_reward(_product(["dry skin"]), goal) == (1, 1)  # fuzzy matching lowercases


def test_attribute_reward_bullet_points_string_is_joined_per_character():
    goal = {"attributes": ["essential oils"]}
    assert attribute_reward(_product(bullets="has essential oils"), goal) == (0, 0)
    assert attribute_reward(_product(bullets=["has essential oils"]), goal) == (1, 1)


def test_attribute_reward_title_is_lowercased_and_repeats_count():
    goal = {"attributes": ["tea tree", "tea tree"]}
    assert attribute_reward(_product(title="TEA TREE Shampoo"), goal) == (1, 2)


def test_attribute_reward_rejects_a_goal_without_attributes():
    with pytest.raises(ValueError, match=r"goal\['attributes'\]"):
        attribute_reward(_product(), {"attributes": []})


# --------------------------------------------------------------------------------------------
# option_reward (WebShop's test_get_option_reward, plus synthetic tuples)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bought", "wanted", "expected"),
    [
        (["pack of 12", "grey", "XL"], ["grey", "XL", "pack of 12"], (1, 3)),
        (["pack of 12", "blue", "XL"], ["grey", "XL", "pack of 12"], (2 / 3, 2)),
        (["pack of 12", "powder snow", "XL"], ["cool powder snow", "XL", "pack of 12"], (1, 3)),
        (["goal 1", "goal 2"], [], (None, 0)),
        ([], ["goal 1", "goal 2"], (0, 0)),
        (["pack of 1"], ["pack of 12"], (1, 1)),  # lenient
        (["peppermint"], ["mint"], (1, 1)),  # both normalize to "mint"
        (["mint"], ["mint green"], (0, 0)),  # "mint green" -> "green": list order
        (["standard"], ["tan"], (1, 1)),  # "standard" contains "tan"
    ],
)
def test_option_reward_lists(bought, wanted, expected):
    assert option_reward(bought, wanted) == expected


def test_option_reward_synthetic_tuples():
    assert option_reward(["black forest"], {"color": "black"}.items()) == (1, 1)  # tuple -> "black"
    assert option_reward(["navy"], {"color": "navy blue"}.items()) == (1, 1)  # "color navy blue" ⊇ "navy"
    # The option name joins the tokens: "x-large" satisfies a human "large", not a synthetic one.
    assert option_reward(["x-large"], ["large"]) == (1, 1)
    assert option_reward(["x-large"], {"size": "large"}.items()) == (0, 0)
    assert option_reward(["x-large"], {"size": "x-large"}.items()) == (1, 1)
