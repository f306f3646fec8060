"""A seeded WebShop catalog: products with near-miss siblings, and goals, in WebShop's raw schema.

The real catalog (1.18M scraped Amazon products, multi-GB, Java search) is what keeps WebShop off
laptops. This generator writes the same three files from ``data/product_types.json`` (30 product
types in WebShop's five categories, each with attribute phrases, option schemas, title nouns and a
price range; every title word tagged, so the reward's title nouns are exact without spaCy), and the
same loader (``envs.webshop.products``) reads them as it reads the real ones.

What makes the task hard rather than a lookup: each *goal product* (the one an instruction asks
for) comes with hard negatives of the same look (same brand, same title shape), each failing the
goal in exactly one way:

* ``attribute``: one of the instruction's attributes replaced by another of the type's;
* ``option``: other values of one option (the goal's color, say, is not on offer);
* ``price``: the same product at a price above any cap the goal can get (caps are at most 40
  dollars above the goal product's price);
* ``type``: a product of another category carrying the goal's attributes (the reward's type
  factor then pays 0 or 0.1).

The rest of the catalog is filler products of every type. Goals come in both of WebShop's
formats: synthetic (``items_ins_v2``: an instruction and its attributes; the loader makes one goal
per option combination) and human-like (``items_human_ins``: instructions naming attributes and
option values as a list). ``check_goals`` (run by the tests on every generated catalog) proves each
goal achievable: the goal product is in the top 50 of a search for the instruction, and buying it
with the goal's options scores exactly 1.0, while every negative scores less.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = ["Catalog", "ProductType", "generate_catalog", "load_vocabulary", "UNSEEN_TYPES_PER_CATEGORY"]

VOCABULARY_PATH = Path(__file__).parent / "data" / "product_types.json"
UNSEEN_TYPES_PER_CATEGORY = 1  # the last type of each category: the "unseen product type" test split
GOAL_SHARE = 0.12  # goal products per catalog product (each brings 4 negatives: 60% of the catalog)
NEGATIVE_KINDS = ("attribute", "option", "price", "type")

_SYNTHETIC_TEMPLATES = (
    "i need {a} {attrs} {noun}",
    "i am looking for {a} {noun} that is {attrs}",
    "find me {a} {attrs} {noun}",
    "i want to buy {a} {noun} which is {attrs}",
)
_HUMAN_TEMPLATES = (
    "i want {a} {attrs} {noun} {opts}",
    "i'm looking for {a} {noun} that is {attrs}, {opts}",
    "please find {a} {attrs} {noun} {opts}",
)
_DESCRIPTION = (
    "The {brand} {noun} is {attrs}.",
    "Designed to be {attrs}, this {noun} from {brand} is built for everyday use.",
    "Meet the {noun} by {brand}: {attrs}.",
)


@dataclass(frozen=True)
class ProductType:
    """One product type of the vocabulary (``data/product_types.json``; its README has the schema)."""

    type: str
    category: str
    query: str
    product_category: str
    noun_phrases: tuple[str, ...]
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]]
    specs: tuple[str, ...]
    price: tuple[float, float]
    range_price_share: float


@dataclass(frozen=True)
class Vocabulary:
    brands: tuple[str, ...]
    types: tuple[ProductType, ...]
    lexicon: dict[str, str]

    def unseen_types(self) -> frozenset[str]:
        """The held-out types of the ``unseen`` test split: the last of each category."""
        by_category: dict[str, list[str]] = {}
        for t in self.types:
            by_category.setdefault(t.category, []).append(t.type)
        return frozenset(
            name for names in by_category.values() for name in names[-UNSEEN_TYPES_PER_CATEGORY:]
        )


@lru_cache(maxsize=4)
def load_vocabulary(path: Path = VOCABULARY_PATH) -> Vocabulary:
    with open(path) as f:
        data = json.load(f)
    types = tuple(
        ProductType(
            type=t["type"],
            category=t["category"],
            query=t["query"],
            product_category=t["product_category"],
            noun_phrases=tuple(t["noun_phrases"]),
            attributes=tuple(t["attributes"]),
            options={name: tuple(values) for name, values in t["options"].items()},
            specs=tuple(t.get("specs", ())),
            price=(float(t["price"][0]), float(t["price"][1])),
            range_price_share=float(t.get("range_price_share", 0.0)),
        )
        for t in data["types"]
    )
    return Vocabulary(tuple(data["brands"]), types, {k.lower(): v for k, v in data["lexicon"].items()})


@dataclass
class Catalog:
    """A generated catalog in WebShop's raw schema: ``products`` is ``items_shuffle.json``,
    ``attributes`` ``items_ins_v2.json``, ``human`` ``items_human_ins.json``. ``roles`` says what each
    asin is (``"goal"``, ``"filler"`` or ``"negative:<kind>:<goal asin>"``) and ``types`` its product type."""

    products: list[dict] = field(default_factory=list)
    attributes: dict[str, dict] = field(default_factory=dict)
    human: dict[str, list[dict]] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)

    def write(self, directory: Path) -> None:
        """Write the three files under WebShop's names (so WebShop's own code can read them too)."""
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in (
            ("items_shuffle.json", self.products),
            ("items_ins_v2.json", self.attributes),
            ("items_human_ins.json", self.human),
        ):
            with open(directory / name, "w") as f:
                json.dump(data, f)


class _Maker:
    """Draws products of one catalog from one RNG (so a catalog is a pure function of its seed)."""

    def __init__(self, vocabulary: Vocabulary, rng: random.Random) -> None:
        self.vocabulary, self.rng = vocabulary, rng
        self.asins: set[str] = set()
        self.catalog = Catalog()

    def asin(self) -> str:
        while True:  # WebShop's asins: "B0" and 8 upper-case letters or digits
            asin = "B0" + "".join(self.rng.choices(string.ascii_uppercase + string.digits, k=8))
            if asin not in self.asins:
                self.asins.add(asin)
                return asin

    def price(self, t: ProductType) -> str:
        low, high = t.price
        a = round(self.rng.uniform(low, high), 2)
        if self.rng.random() < t.range_price_share:
            b = round(a * self.rng.uniform(1.1, 1.6), 2)
            return f"${a:.2f} to ${b:.2f}"
        return f"${a:.2f}"

    def options(self, t: ProductType) -> dict[str, list[str]]:
        return {
            name: sorted(self.rng.sample(values, self.rng.randint(2, min(4, len(values)))), key=values.index)
            for name, values in t.options.items()
        }

    def add(
        self,
        t: ProductType,
        brand: str,
        attributes: list[str],
        options: dict[str, list[str]],
        pricing: str,
        role: str,
        noun: str | None = None,
        title_attribute: str | None = None,
    ) -> dict:
        """One raw product record (and its ``items_ins_v2`` entry): the title shows at most one
        attribute, the description and bullets the others, so search can find them all."""
        rng = self.rng
        noun = noun or rng.choice(t.noun_phrases)
        spec = rng.choice(t.specs) if t.specs and rng.random() < 0.5 else ""
        title = " ".join(w for w in (brand, title_attribute or "", spec, noun) if w)
        title = " ".join(word.capitalize() for word in title.split())
        shown = [a for a in attributes if a != title_attribute]
        description = rng.choice(_DESCRIPTION).format(
            brand=brand, noun=noun, attrs=_join(shown) if shown else "well made"
        )
        bullets = [f"{a.capitalize()}." for a in shown] + [f"{noun.capitalize()} by {brand}."]
        record = {
            "asin": self.asin(),
            "name": title,
            "full_description": description,
            "small_description": bullets,
            "pricing": pricing,
            "images": [""],
            "category": t.category,
            "query": t.query,
            "product_category": t.product_category,
            "customization_options": {
                name: [{"value": value, "image": None} for value in values]
                for name, values in options.items()
            }
            or None,
        }
        self.catalog.products.append(record)
        self.catalog.attributes[record["asin"]] = {"attributes": list(attributes)}
        self.catalog.roles[record["asin"]] = role
        self.catalog.types[record["asin"]] = t.type
        return record

    def filler(self, t: ProductType) -> None:
        attributes = self.rng.sample(t.attributes, self.rng.randint(2, 4))
        title_attribute = self.rng.choice(attributes + [None])
        self.add(
            t,
            self.rng.choice(self.vocabulary.brands),
            attributes,
            self.options(t),
            self.price(t),
            "filler",
            title_attribute=title_attribute,
        )

    def goal_group(self, t: ProductType, other_types: list[ProductType]) -> None:
        """A goal product, its instructions (both formats) and its four hard negatives."""
        rng = self.rng
        brand = rng.choice(self.vocabulary.brands)
        noun = rng.choice(t.noun_phrases)
        attributes = rng.sample(t.attributes, rng.randint(3, 4))
        wanted = attributes[: rng.randint(2, len(attributes) - 1)]  # the instruction's attributes
        options = self.options(t)
        pricing = self.price(t)
        # the title may show the one attribute not asked for (the "attribute" negative keeps it)
        title_attribute = rng.choice([None, attributes[-1]])
        goal = self.add(t, brand, attributes, options, pricing, "goal", noun, title_attribute)
        asin = goal["asin"]
        a = _ARTICLE  # settled by the word that follows it, see _article
        self.catalog.attributes[asin].update(
            instruction=_article(
                rng.choice(_SYNTHETIC_TEMPLATES).format(a=a, attrs=_join(wanted), noun=noun)
            ),
            instruction_attributes=list(wanted),
        )
        chosen = {name: rng.choice(values) for name, values in options.items()}
        self.catalog.human[asin] = [
            {
                "asin": asin,
                "instruction": _article(
                    rng.choice(_HUMAN_TEMPLATES).format(
                        a=a, attrs=_join(wanted), noun=noun, opts=_options_text(chosen)
                    )
                ),
                "instruction_attributes": list(wanted),
                "instruction_options": list(chosen.values()),
            }
        ]
        # attribute: one asked-for attribute swapped for one the type has and the goal lacks
        spare = [x for x in t.attributes if x not in attributes]
        swapped = [x if x != wanted[-1] else rng.choice(spare) for x in attributes]
        self.add(t, brand, swapped, options, pricing, f"negative:attribute:{asin}", noun, title_attribute)
        # option: every value of one option replaced by values the goal product does not offer
        name = rng.choice(sorted(options))
        others = [v for v in t.options[name] if v not in options[name]]
        if others:
            changed = {
                **options,
                name: sorted(rng.sample(others, min(len(others), 2)), key=t.options[name].index),
            }
            self.add(t, brand, attributes, changed, pricing, f"negative:option:{asin}", noun, title_attribute)
        # price: above any cap (a cap is at most the 4th multiple of 10 above the price paid)
        top = max(float(p) for p in pricing.replace("$", "").split(" to "))
        self.add(
            t,
            brand,
            attributes,
            options,
            f"${top + 50.0:.2f}",
            f"negative:price:{asin}",
            noun,
            title_attribute,
        )
        # type: another category's product that carries the asked-for attributes
        # (another brand: a brand is a proper noun, and one shared title noun of a short title
        # lifts the type factor to 1)
        other = rng.choice(other_types)
        brand_b = rng.choice([b for b in self.vocabulary.brands if b != brand])
        self.add(other, brand_b, list(wanted), self.options(other), pricing, f"negative:type:{asin}")


_ARTICLE = "<article>"


def _article(text: str) -> str:
    """ "a" or "an" by the sound of the next word's first letter (good enough for the vocabulary)."""
    head, _, tail = text.partition(_ARTICLE + " ")
    if not _:
        return text
    return f"{head}{'an' if tail[:1] in 'aeiou' else 'a'} {tail}"


