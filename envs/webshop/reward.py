"""WebShop's purchase reward, ported from ``web_agent_site/engine/goal.py`` (princeton-nlp/WebShop
@ 64fa2a5, MIT) with the same numbers, quirks included, so our scores compare with the papers'.

For a goal G and a purchased product P bought at price p with chosen options O::

    total = r_type * (n_att + n_opt + [p <= G.price_upper]) / (|G.attributes| + |G.goal_options| + 1)

Everything works on WebShop's own dict shapes (a loaded product: ``query``, ``product_category``,
``name``, ``Title``, ``Attributes``, ``BulletPoints``, ``Description``; a goal: ``query``,
``product_category``, ``name``, ``attributes``, ``goal_options``, ``price_upper``), so the real
data and our generated catalog go through the same code.

Quirks kept on purpose (each one changes numbers):

- Fuzzy matching is thefuzz 0.22's ``token_set_ratio``: ``str()`` of the input (a tuple becomes
  ``"('color', 'black')"``), characters 128-255 deleted (thefuzz's "force_ascii" only drops the
  Latin-1 range: "é" vanishes, "ł" or "›" stay), rapidfuzz's ``default_process``, then
  ``int(round(score))`` *before* the ``> 85`` test (85.4 fails, 85.6 passes). An input that is
  empty after processing scores 0, even against itself. The match is lenient: "pack of 12" vs
  "pack of 1" is 95, "small" vs "x-small" 100.
- ``normalize_color`` returns the first COLOR_SET word (in list order, not string order) that is
  ``in`` the value: a substring test on strings ("standard" -> "tan", "washed black" -> "ash"),
  element membership on tuples.
- Synthetic goals keep ``goal_options`` as a dict and the reward compares its ``.items()``
  tuples. ``('color', 'black')`` normalizes to ``'black'`` (element membership); any other tuple
  stays a tuple and is fuzzed as "color navy blue", so the option *name* is a token too: "x-large"
  matches the human-goal option "large" (100) but not the synthetic ``('size', 'large')`` (83).
- An attribute matches when some ``P.Attributes`` entry scores > 85, else when the goal attribute,
  *not* lowercased, is a substring of the lowercased Title, of ``' '.join(BulletPoints)`` (a string
  there is joined character by character and so never matches a phrase), or of the Description.
- r_type: 1.0; 0.5 when neither the query, >= 2 category parts, nor title_score > 0.2 match; then
  *overridden* to 0.1 when title_score < 0.1 and to 0.0 when it is 0, even if the query or the
  category matched. title_score = |set(nouns(P.name)) & set(nouns(G.name))| / len(nouns(G.name)),
  a set over a list: a noun repeated in the goal name counts twice in the denominator. A goal
  name without nouns gets 0.2. Synthetic goals carry the product's Title as ``name``.
- The real code sets the price term to None when ``price_upper <= 0`` and then crashes adding it;
  we raise ``ValueError`` instead (and likewise for an empty ``attributes`` list, where the real
  code divides by zero). Real goals always have ``price_upper`` >= 10 and >= 1 attribute.

Nouns come from a tagger (a callable: name -> lowercased nouns). The paper used spaCy's
``en_core_web_sm`` (tags NOUN and PROPN); ``SpacyTagger`` wraps it when installed. Offline, the
``LexiconTagger`` tags from a word -> POS table: for the generated catalog, whose every title
word is in its lexicon, those tags are the ground truth; on real titles it approximates spaCy, so
title scores (and rarely r_type) can differ from the paper's there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

try:
    from rapidfuzz import fuzz as _rapidfuzz
    from rapidfuzz.utils import default_process as _default_process
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "envs.webshop.reward needs rapidfuzz: pip install -e '.[webshop]' (or pip install rapidfuzz)"
    ) from exc

__all__ = [
    "COLOR_SET",
    "MATCH_THRESHOLD",
    "NOUN_TAGS",
    "LexiconTagger",
    "Reward",
    "SpacyTagger",
    "SpacyUnavailable",
    "Tagger",
    "attribute_reward",
    "fuzz_score",
    "get_reward",
    "guess_pos",
    "normalize_color",
    "option_reward",
    "spacy_available",
    "title_nouns",
    "type_reward",
]

MATCH_THRESHOLD = 85
"""A fuzzy match needs a (rounded) score strictly above this."""

NOUN_TAGS = frozenset({"NOUN", "PROPN"})
"""The POS tags goal.py counts as nouns (its third tag, 'PNOUN', is not a spaCy tag)."""

CATEGORY_SEP = "›"

# Word list from WebShop's web_agent_site/engine/normalize.py (MIT, princeton-nlp/WebShop).
# The order matters: normalize_color returns the first entry contained in the value.
COLOR_SET = (
    'alabaster', 'apricot', 'aqua', 'ash', 'asphalt', 'azure',
    'banana', 'beige', 'black', 'blue', 'blush', 'bordeaux', 'bronze',
    'brown', 'burgundy', 'camel', 'camo', 'caramel', 'champagne',
    'charcoal', 'cheetah', 'chestnut', 'chocolate', 'christmas', 'coffee',
    'cognac', 'copper', 'coral', 'cranberry', 'cream', 'crystal', 'dark',
    'denim', 'eggplant', 'elephant', 'espresso', 'fuchsia', 'gold', 'granite',
    'grape', 'graphite', 'grass', 'gray', 'green', 'grey', 'heather', 'indigo',
    'ivory', 'ivy', 'khaki', 'lavender', 'lemon', 'leopard', 'light', 'lilac',
    'lime', 'magenta', 'maroon', 'mauve', 'merlot', 'midnight', 'mint', 'mocha',
    'multicolor', 'mushroom', 'mustard', 'natural', 'navy', 'nude', 'olive',
    'orange', 'peach', 'pewter', 'pink', 'plum', 'purple', 'rainbow', 'red',
    'rose', 'royal', 'rust', 'sand', 'sapphire', 'seashell', 'silver', 'skull',
    'slate', 'steel', 'stone', 'stonewash', 'sunflower', 'tan', 'taupe', 'teal',
    'tiger', 'turquoise', 'violet', 'walnut', 'wheat', 'white', 'wine', 'yellow',
)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Fuzzy matching (thefuzz 0.22 semantics on rapidfuzz)
# --------------------------------------------------------------------------------------------

_DROP_LATIN1 = {code: None for code in range(128, 256)}  # thefuzz's utils.ascii_only table


def _thefuzz_process(value: Any) -> str:
    """thefuzz's full_process with force_ascii: stringify, drop chars 128-255, default_process."""
    return _default_process(str(value).translate(_DROP_LATIN1))


