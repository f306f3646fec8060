"""WebShop's data files -> the products and goals a shop plays, as WebShop's own loader makes them.

One loader serves WebShop's real files and the catalogs ``envs.webshop.catalog`` generates, since
both are in the real raw schema (``items_shuffle*.json``, ``items_ins_v2*.json``,
``items_human_ins.json``; README of ``envs/webshop``). What it reproduces of
``web_agent_site/engine/engine.py`` (``load_products``, ``generate_product_prices``) and
``goal.py`` (``get_human_goals``, ``get_synthetic_goals``):

* products: asins ``'nan'`` or longer than 10 characters and duplicates dropped; ``Title`` =
  ``name``; ``Description``; ``BulletPoints`` (a list); ``pricing`` (floats parsed from
  ``"$8.50 to $15.00"``, at most two) and ``Price`` (``"$8.5 to $15.0"``: floats as Python prints
  them); ``options`` (option names and values lowercased, ``/`` in a value -> `` | ``);
  ``Attributes`` from ``items_ins_v2`` (``['DUMMY_ATTR']`` when absent); ``Rating`` ``"N.A."`` and
  no reviews (the real loader has review loading commented out); ``query`` lowercased, stripped;
* prices: one per product, drawn once: the price; for a range ``uniform(low, high)``; 100.0 when
  there is none;
* goals: human goals (one per instruction of ``items_human_ins``; instructions with no
  attributes skipped; ``goal_options`` a list) or synthetic ones (one per *combination* of the
  product's option values, ``goal_options`` a dict, the instruction extended with
  `` with color: black, and size: 9``); ``price_upper``: of the first four multiples of 10 above
  the price, two drawn, the larger kept (and ``", and price lower than 40.00 dollars"`` appended);
  1,000,000 and no price text when fewer than two exist; then shuffled by ``random.seed(233)``.

What differs, on purpose: the real code draws prices and caps from Python's *unseeded* global
RNG before it seeds 233, so every server restart changes the instructions' price text and the
price a range-priced purchase is charged (research report, B4). Here they come from
``random.Random(price_seed)``: the same data and seed give the same goals, on every machine.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

__all__ = [
    "GOAL_SHUFFLE_SEED",
    "PRICE_RANGE",
    "DataFiles",
    "find_data_files",
    "goal_price",
    "load_products",
    "make_goals",
    "product_prices",
]

PRICE_RANGE = [10.0 * i for i in range(1, 100)]  # the caps a goal's price_upper is drawn from
GOAL_SHUFFLE_SEED = 233  # SimServer: random.seed(233); random.shuffle(goals)
NO_PRICE = 100.0
NO_CAP = 1_000_000


def _parse_pricing(pricing: Any) -> list[float]:
    """``"$8.50 to $15.00"`` -> ``[8.5, 15.0]``; no price -> ``[100.0]``. Pieces with no number in
    them (the real code would crash on them) are skipped."""
    if not pricing or not isinstance(pricing, str):
        return [NO_PRICE]
    values = []
    for piece in pricing.split("$")[1:]:
        try:
            values.append(float(Decimal(re.sub(r"[^\d.]", "", piece))))
        except InvalidOperation:
            continue
    return values[:2] or [NO_PRICE]


def _price_tag(pricing: list[float]) -> str:
    return f"${pricing[0]}" if len(pricing) == 1 else f"${pricing[0]} to ${pricing[1]}"


def _options(customization: Any) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    if not isinstance(customization, dict):
        return options
    for name, contents in customization.items():
        if contents is None:
            continue
        options[str(name).lower()] = [
            str(content["value"]).strip().replace("/", " | ").lower() for content in contents
        ]
    return options


def load_products(
    raw: list[dict],
    attributes: dict[str, dict],
    human_instructions: dict[str, list[dict]] | None = None,
    num_products: int | None = None,
) -> list[dict]:
    """Raw product records -> product dicts in WebShop's loaded shape (see the module docstring).

    Args:
        raw: ``items_shuffle*.json``'s list (already shuffled, so ``num_products`` keeps a prefix).
        attributes: ``items_ins_v2*.json``: asin -> ``{attributes, instruction, instruction_attributes}``.
        human_instructions: ``items_human_ins.json``: asin -> instructions (human goals), or None.
        num_products: Keep the first N raw records (WebShop's 100 / 1k / 100k variants).
    """
    if num_products is not None:
        raw = raw[:num_products]
    products, seen = [], set()
    for record in raw:
        asin = str(record.get("asin", "nan"))
        if asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        small = record.get("small_description") or []
        pricing = _parse_pricing(record.get("pricing"))
        ins = attributes.get(asin, {})
        product = {
            "asin": asin,
            "name": record.get("name", ""),
            "Title": record.get("name", ""),
            "Description": record.get("full_description") or "",
            "BulletPoints": list(small) if isinstance(small, list) else [small],
            "pricing": pricing,
            "Price": _price_tag(pricing),
            "options": _options(record.get("customization_options")),
            "Attributes": ins["attributes"] if "attributes" in ins else ["DUMMY_ATTR"],
            "Reviews": [],
            "Rating": "N.A.",
            "category": record.get("category", ""),
            "query": str(record.get("query", "")).lower().strip(),
            "product_category": record.get("product_category", ""),
            "instruction_text": ins.get("instruction"),
            "instruction_attributes": ins.get("instruction_attributes"),
        }
        if human_instructions is not None and asin in human_instructions:
            product["instructions"] = human_instructions[asin]
        products.append(product)
    return products


def product_prices(products: list[dict], rng: random.Random) -> dict[str, float]:
    """The price each product is charged at: drawn once (``generate_product_prices``)."""
    prices = {}
    for product in products:
        pricing = product["pricing"]
        prices[product["asin"]] = pricing[0] if len(pricing) == 1 else rng.uniform(*pricing[:2])
    return prices


def goal_price(price: float, rng: random.Random) -> tuple[float, str]:
    """A goal's ``price_upper`` and the instruction's price text, from the product's price."""
    above = [p for p in PRICE_RANGE if p > price][:4]
    if len(above) < 2:
        return NO_CAP, ""
    _, upper = sorted(rng.sample(above, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def _goal(product: dict, instruction: str, attributes: list[str], options: Any, upper: float) -> dict:
    return {
        "asin": product["asin"],
        "category": product["category"],
        "query": product["query"],
        "name": product["Title"],
        "product_category": product["product_category"],
        "instruction_text": instruction,
        "attributes": attributes,
        "price_upper": upper,
        "goal_options": options,
    }


def _human_goals(products: list[dict], prices: dict[str, float], rng: random.Random) -> list[dict]:
    goals = []
    for product in products:
        for ins in product.get("instructions", []):
            if not ins.get("instruction_attributes"):
                continue
            upper, price_text = goal_price(prices[product["asin"]], rng)
            text = ins["instruction"].strip(".") + price_text
            goal = _goal(
                product, text, ins["instruction_attributes"], ins.get("instruction_options", []), upper
            )
            goal["weight"] = 1
            goals.append(goal)
    return goals


def _synthetic_goals(products: list[dict], prices: dict[str, float], rng: random.Random) -> list[dict]:
    goals = []
    for product in products:
        if not product.get("instruction_text"):
            continue
        upper, price_text = goal_price(prices[product["asin"]], rng)
        names = sorted(product["options"])
        for combination in itertools.product(*(product["options"][name] for name in names)):
            options = dict(zip(names, combination, strict=True))
            option_text = ", and ".join(f"{k}: {v}" for k, v in options.items())
            option_text = f" with {option_text}" if option_text else ""
            text = f"{product['instruction_text']}{option_text}{price_text}"
            goals.append(_goal(product, text, product["instruction_attributes"], options, upper))
    counts = Counter(att for goal in goals for att in goal["attributes"])
    for goal in goals:  # rarer attributes weigh more (used when drawing a goal at random)
        goal["weight"] = sum(1.0 / counts[att] for att in goal["attributes"]) / len(goal["attributes"])
    return goals


def make_goals(products: list[dict], prices: dict[str, float], human: bool, rng: random.Random) -> list[dict]:
    """WebShop's goals, in WebShop's order: built, then shuffled with seed 233."""
    goals = (_human_goals if human else _synthetic_goals)(products, prices, rng)
    random.Random(GOAL_SHUFFLE_SEED).shuffle(goals)
    return goals


class DataFiles:
    """The three files of a WebShop data directory."""

    def __init__(self, products: Path, attributes: Path, human: Path) -> None:
        self.products, self.attributes, self.human = products, attributes, human

    def load(self, num_products: int | None = None, human: bool = True) -> list[dict]:
        with open(self.products) as f:
            raw = json.load(f)
        with open(self.attributes) as f:
            attributes = json.load(f)
        human_instructions = None
        if human:
            with open(self.human) as f:
                human_instructions = json.load(f)
        return load_products(raw, attributes, human_instructions, num_products)


def find_data_files(root: Path, small: bool) -> DataFiles:
    """The real data's files in ``root`` (``$WEBSHOP_DATA``): ``items_shuffle_1000.json`` and
    ``items_ins_v2_1000.json`` when ``small`` (verl-agent's default), else the full
    ``items_shuffle.json`` and ``items_ins_v2.json``; ``items_human_ins.json`` either way."""
    suffix = "_1000" if small else ""
    files = DataFiles(
        root / f"items_shuffle{suffix}.json",
        root / f"items_ins_v2{suffix}.json",
        root / "items_human_ins.json",
    )
    missing = [p.name for p in (files.products, files.attributes, files.human) if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"WebShop data: {', '.join(missing)} not in {root}. Set $WEBSHOP_DATA (or data_dir=) to the "
            "directory holding WebShop's data files (WebShop's setup.sh downloads them into data/), "
            "or play the generated catalog (source='generated', the default)."
        )
    return files
