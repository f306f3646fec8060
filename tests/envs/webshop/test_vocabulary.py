"""The catalog vocabulary, ``envs/webshop/data/product_types.json``: schema and the constraints that
make the generated catalog's goals and hard negatives mean what they say under WebShop's reward.

The README beside the JSON explains each constraint. The fuzzy score and ``normalize_color`` are the
reward's own (``envs.webshop.reward``: thefuzz 0.22's ``token_set_ratio``, rounded, and WebShop's
substring color mapping), so what passes here is what the reward sees.

Words: a phrase is split into words the way ``LexiconTagger.tokenize`` splits a title (the tagger the
lexicon feeds): words and numbers are tokens, "3.1" stays whole, every other punctuation mark (the
"-" of "t-shirt") is a token of its own, and a trailing "'s" is split off ("men's" -> "men", "'s").
Tokens are lowercased before lookup, so every token, punctuation included, must be a lexicon key.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("rapidfuzz")

import envs.webshop  # noqa: E402
from envs.webshop.reward import LexiconTagger, fuzz_score, normalize_color  # noqa: E402

VOCABULARY = Path(envs.webshop.__file__).parent / "data" / "product_types.json"

CATEGORIES = ("beauty", "food", "fashion", "furniture", "electronics")  # WebShop's five
TYPES_PER_CATEGORY = 6
THRESHOLD = 85  # the reward's fuzzy match is a rounded score > 85
UPOS = {
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
    "SCONJ", "SYM", "VERB", "X",
}  # fmt: skip
NOUNS = {"NOUN", "PROPN"}  # what the reward's title_score counts
FUNCTION_TAGS = {"ADP", "CCONJ", "DET", "NUM", "PART", "PUNCT", "SYM"}
SEP = " › "
# Phrases: lowercase words, digits, spaces, hyphens, "." inside numbers, "'s". No "/" (WebShop turns
# it into " | " at load) and no other punctuation.
PHRASE = re.compile(r"[a-z0-9]+(?:'s)?(?:[ .-][a-z0-9]+(?:'s)?)*")
BRAND = re.compile(r"[A-Z][a-z]+")
# Pairs of types in one category allowed to share a noun of their noun phrases (documented in the
# README). None today: every type of a category has its own head nouns.
SHARED_HEAD_NOUNS: dict[frozenset[str], set[str]] = {}


@pytest.fixture(scope="module")
def vocab() -> dict:
    with open(VOCABULARY, encoding="utf-8") as f:
        return json.load(f)


def words(text: str) -> list[str]:
    return [token.lower() for token in LexiconTagger.tokenize(text)]


def option_values(t: dict) -> list[tuple[str, str]]:
    return [(name, value) for name, values in t["options"].items() for value in values]


def title_texts(t: dict) -> list[str]:
    """The type's phrases that the generator puts into product titles."""
    return t["noun_phrases"] + t["specs"] + t["attributes"]


def nouns(lexicon: dict[str, str], texts: list[str]) -> set[str]:
    return {w for text in texts for w in words(text) if lexicon.get(w) in NOUNS}


def content_words(lexicon: dict[str, str], texts: list[str]) -> set[str]:
    return {w for text in texts for w in words(text) if lexicon.get(w) not in FUNCTION_TAGS}


# --------------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------------


def test_reward_helpers_behave_as_the_constraints_assume():
    assert fuzz_score("large", "x-large") == 100
    assert fuzz_score("pack of 12", "pack of 1") == 95
    assert fuzz_score("10", "10.5") == 100
    assert normalize_color("standard") == "tan"
    assert normalize_color("navy blue") == "blue"
    assert normalize_color(("color", "black")) == "black"
    assert normalize_color(("size", "large")) == ("size", "large")
    assert fuzz_score(("size", "large"), "x-large") == 83


def test_top_level_schema(vocab):
    assert set(vocab) == {"brands", "types", "lexicon"}
    brands = vocab["brands"]
    assert 30 <= len(brands) <= 60
    assert len(set(brands)) == len(brands)
    assert all(BRAND.fullmatch(b) for b in brands), [b for b in brands if not BRAND.fullmatch(b)]
    assert len({b.lower() for b in brands}) == len(brands)