def fuzz_score(a: Any, b: Any) -> int:
    """``thefuzz.fuzz.token_set_ratio(a, b)`` (0.22): an int in 0..100.

    None on either side scores 0 (thefuzz checks that before stringifying). Anything else is
    stringified, so tuples and numbers work the way they do in the real reward."""
    if a is None or b is None:
        return 0
    score = _rapidfuzz.token_set_ratio(_thefuzz_process(a), _thefuzz_process(b), processor=None)
    return int(round(score))


def _fuzzy_match(a: Any, b: Any) -> bool:
    return fuzz_score(a, b) > MATCH_THRESHOLD


# --------------------------------------------------------------------------------------------
# Colors
# --------------------------------------------------------------------------------------------


def normalize_color(value: Any) -> Any:
    """The first COLOR_SET word that is ``in`` value, else value unchanged.

    ``in`` is a substring test for strings and element membership for tuples (synthetic goals
    pass ``(name, value)`` pairs), exactly as in WebShop."""
    return next((color for color in COLOR_SET if color in value), value)


# --------------------------------------------------------------------------------------------
# Noun taggers
# --------------------------------------------------------------------------------------------

Tagger = Callable[[str], Sequence[str]]
"""A product name -> its nouns, lowercased, in order, duplicates kept."""

# Words joined by inner apostrophes or dots stay one token ("3.1", "d.o.n"); any other
# non-space, non-alphanumeric character is a token of its own (spaCy splits "x-large" the same way).
_TOKEN_RE = re.compile(r"[^\W_]+(?:['’.][^\W_]+)*|[^\w\s]|_")
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")