def _join(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def _options_text(chosen: dict[str, str]) -> str:
    parts = [f"in {value}" if name == "color" else f"{name} {value}" for name, value in chosen.items()]
    return _join(parts) if parts else ""


def generate_catalog(
    num_products: int = 1000, seed: int = 0, vocabulary: Vocabulary | None = None
) -> Catalog:
    """A catalog of ``num_products`` products (about 12% goal products, 48% their negatives, 40%
    filler), deterministic in ``seed``, its records in shuffled order as ``items_shuffle.json``."""
    if isinstance(num_products, bool) or not isinstance(num_products, int) or num_products < 10:
        raise ValueError(f"generate_catalog: num_products must be an int >= 10, got {num_products!r}")
    vocabulary = vocabulary or load_vocabulary()
    rng = random.Random(f"webshop-catalog-{seed}")
    maker = _Maker(vocabulary, rng)
    goal_products = max(1, int(num_products * GOAL_SHARE))
    types = vocabulary.types
    for i in range(goal_products):
        t = types[i % len(types)]
        maker.goal_group(t, [o for o in types if o.category != t.category])
        if len(maker.catalog.products) >= num_products:
            break
    while len(maker.catalog.products) < num_products:
        maker.filler(rng.choice(types))
    catalog = maker.catalog
    del catalog.products[num_products:]
    kept = {p["asin"] for p in catalog.products}
    for table in (catalog.attributes, catalog.human, catalog.roles, catalog.types):
        for asin in [a for a in table if a not in kept]:
            del table[asin]
    rng.shuffle(catalog.products)
    return catalog
