"""The WebShop type reward (query, category, title nouns) and the taggers that find a title's nouns."""

from __future__ import annotations

import sys
import types
from math import isclose

import pytest

from envs.webshop import reward as rw
from envs.webshop.reward import (
    LexiconTagger,
    SpacyTagger,
    SpacyUnavailable,
    guess_pos,
    spacy_available,
    title_nouns,
    type_reward,
)
from tests.envs.webshop.reward_helpers import BRST, FALLBACK, KNOB, PEAK, SNEAKERS, SOUNDBAR, TWEEZERS

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