_FUNCTION_WORDS = {
    **dict.fromkeys(("a", "an", "the", "this", "that", "these", "those", "each", "every", "no"), "DET"),
    **dict.fromkeys(("and", "or", "nor", "but", "plus"), "CCONJ"),
    **dict.fromkeys(
        (
            "for", "with", "without", "of", "in", "on", "to", "by", "from", "at", "as", "into",
            "per", "about", "over", "under", "up", "off", "out", "between", "against", "via",
        ),
        "ADP",
    ),
    **dict.fromkeys(("it", "its", "you", "your", "our", "my", "his", "her", "their", "we"), "PRON"),
    **dict.fromkeys(("not", "'s", "’s"), "PART"),
    **dict.fromkeys(("is", "are", "be", "was", "were"), "AUX"),
}  # fmt: skip
_ADJECTIVE_SUFFIXES = ("able", "ible", "less", "ful", "ous")
_MIN_SUFFIXED_LEN = 7  # "table", "cable" stay nouns; "portable", "wireless" become ADJ
_MIN_PARTICIPLE_LEN = 6  # "listed", "padded" become VERB; "bed", "shed", "speed" stay nouns


def guess_pos(token: str) -> str:
    """The fallback tag for a token missing from a lexicon (an approximation of spaCy).

    Punctuation -> PUNCT; digits -> NUM; a small closed list of determiners, conjunctions,
    prepositions and pronouns -> their tag; an alphabetic word of >= 7 letters ending in -able,
    -ible, -less, -ful or -ous -> ADJ; one of >= 6 letters ending in -ed (not -eed) -> VERB;
    every other word, mixed letters and digits included ("4k", "ht830v") -> NOUN. Titles are
    mostly noun phrases, and spaCy tags most unknown capitalized words PROPN, a noun too."""
    lower = token.lower()
    if lower in _FUNCTION_WORDS:
        return _FUNCTION_WORDS[lower]
    if not any(ch.isalnum() for ch in token):
        return "PUNCT"
    if _NUMBER_RE.fullmatch(token):
        return "NUM"
    if not lower.isalpha():
        return "NOUN"
    if len(lower) >= _MIN_SUFFIXED_LEN and lower.endswith(_ADJECTIVE_SUFFIXES):
        return "ADJ"
    if len(lower) >= _MIN_PARTICIPLE_LEN and lower.endswith("ed") and not lower.endswith("eed"):
        return "VERB"
    return "NOUN"


def _split_possessive(token: str) -> list[str]:
    """spaCy splits a trailing possessive off a word: "men's" -> "men", "'s"."""
    if len(token) > 2 and token[-2:].lower() in ("'s", "’s"):
        return [token[:-2], token[-2:]]
    return [token]


class LexiconTagger:
    """Tags a name from a word -> POS table (Universal POS tags as spaCy prints them).

    Tokenization follows spaCy on plain titles: words, numbers and each punctuation mark are
    separate tokens, "3.1" and "d.o.n" stay whole, a trailing "'s" is split off. Lookup is
    lowercased. A word missing from the lexicon gets ``fallback(token)`` (``guess_pos`` by
    default). This is exact only when every title word is in the lexicon (the generated
    catalog); on real titles it approximates spaCy, and ``unknown_words`` shows where."""

    def __init__(self, lexicon: Mapping[str, str], fallback: Callable[[str], str] = guess_pos):
        self.lexicon = {word.lower(): tag for word, tag in lexicon.items()}
        self.fallback = fallback

    @staticmethod
    def tokenize(name: str) -> list[str]:
        """The name's tokens, original case."""
        return [part for token in _TOKEN_RE.findall(name) for part in _split_possessive(token)]

    def tag(self, name: str) -> list[tuple[str, str]]:
        """(token, POS) for every token of the name."""
        return [(token, self._pos(token)) for token in self.tokenize(name)]

    def unknown_words(self, name: str) -> list[str]:
        """Alphanumeric tokens of the name that the lexicon lacks (tagged by the fallback)."""
        tokens = self.tokenize(name)
        return [t for t in tokens if t.lower() not in self.lexicon and any(c.isalnum() for c in t)]

    def __call__(self, name: str) -> list[str]:
        return [token.lower() for token, pos in self.tag(name) if pos in NOUN_TAGS]

    def _pos(self, token: str) -> str:
        tag = self.lexicon.get(token.lower())
        return tag if tag is not None else self.fallback(token)