def test_types_schema(vocab):
    types = vocab["types"]
    assert len(types) == len(CATEGORIES) * TYPES_PER_CATEGORY
    for category in CATEGORIES:
        assert sum(t["category"] == category for t in types) == TYPES_PER_CATEGORY, category
    fields = {
        "type", "category", "query", "product_category", "noun_phrases", "attributes", "options", "specs",
        "price", "range_price_share",
    }  # fmt: skip
    for t in types:
        name = t["type"]
        assert set(t) == fields, name
        assert t["category"] in CATEGORIES, name
        assert PHRASE.fullmatch(name), name
        assert PHRASE.fullmatch(t["query"]), (name, t["query"])
        assert 1 <= len(t["noun_phrases"]) <= 3, name
        assert 8 <= len(t["attributes"]) <= 15, name
        assert 0 <= len(t["specs"]) <= 4, name
        assert 1 <= len(t["options"]) <= 2, name
        for option, values in t["options"].items():
            assert PHRASE.fullmatch(option), (name, option)
            assert 3 <= len(values) <= 8, (name, option)
        phrases = t["noun_phrases"] + t["attributes"] + t["specs"] + [v for _, v in option_values(t)]
        bad = [p for p in phrases if not PHRASE.fullmatch(p)]
        assert not bad, (name, bad)
        for field in ("noun_phrases", "attributes", "specs"):
            assert len(set(t[field])) == len(t[field]), (name, field)
        values = [v for _, v in option_values(t)]
        assert len(set(values)) == len(values), (name, "an option value repeats")
        low, high = t["price"]
        assert 0 < low < high <= 1000, name
        assert 0.0 <= t["range_price_share"] <= 0.5, name
    assert len({t["type"] for t in types}) == len(types)
    assert len({t["query"] for t in types}) == len(types), "types must differ in query"


def test_product_category_paths(vocab):
    types = vocab["types"]
    parts = {}
    for t in types:
        path = t["product_category"]
        split = path.split(SEP)
        assert 3 <= len(split) <= 5, path
        assert all(p == p.strip() and p for p in split), path
        assert [p.strip() for p in path.split("›")] == split, path  # the reward splits on "›" and strips
        parts[t["type"]] = split
    assert len({t["product_category"] for t in types}) == len(types)
    for category in CATEGORIES:
        tops = {parts[t["type"]][0] for t in types if t["category"] == category}
        assert len(tops) == 1, (category, tops)  # one category's types share their first part
    # the reward's category_match (>= 2 shared parts) never holds across categories
    for a, b in itertools.combinations(types, 2):
        if a["category"] != b["category"]:
            shared = set(parts[a["type"]]) & set(parts[b["type"]])
            assert len(shared) < 2, (a["type"], b["type"], shared)


# --------------------------------------------------------------------------------------------
# Lexicon
# --------------------------------------------------------------------------------------------


def test_lexicon_tags(vocab):
    lexicon = vocab["lexicon"]
    assert all(word == word.lower() for word in lexicon)
    bad = {w: tag for w, tag in lexicon.items() if tag not in UPOS}
    assert not bad, bad
    numbers = {w: tag for w, tag in lexicon.items() if re.fullmatch(r"\d+(?:\.\d+)?", w) and tag != "NUM"}
    assert not numbers, numbers
    for brand in vocab["brands"]:
        assert lexicon.get(brand.lower()) == "PROPN", brand


def test_every_word_is_in_the_lexicon(vocab):
    lexicon = vocab["lexicon"]
    missing = set()
    for brand in vocab["brands"]:
        missing |= {w for w in words(brand) if w not in lexicon}
    for t in vocab["types"]:
        texts = title_texts(t) + [t["query"]] + [v for _, v in option_values(t)]
        missing |= {w for text in texts for w in words(text) if w not in lexicon}
    assert not missing, sorted(missing)
    assert LexiconTagger(lexicon).unknown_words("Lumora Men's T-Shirt Pack of 12") == []


def test_noun_phrases_are_all_nouns(vocab):
    lexicon = vocab["lexicon"]
    for t in vocab["types"]:
        for phrase in t["noun_phrases"]:
            tags = [lexicon[w] for w in words(phrase) if w != "-"]
            assert tags and all(tag == "NOUN" for tag in tags), (t["type"], phrase, tags)


# --------------------------------------------------------------------------------------------
# Constraint 2: attributes are distinct and only ever present when given
# --------------------------------------------------------------------------------------------


def test_attributes_pairwise_distinct(vocab):
    problems = []
    for t in vocab["types"]:
        for a, b in itertools.combinations(t["attributes"], 2):
            score = fuzz_score(a, b)
            if score > THRESHOLD:
                problems.append((t["type"], a, b, score))
            if a in b or b in a:
                problems.append((t["type"], a, b, "substring"))
    assert not problems, problems


