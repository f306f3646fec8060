"""The WebShop total reward (get_reward): the report's worked examples, its breakdown, the golden cases."""

from __future__ import annotations

import dataclasses
import json
from math import isclose

import pytest

from envs.webshop.reward import LexiconTagger, Reward, get_reward
from tests.envs.webshop.reward_helpers import BRST, FALLBACK, FIXTURES, SNEAKERS, SOUNDBAR

# --------------------------------------------------------------------------------------------
# get_reward
# --------------------------------------------------------------------------------------------

SHAMPOO_TAGS = LexiconTagger(
    {"herbal": "ADJ", "tea": "NOUN", "tree": "NOUN", "shampoo": "NOUN", "for": "ADP", "dry": "ADJ"}
    | {"hair": "NOUN", "stainless": "ADJ", "steel": "NOUN", "eyebrow": "NOUN", "tweezers": "NOUN"}
)
SHAMPOO_NAME = "Herbal Tea Tree Shampoo for Dry Hair"


SHAMPOO_PATH = "Beauty & Personal Care › Hair Care › Shampoos"


def _shampoo_goal(options):
    return {
        "query": "tea tree shampoo",
        "product_category": SHAMPOO_PATH,
        "name": SHAMPOO_NAME,
        "attributes": ["tea tree", "sulfate free"],
        "goal_options": options,
        "price_upper": 20.0,
    }


def _shampoo(name=SHAMPOO_NAME, query="tea tree shampoo", category=SHAMPOO_PATH):
    return {
        "query": query,
        "product_category": category,
        "name": name,
        "Title": name,
        "Attributes": ["tea tree", "sulfate free"],
        "BulletPoints": ["Gentle daily shampoo."],
        "Description": "A calming shampoo.",
    }


GOAL_FORMS = {
    "synthetic": {"scent": "lavender", "size": "8 fl oz"},
    "human": ["lavender", "8 fl oz"],
}
RIGHT = {"scent": "lavender", "size": "8 fl oz"}
TWEEZER_NAME = "Stainless Steel Eyebrow Tweezers"


@pytest.mark.parametrize("form", sorted(GOAL_FORMS))
@pytest.mark.parametrize(
    ("case", "product", "price", "options", "total"),
    [
        ("correct product and options", _shampoo(), 15.0, RIGHT, 1.0),
        ("one wrong option", _shampoo(), 15.0, {**RIGHT, "scent": "peppermint"}, 0.8),
        ("no options clicked", _shampoo(), 15.0, {}, 0.6),
        ("over the price cap", _shampoo(), 25.0, RIGHT, 0.8),
        ("at the price cap", _shampoo(), 20.0, RIGHT, 1.0),
        ("no shared title nouns", _shampoo(TWEEZER_NAME, "tweezers", "Beauty › Tools"), 15.0, RIGHT, 0.0),
        ("no shared title nouns, same query", _shampoo(TWEEZER_NAME), 15.0, RIGHT, 0.0),
    ],
)
def test_report_worked_examples(form, case, product, price, options, total):
    out = get_reward(product, _shampoo_goal(GOAL_FORMS[form]), price, options, SHAMPOO_TAGS)
    assert isclose(out.total, total, abs_tol=1e-12), case
    assert out.won is (total == 1.0)


def test_get_reward_breakdown():
    goal = _shampoo_goal(GOAL_FORMS["synthetic"])
    out = get_reward(_shampoo(), goal, 25.0, {"scent": "peppermint"}, SHAMPOO_TAGS)
    assert out == Reward(
        total=0.4,
        r_type=1.0,
        r_att=1.0,
        r_option=0.0,
        r_price=False,
        query_match=True,
        category_match=True,
        title_score=1.0,
        n_att=2,
        n_opt=0,
        w_att=0.4,
        w_option=0.4,
        w_price=0.2,
    )
    assert list(out.info()) == [
        "r_type", "r_att", "w_att", "query_match", "category_match", "title_score",
        "r_option", "w_option", "r_price", "w_price",
    ]  # fmt: skip
    assert out.as_terms()["r_price"] == 0.0 and all(isinstance(v, float) for v in out.as_terms().values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.total = 1.0  # type: ignore[misc]


def test_get_reward_without_goal_options_has_no_option_terms():
    out = get_reward(_shampoo(), _shampoo_goal({}), 15.0, {"scent": "lavender"}, SHAMPOO_TAGS)
    assert out.total == 1.0 and out.r_option is None and out.w_option is None
    assert "r_option" not in out.info() and "r_option" not in out.as_terms()
    assert isclose(out.w_att, 2 / 3) and isclose(out.w_price, 1 / 3)


@pytest.mark.parametrize("cap", [0, -1.0, float("nan")])
def test_get_reward_rejects_a_goal_without_a_price_cap(cap):
    goal = {**_shampoo_goal([]), "price_upper": cap}
    with pytest.raises(ValueError, match=r"goal\['price_upper'\]"):
        get_reward(_shampoo(), goal, 15.0, {}, SHAMPOO_TAGS)


def test_get_reward_webshop_test_goal_cases():
    """WebShop's test_get_reward, step by step (its names score the same under our fallback)."""
    name = SNEAKERS
    goal = {
        "query": "Query 1",
        "product_category": "a › b › c",
        "name": name,
        "attributes": ["tea tree", "essential oils", "natural ingredients"],
        "goal_options": {"color": "grey", "size": "XL"},
        "price_upper": 40.00,
    }
    bought = {
        "query": "Query 1",
        "product_category": "a › b › c",
        "name": name,
        "Attributes": ["tea tree", "essential oil", "natural ingredients"],
        "Title": "",
        "BulletPoints": [],
        "Description": "",
    }
    options = {"color": "grey", "size": "XL"}
    assert get_reward(bought, goal, 35, options, FALLBACK).total == 1
    bought |= {
        "Attributes": [],
        "BulletPoints": "This shampoo has essential oils and smells like lemons",  # a str: never matches
        "Description": "Best shampoo on the market, made with natural ingredients",
    }
    assert isclose(get_reward(bought, goal, 35, options, FALLBACK).total, 2 / 3)
    goal["goal_options"] = {"color": "grey", "size": "XL", "amount": "pack of 12"}
    assert isclose(get_reward(bought, goal, 35, options, FALLBACK).total, 4 / 7)
    goal["name"] = SOUNDBAR
    bought |= {"name": BRST, "query": "Query 2", "product_category": "a › d › e"}
    out = get_reward(bought, goal, 35, options, FALLBACK)
    assert out.r_type == 0.5 and isclose(out.total, 2 / 7)


def test_get_reward_matches_real_goal_py_golden():
    data = json.loads((FIXTURES / "reward_golden.json").read_text(encoding="utf-8"))
    tagger = LexiconTagger(data["lexicon"])
    cases = data["cases"]
    assert len(cases) >= 300
    wrong = []
    for i, case in enumerate(cases):
        out = get_reward(case["purchased"], case["goal"], case["price"], case["options"], tagger)
        if out.total != case["expected"]["total"] or out.info() != case["expected"]["info"]:
            wrong.append((i, out.total, case["expected"]["total"]))
    assert wrong == [], f"{len(wrong)} of {len(cases)} cases differ from the real goal.py"
    kinds = {type(case["goal"]["goal_options"]).__name__ for case in cases}
    assert kinds == {"dict", "list"}
    assert {case["expected"]["info"]["r_type"] for case in cases} == {0.0, 0.1, 0.5, 1.0}