class SpacyUnavailable(RuntimeError):
    """spaCy or its en_core_web_sm model is missing."""


_SPACY_INSTALL = "pip install spacy && python -m spacy download en_core_web_sm"
_SPACY_MODELS: dict[str, Any] = {}


class SpacyTagger:
    """The paper's tagger: spaCy's ``en_core_web_sm``, tokens tagged NOUN or PROPN, lowercased.

    The model is loaded once per process. Raises ``SpacyUnavailable`` (with the install command)
    when spaCy or the model cannot be loaded."""

    def __init__(self, model: str = "en_core_web_sm"):
        self.model = model
        self._nlp = _load_spacy(model)

    def tag(self, name: str) -> list[tuple[str, str]]:
        return [(token.text, token.pos_) for token in self._nlp(name)]

    def __call__(self, name: str) -> list[str]:
        return [token.lower() for token, pos in self.tag(name) if pos in NOUN_TAGS]


def _load_spacy(model: str) -> Any:
    if model in _SPACY_MODELS:
        return _SPACY_MODELS[model]
    try:
        import spacy
    except ImportError as exc:
        raise SpacyUnavailable(f"SpacyTagger needs spaCy and {model}: {_SPACY_INSTALL}") from exc
    try:
        nlp = spacy.load(model)
    except OSError as exc:
        raise SpacyUnavailable(f"spaCy model {model!r} is not installed: {_SPACY_INSTALL}") from exc
    _SPACY_MODELS[model] = nlp
    return nlp


def spacy_available(model: str = "en_core_web_sm") -> bool:
    """Whether ``SpacyTagger(model)`` would work (loads the model when it can: then it is cached)."""
    try:
        _load_spacy(model)
    except SpacyUnavailable:
        return False
    return True


def title_nouns(name: str, tagger: Tagger) -> list[str]:
    """The nouns of a product name, lowercased (whatever case a custom tagger returns)."""
    return [noun.lower() for noun in tagger(name)]


# --------------------------------------------------------------------------------------------
# The reward's parts
# --------------------------------------------------------------------------------------------


def _category_parts(path: str) -> set[str]:
    return {part.strip() for part in path.split(CATEGORY_SEP)}


def _title_score(purchased_name: str, goal_name: str, tagger: Tagger) -> float:
    """Share of the goal name's nouns (a list: repeats count) found in the purchased name's."""
    wanted = title_nouns(goal_name, tagger)
    if not wanted:
        return 0.2
    return len(set(title_nouns(purchased_name, tagger)) & set(wanted)) / len(wanted)


def _type_factor(query_match: bool, category_match: bool, title_score: float) -> float:
    """goal.py's r_type rules, applied in its order: the title overrides come last and win."""
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type


