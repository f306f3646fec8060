"""The WebShop reward (``envs.webshop.reward``): a port of WebShop's ``engine/goal.py``.

Covers the cases of WebShop's own ``test_goal.py`` / ``test_normalize.py`` that need no spaCy,
the research report's worked examples (1.0 / 0.8 / 0.6 / 0.8 / 0.0), the quirks that change
numbers (rounding before ``> 85``, Latin-1 deletion, tuple options of synthetic goals, the
substring color test, the unlowered goal attribute, the r_type override order), and two golden
fixtures made by the real code (see ``fixtures/make_*_golden.py`` for how to rerun them):

- ``fuzz_golden.json``: 208 pairs scored by the real thefuzz 0.22.1;
- ``reward_golden.json``: 300 randomized goal/purchase cases scored by the real ``goal.py``
  (spaCy replaced by a LexiconTagger over the stored lexicon), total and verbose info.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from math import isclose
from pathlib import Path

import pytest

from envs.webshop import reward as rw
from envs.webshop.reward import (
    COLOR_SET,
    LexiconTagger,
    Reward,
    SpacyTagger,
    SpacyUnavailable,
    attribute_reward,
    fuzz_score,
    get_reward,
    guess_pos,
    normalize_color,
    option_reward,
    spacy_available,
    title_nouns,
    type_reward,
)

FIXTURES = Path(__file__).parent / "fixtures"
FALLBACK = LexiconTagger({})  # every word tagged by guess_pos


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
# Taggers
# --------------------------------------------------------------------------------------------


def test_lexicon_tagger_tokenizes_like_spacy_on_plain_titles():
    tokens = LexiconTagger.tokenize("Men's x-large 3.1 Bar (Black), D.O.N. 2pcs")
    assert tokens == [
        "Men", "'s", "x", "-", "large", "3.1", "Bar", "(", "Black", ")", ",", "D.O.N", ".", "2pcs",
    ]  # fmt: skip


def test_lexicon_tagger_looks_up_lowercased_and_keeps_order_and_repeats():
    lexicon = {"Herbal": "ADJ", "shampoo": "NOUN", "Acme": "PROPN", "for": "ADP", "hair": "NOUN"}
    tagger = LexiconTagger(lexicon)
    assert tagger.tag("ACME herbal Shampoo")[0] == ("ACME", "PROPN")
    assert tagger("ACME herbal Shampoo for hair and Hair") == ["acme", "shampoo", "hair", "hair"]
    assert tagger.unknown_words("herbal shampoo with gizmo, 2") == ["with", "gizmo", "2"]


@pytest.mark.parametrize(
    ("token", "pos"),
    [
        ("the", "DET"),
        ("for", "ADP"),
        ("and", "CCONJ"),
        ("-", "PUNCT"),
        ("12", "NUM"),
        ("2.1", "NUM"),
        ("portable", "ADJ"),
        ("Wireless", "ADJ"),
        ("table", "NOUN"),
        ("listed", "VERB"),
        ("speed", "NOUN"),
        ("4k", "NOUN"),
        ("Saireed", "NOUN"),
    ],
)
def test_guess_pos_fallback(token, pos):
    assert guess_pos(token) == pos


def test_lexicon_overrides_fallback_and_custom_fallback():
    assert LexiconTagger({"portable": "NOUN"})("portable") == ["portable"]
    assert LexiconTagger({}, fallback=lambda token: "ADJ")("shoes") == []


def test_title_nouns_lowercases_any_tagger():
    assert title_nouns("x", lambda name: ["Shoes", "JBL"]) == ["shoes", "jbl"]


def test_spacy_tagger_explains_install_when_spacy_is_missing(monkeypatch):
    monkeypatch.setattr(rw, "_SPACY_MODELS", {})
    monkeypatch.setitem(sys.modules, "spacy", None)  # import spacy -> ImportError
    install = r"pip install spacy && python -m spacy download en_core_web_sm"
    with pytest.raises(SpacyUnavailable, match=install):
        SpacyTagger()


def test_spacy_tagger_explains_install_when_model_is_missing(monkeypatch):
    def load(name):
        raise OSError(f"[E050] Can't find model '{name}'")

    monkeypatch.setattr(rw, "_SPACY_MODELS", {})
    monkeypatch.setitem(sys.modules, "spacy", types.SimpleNamespace(load=load))
    with pytest.raises(SpacyUnavailable, match="en_core_web_sm"):
        SpacyTagger()


def test_spacy_tagger_with_a_stand_in_model(monkeypatch):
    def nlp(text):
        return [types.SimpleNamespace(text=t, pos_=p) for t, p in LexiconTagger({"big": "ADJ"}).tag(text)]

    monkeypatch.setattr(rw, "_SPACY_MODELS", {})
    monkeypatch.setitem(sys.modules, "spacy", types.SimpleNamespace(load=lambda name: nlp))
    assert SpacyTagger()("Big Shoes") == ["shoes"]


# --------------------------------------------------------------------------------------------
# type_reward (WebShop's test_get_type_reward without spaCy, plus the override order)
# --------------------------------------------------------------------------------------------


def _typed(query="Query 1", category="a › b › c", name="Name 1"):
    return {"query": query, "product_category": category, "name": name}


def test_type_reward_exact_match():
    assert type_reward(_typed(), _typed(), FALLBACK) == {
        "r_type": 1.0,
        "query_match": True,
        "category_match": True,
        "title_score": 1.0,
    }


def test_type_reward_query_mismatch():
    assert type_reward(_typed(query="Query 2"), _typed(), FALLBACK)["query_match"] is False


@pytest.mark.parametrize(
    ("category", "match"),
    [
        ("b › c › a", True),  # order ignored
        ("d › e › f", False),
        ("a › d › b", True),
        ("a › a › b", True),
        ("a › a › d", False),  # a repeated part counts once
        ("a›b", True),  # parts are stripped
    ],
)
def test_type_reward_category_needs_two_shared_parts(category, match):
    assert type_reward(_typed(category=category), _typed(), FALLBACK)["category_match"] is match


# Real WebShop titles under the fallback tagger (spaCy's numbers are in the spaCy-only test).
SNEAKERS = "Mens D.O.N. Issue 2 Gca Basketball Sneakers Shoes Casual - Off White"
PEAK = (
    "PEAK High Top Mens Basketball Shoes Lou Williams Streetball Master Breathable Non Slip Outdoor Sneakers"
)
SOUNDBAR = "Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1 Bar 2.1 Channel 4K Ultra HD Soundbar"
BRST = (
    "BRST AC Power Cord Outlet Socket Cable Plug Lead for Panasonic SC-HT830V DVD/VCR Combo "
    "Home Theater System"
)
KNOB = "Rusticware 921ORB Kitchen and Bath Cabinet Knob"
TWEEZERS = (
    "Minkissy 2pcs Stainless Steel Eyebrow Tweezers Blackhead Acne Remover Portable Makeup Tweezers (Silver)"
)


@pytest.mark.parametrize(
    ("goal_name", "bought_name", "score"),
    [
        (SNEAKERS, PEAK, 4 / 9),  # mens basketball sneakers shoes of 9 goal nouns
        (SOUNDBAR, BRST, 2 / 13),  # power cord; "bar" twice in the 13 (a list, not a set)
        (SOUNDBAR + " Home Theater System Subwoofer", BRST, 5 / 17),
        (KNOB, TWEEZERS, 0.0),
    ],
)
def test_type_reward_title_score_real_titles(goal_name, bought_name, score):
    out = type_reward(_typed(query="Query 2", name=bought_name), _typed(name=goal_name), FALLBACK)
    assert isclose(out["title_score"], score)


def test_identical_names_with_a_repeated_noun_score_below_one():
    out = type_reward(_typed(name="bar bar stool"), _typed(name="bar bar stool"), FALLBACK)
    assert isclose(out["title_score"], 2 / 3) and out["r_type"] == 1.0


NOUNS = LexiconTagger({w: "NOUN" for w in "abcdefghijklmnopqrst"} | {"big": "ADJ", "red": "ADJ"})


@pytest.mark.parametrize(
    ("query", "category", "bought", "wanted", "r_type", "title"),
    [
        ("Query 1", "a › b", "x", "a b c d", 0.0, 0.0),  # query and category match, no shared noun
        ("Query 2", "a › b", "a", "a b c d e f g h i j k", 0.1, 1 / 11),  # category match, < 0.1
        ("Query 2", "z", "a", "a b c d e f g h i j", 0.5, 0.1),  # 0.1 is not < 0.1, nor > 0.2
        ("Query 1", "z", "a", "a b c d e f g h i j", 1.0, 0.1),
        ("Query 2", "z", "a", "a b c d e", 0.5, 0.2),  # no match: 0.5
        ("Query 2", "z", "a b", "a b c d e", 1.0, 0.4),  # title > 0.2 is a match
        ("Query 2", "z", "a", "big red", 0.5, 0.2),  # goal without nouns: 0.2, nothing else
        ("Query 1", "z", "a", "big red", 1.0, 0.2),
    ],
)
def test_type_reward_thresholds_and_override_order(query, category, bought, wanted, r_type, title):
    bought_product = _typed(query=query, category=category, name=bought)
    out = type_reward(bought_product, _typed(category="a › b", name=wanted), NOUNS)
    assert isclose(out["title_score"], title)
    assert out["r_type"] == r_type


@pytest.mark.skipif(not spacy_available(), reason="needs spaCy and en_core_web_sm")
def test_type_reward_title_scores_with_real_spacy():
    tagger = SpacyTagger()
    cases = [
        (SNEAKERS, PEAK, 0.333, 1e-2),
        (SOUNDBAR + " Home Theater System Subwoofer", BRST, 0.3, 1e-2),
        (SOUNDBAR, BRST, 0.15, 1e-2),
    ]
    for goal_name, bought_name, score, tol in cases:
        out = type_reward(_typed(name=bought_name), _typed(name=goal_name), tagger)
        assert isclose(out["title_score"], score, abs_tol=tol)
    assert type_reward(_typed(name=TWEEZERS), _typed(name=KNOB), tagger)["title_score"] < 0.05


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