def test_attributes_do_not_hide_in_other_text(vocab):
    """An attribute appears in a product's text only when the product has it: it is no substring of
    the type's noun phrases, specs, option values or query, of any brand, nor of two such phrases
    (or other attributes) joined the way titles and descriptions join them."""
    brands = [b.lower() for b in vocab["brands"]]
    problems = []
    for t in vocab["types"]:
        values = [v for _, v in option_values(t)]
        for attribute in t["attributes"]:
            for text in t["noun_phrases"] + t["specs"] + values + [t["query"]] + brands:
                if attribute in text:
                    problems.append((t["type"], attribute, text))
            pieces = [p for p in t["attributes"] + t["noun_phrases"] + t["specs"] + brands if p != attribute]
            for joiner in (" ", ", ", " and "):
                for left in pieces:
                    # "\n" cannot be in an attribute, so no match spans two joined pairs
                    if attribute in "\n".join(left + joiner + right for right in pieces):
                        problems.append((t["type"], attribute, f"{left!r}{joiner!r}..."))
    assert not problems, problems


# --------------------------------------------------------------------------------------------
# Constraint 3: option values are told apart by the option reward, and each matches itself
# --------------------------------------------------------------------------------------------


def test_option_values_distinct(vocab):
    """Across all option values of a type, in both goal formats: human goals compare value with value,
    synthetic goals compare the ``(name, value)`` tuple with the chosen value, each side through
    ``normalize_color`` first."""
    problems = []
    for t in vocab["types"]:
        pairs = option_values(t)
        for name, value in pairs:
            if fuzz_score(normalize_color(value), normalize_color(value)) <= THRESHOLD:
                problems.append((t["type"], value, "does not match itself"))
            if fuzz_score(normalize_color((name, value)), normalize_color(value)) <= THRESHOLD:
                problems.append((t["type"], (name, value), "synthetic goal misses its own value"))
            for _, other in pairs:
                if other == value:
                    continue
                human = fuzz_score(normalize_color(value), normalize_color(other))
                synthetic = fuzz_score(normalize_color((name, value)), normalize_color(other))
                if human > THRESHOLD or synthetic > THRESHOLD:
                    problems.append((t["type"], value, other, human, synthetic))
    assert not problems, problems


def test_option_values_do_not_name_an_option(vocab):
    """A value holding an option name ("size") would score against every synthetic goal tuple."""
    for t in vocab["types"]:
        names = {w for name in t["options"] for w in words(name)}
        for _, value in option_values(t):
            assert not names & set(words(value)), (t["type"], value)


# --------------------------------------------------------------------------------------------
# Constraint 4: title nouns separate the categories
# --------------------------------------------------------------------------------------------


def test_title_words_separate_categories(vocab):
    """A product of another category carrying the goal's attributes (the catalog's "type" negative)
    must share no title noun with the goal but, at worst, its brand, so that r_type is 0. (With a
    shared brand, title_score is 1/n for n goal nouns, so r_type is 1.0 when n <= 4: the generator
    must pick another brand.) Titles are brand + attribute + spec + noun phrase; the negative's
    title shows no attribute. So, for types A and B of different categories:

    * no content word (any tag but function words and numbers) of A's noun phrases, specs or
      attributes is a word of B's noun phrases or specs. Word level, not noun level, so this also
      holds for spaCy on Title Case titles, which tags most capitalized words PROPN;
    * no noun of A's noun phrases is a noun anywhere in B (noun phrases, specs, attributes, option
      values), so a head noun never shows up in another category's product at all."""
    lexicon = vocab["lexicon"]
    types = vocab["types"]
    problems = []
    for a, b in itertools.permutations(types, 2):
        if a["category"] == b["category"]:
            continue
        b_title = b["noun_phrases"] + b["specs"]
        shared = content_words(lexicon, title_texts(a)) & content_words(lexicon, b_title)
        every_b = title_texts(b) + [v for _, v in option_values(b)]
        shared |= nouns(lexicon, a["noun_phrases"]) & nouns(lexicon, every_b)
        if shared:
            problems.append((a["type"], b["type"], sorted(shared)))
    assert not problems, problems


def test_noun_phrase_nouns_differ_within_a_category(vocab):
    lexicon = vocab["lexicon"]
    problems = []
    for a, b in itertools.combinations(vocab["types"], 2):
        if a["category"] != b["category"]:
            continue
        shared = nouns(lexicon, a["noun_phrases"]) & nouns(lexicon, b["noun_phrases"])
        allowed = SHARED_HEAD_NOUNS.get(frozenset((a["type"], b["type"])), set())
        if shared - allowed:
            problems.append((a["type"], b["type"], sorted(shared - allowed)))
    assert not problems, problems