def type_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any], tagger: Tagger) -> dict[str, Any]:
    """Is the purchase the same kind of product? ``dict(r_type, query_match, category_match,
    title_score)`` from the scraping query, the category path and the nouns of the names."""
    query_match = purchased["query"] == goal["query"]
    shared = _category_parts(purchased["product_category"]) & _category_parts(goal["product_category"])
    category_match = len(shared) >= 2
    title_score = _title_score(purchased["name"], goal["name"], tagger)
    return {
        "r_type": _type_factor(query_match, category_match, title_score),
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def _attribute_in_text(attribute: str, product: Mapping[str, Any]) -> bool:
    """The text fallback, evaluated lazily in goal.py's order (Title, BulletPoints, Description):
    a product whose listed Attributes match never needs the text fields."""
    return (
        attribute in product["Title"].lower()
        or attribute in " ".join(product["BulletPoints"]).lower()
        or attribute in product["Description"].lower()
    )


def _attribute_matches(attribute: str, product: Mapping[str, Any]) -> bool:
    listed = any(_fuzzy_match(have, attribute) for have in product["Attributes"])
    return listed or _attribute_in_text(attribute, product)


def attribute_reward(purchased: Mapping[str, Any], goal: Mapping[str, Any]) -> tuple[float, int]:
    """(share of goal attributes the product has, how many): fuzzy against ``Attributes``, else
    the goal attribute as written (not lowercased) inside the lowercased text fields."""
    wanted = goal["attributes"]
    if len(wanted) == 0:
        raise ValueError("goal['attributes'] is empty: WebShop's reward divides by its length")
    n_matches = sum(1 for attribute in wanted if _attribute_matches(attribute, purchased))
    return n_matches / len(wanted), n_matches


def option_reward(purchased_options: Iterable[Any], goal_options: Iterable[Any]) -> tuple[float | None, int]:
    """(share of goal options some chosen option fuzzy-matches, how many), both sides color-
    normalized first; the share is None when the goal has no options. ``goal_options`` is a
    human goal's list of strings or a synthetic goal's ``dict.items()``."""
    have = [normalize_color(option) for option in purchased_options]
    wanted = [normalize_color(option) for option in goal_options]
    n_matches = sum(1 for option in wanted if any(_fuzzy_match(chosen, option) for chosen in have))
    return (n_matches / len(wanted) if wanted else None), n_matches


# --------------------------------------------------------------------------------------------
# The total
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reward:
    """The purchase's reward and its parts, as goal.py's ``get_reward(..., verbose=True)``.

    ``r_option``/``w_option`` are None when the goal has no options; ``r_price`` is the price
    test. ``won`` is the papers' success: total == 1.0."""

    total: float
    r_type: float
    r_att: float
    r_option: float | None
    r_price: bool
    query_match: bool
    category_match: bool
    title_score: float
    n_att: int
    n_opt: int
    w_att: float
    w_option: float | None
    w_price: float

    @property
    def won(self) -> bool:
        return self.total == 1.0

    def info(self) -> dict[str, Any]:
        """The real verbose ``info`` dict, same keys (r_option/w_option only with goal options)."""
        keys = ("r_type", "r_att", "w_att", "query_match", "category_match", "title_score")
        info = {key: getattr(self, key) for key in keys}
        if self.r_option is not None:
            info.update(r_option=self.r_option, w_option=self.w_option)
        info.update(r_price=self.r_price, w_price=self.w_price)
        return info

    def as_terms(self) -> dict[str, float]:
        """Every defined part as a float, for logging (r_option/w_option left out when None)."""
        return {key: float(value) for key, value in asdict(self).items() if value is not None}


def _options_to_compare(goal_options: Any) -> Iterable[Any]:
    """A synthetic goal's dict is compared by its (name, value) items, a human goal's list as is."""
    return goal_options.items() if isinstance(goal_options, dict) else goal_options


def _price_ok(price: float, goal: Mapping[str, Any]) -> bool:
    price_upper = goal["price_upper"]
    if not price_upper > 0:
        raise ValueError(
            f"goal['price_upper'] must be > 0, got {price_upper!r}: WebShop's reward has no price "
            "term then and fails (use 1000000 for 'no cap', as WebShop does)"
        )
    return price <= price_upper


def get_reward(
    purchased: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
    tagger: Tagger,
) -> Reward:
    """WebShop's reward for buying ``purchased`` at ``price`` with ``options`` (option name ->
    chosen value) against ``goal``. ``price`` is the product's sampled price, not its text."""
    r_price = _price_ok(price, goal)
    kind = type_reward(purchased, goal, tagger)
    r_att, n_att = attribute_reward(purchased, goal)
    r_option, n_opt = option_reward(list(options.values()), _options_to_compare(goal["goal_options"]))
    denominator = len(goal["attributes"]) + len(goal["goal_options"]) + 1
    total = (n_att + n_opt + r_price) / denominator
    total *= kind["r_type"]  # same float operations, same order, as goal.py
    return Reward(
        total=total,
        r_type=kind["r_type"],
        r_att=r_att,
        r_option=r_option,
        r_price=r_price,
        query_match=kind["query_match"],
        category_match=kind["category_match"],
        title_score=kind["title_score"],
        n_att=n_att,
        n_opt=n_opt,
        w_att=len(goal["attributes"]) / denominator,
        w_option=len(goal["goal_options"]) / denominator if r_option is not None else None,
        w_price=1 / denominator,
    )
