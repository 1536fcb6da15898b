"""Retail missions for the seeded task generator (`shiftbox tasks generate retail`).

Same contract as `shiftbox_servers.banking._missions` (read its docstring for the mission format):
one builder per goal label, `build(db, rng, subject) -> Mission | None`, where `subject` is a
`users` row (plus `customer_id` and `full_name`, see `MISSIONS.subjects_query`).

Retail has no identification goal label: every goal's tools include the two identification tools.
So the first customer-specific mission of a task opens with the identification call
(`find_user_id_by_email`, or `find_user_id_by_name_zip` when the customer does not remember their
email), and its other calls depend on it; later missions of the same task skip it. The builders
recognise "the same task" by the episode database connection they are given (one per attempt).
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace
from typing import Any

from shiftbox_servers.kit import Fact, FactUse, Given, Mission, MissionSet
from shiftbox_servers.kit import mission as _mission
from shiftbox_servers.kit import mission_call as _call
from shiftbox_servers.kit import select_rows as _rows

PENDING, PENDING_MODIFIED, DELIVERED = "pending", "pending (item modified)", "delivered"
NEW_ADDRESSES = (
    {"address1": "418 Maple Avenue", "address2": "Apt 3B", "city": "Columbus", "state": "OH", "country": "USA",
     "zip": "43215"},
    {"address1": "27 Harbor View Road", "address2": "", "city": "Portland", "state": "ME", "country": "USA",
     "zip": "04101"},
    {"address1": "1550 Sunset Boulevard", "address2": "Suite 210", "city": "Los Angeles", "state": "CA",
     "country": "USA", "zip": "90026"},
    {"address1": "902 Elm Street", "address2": "", "city": "Madison", "state": "WI", "country": "USA",
     "zip": "53703"},
    {"address1": "66 Riverside Drive", "address2": "Unit 12", "city": "Austin", "state": "TX", "country": "USA",
     "zip": "78704"},
    {"address1": "3301 Pine Crest Lane", "address2": "", "city": "Denver", "state": "CO", "country": "USA",
     "zip": "80211"},
)
CANCEL_STORIES = {"no longer needed": "you no longer need it", "ordered by mistake": "you ordered it by mistake"}

_IDENTIFIED: dict[int, tuple[sqlite3.Connection, str | None]] = {}
"""Episode connection -> the connection (kept alive so ids are not reused) and the goal whose mission opened with the
identification call (None: that goal's last build needed none)."""


def _user(db: sqlite3.Connection, user_id: str) -> dict[str, Any]:
    return _rows(db, "SELECT * FROM users WHERE user_id = ?", (user_id,))[0]


def _orders(db: sqlite3.Connection, user_id: str, statuses: tuple[str, ...]) -> list[dict[str, Any]]:
    marks = ", ".join("?" * len(statuses))
    return _rows(db, f"SELECT * FROM orders WHERE user_id = ? AND status IN ({marks}) ORDER BY order_id",
                 (user_id, *statuses))


def _lines(db: sqlite3.Connection, order_id: str) -> list[dict[str, Any]]:
    return _rows(db, "SELECT i.line_no, i.item_id, i.price, v.product_id, v.options, p.name FROM order_items i "
                     "JOIN variants v USING (item_id) JOIN products p USING (product_id) WHERE i.order_id = ? "
                     "ORDER BY i.line_no", (order_id,))


def _alternatives(db: sqlite3.Connection, line: dict[str, Any]) -> list[dict[str, Any]]:
    """Available variants of the line's product other than its own item."""
    return _rows(db, "SELECT * FROM variants WHERE product_id = ? AND available = 1 AND item_id != ? "
                     "ORDER BY item_id", (line["product_id"], line["item_id"]))


def _methods(db: sqlite3.Connection, user_id: str) -> list[dict[str, Any]]:
    return _rows(db, "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY payment_method_id", (user_id,))


def _net_paid(db: sqlite3.Connection, order_id: str) -> dict[str, float]:
    net: dict[str, float] = {}
    for p in _rows(db, "SELECT * FROM order_payments WHERE order_id = ? ORDER BY seq", (order_id,)):
        sign = 1 if p["transaction_type"] == "payment" else -1
        net[p["payment_method_id"]] = net.get(p["payment_method_id"], 0.0) + sign * p["amount"]
    return {pm: round(amount, 2) for pm, amount in net.items() if round(amount, 2) > 0}


def _covers(method: dict[str, Any], amount: float) -> bool:
    """The method can be charged `amount` (a gift card needs the balance)."""
    return method["source"] != "gift_card" or method["balance"] >= amount


def _describe(method: dict[str, Any]) -> str:
    if method["source"] == "credit_card":
        return f"{method['brand']} credit card ending in {method['last_four']} ({method['payment_method_id']})"
    if method["source"] == "gift_card":
        return f"gift card {method['payment_method_id']}"
    return f"PayPal account {method['payment_method_id']}"


def _options(variant_options: str) -> str:
    return ", ".join(f"{k} {v}" for k, v in json.loads(variant_options).items())


def _money(value: float) -> str:
    return f"{value:.2f}"





def _identified(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any], mission: Mission) -> Mission:
    """The mission, opened with the identification call unless another goal of the task did. A goal built again (a
    types plan discards builds of the wrong type) opens again: its earlier build was never played."""
    entry = _IDENTIFIED.get(id(db))
    if entry is not None and entry[0] is db and entry[1] not in (None, mission.goal):
        return mission
    _IDENTIFIED[id(db)] = (db, mission.goal)
    user = _user(db, subject["user_id"])
    if rng.random() < 0.75:
        identify = _call("identify", "find_user_id_by_email", {"email": user["email"]})
        known = f"Your email is {user['email']}."
    else:
        identify = _call("identify", "find_user_id_by_name_zip",
                         {"first_name": user["first_name"], "last_name": user["last_name"], "zip": user["zip"]})
        known = f"You don't remember the email on your account; your zip code is {user['zip']}."
    calls = (identify, *(replace(c, after=c.after or ("identify",)) for c in mission.calls))
    return replace(mission, calls=calls, known=(known, *mission.known),
                   nl_assertions=("Agent authenticated the customer before acting on their account",
                                  *mission.nl_assertions))


# -- builders ----------------------------------------------------------------------------------------


def order_tracking(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    user_id = subject["user_id"]
    shipped = [o for o in _orders(db, user_id, ("processed", DELIVERED))
               if db.execute("SELECT 1 FROM fulfillments WHERE order_id = ?", (o["order_id"],)).fetchone()]
    if not shipped:
        return None
    order = rng.choice(shipped)
    order_id = order["order_id"]
    track = _call("track", "get_order_details", {"order_id": order_id})
    communicate = ("track.status", "track.fulfillments.0.tracking_id.0")
    nl = ("Agent gave the order's status and tracking number from the order details",)
    if rng.random() < 0.3:
        all_ids = [o["order_id"] for o in _orders(db, user_id, (PENDING, PENDING_MODIFIED, "processed", DELIVERED,
                                                                 "cancelled", "exchange requested",
                                                                 "return requested"))]
        index = all_ids.index(order_id)
        return _identified(db, rng, subject, _mission(
            "order_tracking", "serial",
            "You want to know the status and tracking number of your most recent shipment, but you don't have the "
            "order id at hand; let the agent look it up from your account.",
            [_call("profile", "get_user_details", {"user_id": user_id}),
             _call("track", "get_order_details", {"order_id": {"$from": f"profile.orders.{index}"}}, ("profile",))],
            known=(f"The order you mean contains {_lines(db, order_id)[0]['name']}; its id is {order_id}, which you "
                   "recognise when the agent reads it out.",),
            communicate=communicate, nl=nl))
    return _identified(db, rng, subject, _mission(
        "order_tracking", "single", f"You want to know the status and tracking number of your order {order_id}.",
        [track], known=(f"Your order is {order_id}.",), communicate=communicate, nl=nl))


def order_cancellation(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    pending = _orders(db, subject["user_id"], (PENDING,))
    if not pending:
        return None
    order = rng.choice(pending)
    order_id = order["order_id"]
    reason_code = rng.choice(sorted(CANCEL_STORIES))
    cancel_params = {"order_id": order_id, "reason": reason_code}
    nl = ("Agent confirmed the cancellation details before cancelling",
          "Agent used a cancellation reason that matches the customer's story")
    reason = f"You want to cancel your order {order_id} because {CANCEL_STORIES[reason_code]}."
    roll = rng.random()
    if len(pending) > 1 and roll < 0.3:
        others = [o["order_id"] for o in pending if o["order_id"] != order_id]
        return _identified(db, rng, subject, _mission(
            "order_cancellation", "clarify",
            f"You want to cancel one of your orders (order {order_id}) because {CANCEL_STORIES[reason_code]}; you "
            "only say which order when the agent asks.",
            [_call("cancel", "cancel_pending_order", cancel_params, required=["order_id"])],
            known=(f"The order to cancel is {order_id}; you also have orders {', '.join(others)}, which you keep.",),
            communicate=("cancel.status",),
            nl=("Agent asked which order the customer meant before cancelling", *nl)))
    if roll < 0.6:
        return _identified(db, rng, subject, _mission(
            "order_cancellation", "serial", reason + " First you want to hear what is in it and how it was paid.",
            [_call("check", "get_order_details", {"order_id": order_id}),
             _call("cancel", "cancel_pending_order", cancel_params, ("check",))],
            known=(f"The order to cancel is {order_id}.",),
            communicate=("check.payment_history.0.amount", "cancel.status"), nl=nl))
    return _identified(db, rng, subject, _mission(
        "order_cancellation", "single", reason, [_call("cancel", "cancel_pending_order", cancel_params)],
        known=(f"The order to cancel is {order_id}.",), communicate=("cancel.status",), nl=nl))


def address_change(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    orders = _orders(db, subject["user_id"], (PENDING, PENDING_MODIFIED))
    if not orders:
        return None
    current = {(o["address1"], o["zip"]) for o in orders}
    address = rng.choice([a for a in NEW_ADDRESSES if (a["address1"], a["zip"]) not in current])
    where = ", ".join(v for v in address.values() if v)
    nl = ("Agent confirmed the new shipping address before changing it",)
    if len(orders) > 1 and rng.random() < 0.35:
        first, second = rng.sample(orders, 2)
        return _identified(db, rng, subject, _mission(
            "address_change", "parallel",
            f"You want both of your orders {first['order_id']} and {second['order_id']} shipped to {where} instead.",
            [_call("first", "modify_pending_order_address", {"order_id": first["order_id"], **address}),
             _call("second", "modify_pending_order_address", {"order_id": second["order_id"], **address})],
            known=(f"Your orders are {first['order_id']} and {second['order_id']}.", f"Your new address is {where}."),
            communicate=(), nl=("Agent changed the shipping address of both orders", *nl)))
    order = rng.choice(orders)
    return _identified(db, rng, subject, _mission(
        "address_change", "single", f"You want your order {order['order_id']} shipped to {where} instead.",
        [_call("change", "modify_pending_order_address", {"order_id": order["order_id"], **address})],
        known=(f"Your order is {order['order_id']}.", f"The new shipping address is {where}."), nl=nl))


def _pick_swap(db: sqlite3.Connection, rng: random.Random, user_id: str, status: str):
    """One line of one of the user's orders in `status`, a different available variant of the same product,
    and a payment method that covers the difference — or None. Returns (order, line, new variant, method,
    difference, the tool's params)."""
    methods = _methods(db, user_id)
    options = []
    for order in _orders(db, user_id, (status,)):
        for line in _lines(db, order["order_id"]):
            for new in _alternatives(db, line):
                difference = round(new["price"] - line["price"], 2)
                payers = [m for m in methods if _covers(m, difference)]
                if payers:
                    options.append((order, line, new, payers, difference))
    if not options:
        return None
    order, line, new, payers, difference = rng.choice(options)
    method = rng.choice(payers)
    params = {"order_id": order["order_id"], "item_ids": [line["item_id"]], "new_item_ids": [new["item_id"]],
              "payment_method_id": method["payment_method_id"]}
    return order, line, new, method, difference, params


def item_modification(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    picked = _pick_swap(db, rng, subject["user_id"], PENDING)
    if picked is None:
        return None
    order, line, new, method, difference, params = picked
    order_id = order["order_id"]
    reason = (f"You want the {line['name']} ({_options(line['options'])}) in your order {order_id} changed to the "
              f"option with {_options(new['options'])}, any price difference settled with your "
              f"{_describe(method)}.")
    known = (f"Your order is {order_id}; the {line['name']} in it is item {line['item_id']}.",
             f"The option you want is item {new['item_id']}.")
    nl = ("Agent confirmed the item change and the price difference before modifying the order",
          "Agent warned that the order's items can be modified only once")
    if rng.random() < 0.5:
        return _identified(db, rng, subject, _mission(
            "item_modification", "serial", reason + " You want to hear the price difference first.",
            [_call("product", "get_product_details", {"product_id": line["product_id"]}),
             _call("difference", "calculate", {"expression": f"{_money(new['price'])} - {_money(line['price'])}"},
                   ("product",)),
             _call("modify", "modify_pending_order_items", params, ("difference",))],
            known=known, communicate=("difference.result", "modify.status"), nl=nl))
    return _identified(db, rng, subject, _mission(
        "item_modification", "single", reason, [_call("modify", "modify_pending_order_items", params)],
        known=known, communicate=("modify.status",), nl=nl))


def returns(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    user_id = subject["user_id"]
    gift_cards = [m for m in _methods(db, user_id) if m["source"] == "gift_card"]
    delivered = [o for o in _orders(db, user_id, (DELIVERED,)) if _net_paid(db, o["order_id"]) or gift_cards]
    if not delivered:
        return None
    order = rng.choice(delivered)
    order_id = order["order_id"]
    lines = _lines(db, order_id)
    chosen = sorted(rng.sample(lines, min(len(lines), rng.choice((1, 1, 2)))), key=lambda ln: ln["line_no"])
    refund_to = sorted(_net_paid(db, order_id)) + [g["payment_method_id"] for g in gift_cards]
    method_id = rng.choice(refund_to)
    method = next(m for m in _methods(db, user_id) if m["payment_method_id"] == method_id)
    items = " and ".join(f"the {ln['name']} (item {ln['item_id']})" for ln in chosen)
    params = {"order_id": order_id, "item_ids": [ln["item_id"] for ln in chosen], "payment_method_id": method_id}
    reason = f"You want to return {items} from your delivered order {order_id}, refunded to your {_describe(method)}."
    known = (f"The order is {order_id}.",)
    nl = ("Agent confirmed the items and the refund method before requesting the return",
          "Agent told the customer an email will explain how to send the items back")
    if rng.random() < 0.5:
        expression = " + ".join(_money(ln["price"]) for ln in chosen)
        calls = [_call("check", "get_order_details", {"order_id": order_id})]
        if len(chosen) > 1:
            calls.append(_call("refund", "calculate", {"expression": expression}, ("check",)))
        calls.append(_call("ret", "return_delivered_order_items", params, (calls[-1].key,)))
        communicate = (("refund.result", "ret.status") if len(chosen) > 1
                       else (f"check.items.{chosen[0]['line_no'] - 1}.price", "ret.status"))
        return _identified(db, rng, subject, _mission(
            "returns", "serial", reason + " You first want to hear how much you will get back.", calls,
            known=known, communicate=communicate, nl=nl))
    return _identified(db, rng, subject, _mission(
        "returns", "single", reason, [_call("ret", "return_delivered_order_items", params)], known=known,
        communicate=("ret.status",), nl=nl))


def exchange(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    picked = _pick_swap(db, rng, subject["user_id"], DELIVERED)
    if picked is None:
        return None
    order, line, new, method, difference, params = picked
    order_id = order["order_id"]
    want = f"the option with {_options(new['options'])}"
    reason = (f"You want to exchange the {line['name']} ({_options(line['options'])}) from your delivered order "
              f"{order_id} for {want}, any price difference settled with your {_describe(method)}.")
    nl = ("Agent confirmed the exchange details and price difference before requesting it",
          "Agent checked that the new item is available")
    roll = rng.random()
    if roll < 0.3:
        return _identified(db, rng, subject, _mission(
            "exchange", "clarify",
            f"You want to exchange something from your delivered order {order_id} for a different option; you only "
            f"say it is the {line['name']}, and that you want {want}, when the agent asks. Settle any price "
            f"difference with your {_describe(method)}.",
            [_call("check", "get_order_details", {"order_id": order_id}),
             _call("product", "get_product_details", {"product_id": line["product_id"]}, ("check",)),
             _call("swap", "exchange_delivered_order_items", params, ("product",), required=["item_ids"])],
            known=(f"The order is {order_id}.",),
            communicate=("swap.status",),
            nl=("Agent asked which item the customer wanted to exchange", *nl)))
    known = (f"The order is {order_id}; the {line['name']} in it is item {line['item_id']}.",)
    if roll < 0.7:
        return _identified(db, rng, subject, _mission(
            "exchange", "serial", reason + " You want to know the price difference first.",
            [_call("product", "get_product_details", {"product_id": line["product_id"]}),
             _call("difference", "calculate", {"expression": f"{_money(new['price'])} - {_money(line['price'])}"},
                   ("product",)),
             _call("swap", "exchange_delivered_order_items", params, ("difference",))],
            known=known, communicate=("difference.result", "swap.status"), nl=nl))
    return _identified(db, rng, subject, _mission(
        "exchange", "single", reason, [_call("swap", "exchange_delivered_order_items", params)],
        known=(*known, f"The option you want is item {new['item_id']}."), communicate=("swap.status",), nl=nl))


def payment_change(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    user_id = subject["user_id"]
    methods = _methods(db, user_id)
    options = []
    for order in _orders(db, user_id, (PENDING, PENDING_MODIFIED)):
        paid = _net_paid(db, order["order_id"])
        if len(paid) != 1:
            continue
        ((old_id, amount),) = paid.items()
        for method in methods:
            if method["payment_method_id"] != old_id and _covers(method, amount):
                options.append((order, method))
    if not options:
        return None
    order, method = rng.choice(options)
    order_id = order["order_id"]
    change = _call("change", "modify_pending_order_payment",
                   {"order_id": order_id, "payment_method_id": method["payment_method_id"]})
    nl = ("Agent confirmed the new payment method before changing it",)
    if rng.random() < 0.5:
        return _identified(db, rng, subject, _mission(
            "payment_change", "serial",
            f"You want your order {order_id} paid with your {_describe(method)} instead, but first you want to hear "
            "which payment methods you have on file.",
            [_call("profile", "get_user_details", {"user_id": user_id}),
             replace(change, after=("profile",))],
            known=(f"Your order is {order_id}.",),
            communicate=("change.payment_history.0.amount",),
            nl=("Agent listed the customer's payment methods from their profile", *nl)))
    return _identified(db, rng, subject, _mission(
        "payment_change", "single", f"You want your order {order_id} paid with your {_describe(method)} instead.",
        [change], known=(f"Your order is {order_id}.",), communicate=("change.payment_history.0.amount",), nl=nl))


def account_update(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    user_id = subject["user_id"]
    user = _user(db, user_id)
    address = rng.choice([a for a in NEW_ADDRESSES if a["address1"] != user["address1"]])
    where = ", ".join(v for v in address.values() if v)
    update = _call("update", "modify_user_address", {"user_id": user_id, **address})
    nl = ("Agent confirmed the new default address before changing it",
          "Agent said existing orders keep their shipping address")
    if rng.random() < 0.4:
        return _identified(db, rng, subject, _mission(
            "account_update", "serial",
            f"You have moved to {where}; you want to hear the default address on file, then have it updated.",
            [_call("profile", "get_user_details", {"user_id": user_id}), replace(update, after=("profile",))],
            known=(f"Your new address is {where}.",), communicate=("profile.address.address1",), nl=nl))
    return _identified(db, rng, subject, _mission(
        "account_update", "single", f"You have moved and want your default address changed to {where}.",
        [update], known=(f"Your new address is {where}.",), nl=nl))


def product_inquiry(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    roll = rng.random()
    products = _rows(db, "SELECT * FROM products WHERE product_id IN (SELECT product_id FROM variants "
                         "WHERE available = 1) ORDER BY product_id")
    if roll < 0.2:
        product = rng.choice(products)
        return _mission(
            "product_inquiry", "chat",
            "You want to know, in general, whether items of a delivered order can be exchanged for another option, "
            f"and whether the store carries the {product['name']} at all.",
            [_call("catalog", "list_all_product_types", {})],
            known=(f"You are interested in the {product['name']}.",),
            communicate=("catalog.product_types." + product["name"],),
            nl=("Agent explained the exchange rules without inventing products or prices",))
    if roll < 0.5:
        first, second = rng.sample(products, 2)
        return _mission(
            "product_inquiry", "parallel",
            f"You want to compare the available options and prices of the {first['name']} and the {second['name']}.",
            [_call("catalog", "list_all_product_types", {}),
             _call("first", "get_product_details", {"product_id": first["product_id"]}, ("catalog",)),
             _call("second", "get_product_details", {"product_id": second["product_id"]}, ("catalog",))],
            known=(f"You are interested in the {first['name']} and the {second['name']}.",),
            communicate=("catalog.product_types." + first["name"], "catalog.product_types." + second["name"]),
            nl=("Agent read the options and prices from the product details",))
    product = rng.choice(products)
    variant = rng.choice(_rows(db, "SELECT * FROM variants WHERE product_id = ? AND available = 1 "
                                   "ORDER BY item_id", (product["product_id"],)))
    return _mission(
        "product_inquiry", "serial",
        f"You want to know which options of the {product['name']} are in stock and what the one with "
        f"{_options(variant['options'])} costs.",
        [_call("catalog", "list_all_product_types", {}),
         _call("details", "get_product_details", {"product_id": {"$from": f"catalog.product_types.{product['name']}"}},
               ("catalog",))],
        known=(f"You are interested in the {product['name']}.",),
        communicate=(f"details.variants.{variant['item_id']}.price", f"details.variants.{variant['item_id']}.item_id"),
        nl=("Agent looked the product up instead of guessing its options",))


# -- cross-domain dependencies -----------------------------------------------------------------------


def address_of_given(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any],
                     given: Given) -> Mission | None:
    """The default address set to one another domain holds (the user names it, never states it)."""
    user_id = subject["user_id"]
    if given.values["address1"] == _user(db, user_id)["address1"]:
        return None
    address = {f: {"$given": f} if given.values.get(f) else default
               for f, default in (("address1", ""), ("address2", ""), ("city", ""), ("state", ""),
                                  ("country", "USA"), ("zip", ""))}
    return _identified(db, rng, subject, _mission(
        "account_update", "single", f"You want your default address here changed to {given.phrase}.",
        [_call("update", "modify_user_address", {"user_id": user_id, **address},
               required=["user_id", "address1", "city", "state", "zip"])],
        known=("You don't remember that address yourself: the agent must look it up there.",),
        nl=("Agent read the address from the other service instead of asking the user to spell it out",
            "Agent confirmed the new default address before changing it")))


def amount_fact(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Fact | None:
    """What the user paid for one of their orders (one payment, so the amount is unambiguous)."""
    paid = [o for o in _orders(db, subject["user_id"], (PENDING, "processed", DELIVERED)) if db.execute(
        "SELECT count(*) FROM order_payments WHERE order_id = ?", (o["order_id"],)).fetchone()[0] == 1]
    if not paid:
        return None
    order_id = rng.choice(paid)["order_id"]
    return Fact(f"what you paid for your store order {order_id}",
                _call("paid", "get_order_details", {"order_id": order_id}),
                {"amount": "payment_history.0.amount"}, known=(f"Your store order is {order_id}.",))


# -- variants: the chat and clarify missions a types plan asks for (`MissionSet.variants`) -----------------


def _in_stock(db: sqlite3.Connection, rng: random.Random) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A product and one of its available variants."""
    products = _rows(db, "SELECT * FROM products WHERE product_id IN (SELECT product_id FROM variants "
                         "WHERE available = 1) ORDER BY product_id")
    if not products:
        return None
    product = rng.choice(products)
    variants = _rows(db, "SELECT * FROM variants WHERE product_id = ? AND available = 1 ORDER BY item_id",
                     (product["product_id"],))
    return product, rng.choice(variants)


def exchange_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat exchange: whether a delivered item can be swapped for another option, and a product's options."""
    picked = _in_stock(db, rng)
    if picked is None:
        return None
    product, variant = picked
    return _general(db, _mission(
        "exchange", "chat",
        "You want to know, in general, whether an item you received can be exchanged for another option of the same "
        f"product, and what the {product['name']} with {_options(variant['options'])} costs.",
        [_call("product", "get_product_details", {"product_id": product["product_id"]})],
        known=(f"You are asking about the {product['name']} (product {product['product_id']}).",),
        communicate=(f"product.variants.{variant['item_id']}.price",),
        nl=("Agent explained the exchange rules in general terms without inventing prices",)))


def modification_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat item_modification: whether a pending order's items can still change, and one item's price."""
    picked = _in_stock(db, rng)
    if picked is None:
        return None
    product, variant = picked
    return _general(db, _mission(
        "item_modification", "chat",
        "You want to know, in general, whether the items of an order can still be changed before it ships, and what "
        f"item {variant['item_id']} (a {product['name']}) costs.",
        [_call("item", "get_item_details", {"item_id": variant["item_id"]})],
        known=(f"You are asking about item {variant['item_id']}.",),
        communicate=("item.price",),
        nl=("Agent explained when order items can be modified without inventing prices",)))


def refund_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat returns: how refunds of returned items work, and what two item prices add up to."""
    prices = [round(rng.uniform(15, 400), 2) for _ in range(2)]
    return _general(db, _mission(
        "returns", "chat",
        "You want to know, in general, how a refund for returned items is paid back, and what you would get back for "
        f"two items of {_money(prices[0])} and {_money(prices[1])} together.",
        [_call("total", "calculate", {"expression": f"{_money(prices[0])} + {_money(prices[1])}"})],
        known=(f"The two items cost {_money(prices[0])} and {_money(prices[1])}.",),
        communicate=("total.result",),
        nl=("Agent explained the refund rules in general terms and added the prices with the calculator",)))


def _general(db: sqlite3.Connection, mission: Mission) -> Mission:
    """A mission of a goal that needs no identification: a discarded build of the goal that opened with it no longer
    counts as the task's identification."""
    entry = _IDENTIFIED.get(id(db))
    if entry is not None and entry[0] is db and entry[1] == mission.goal:
        _IDENTIFIED[id(db)] = (db, None)
    return mission


def _other_orders(db: sqlite3.Connection, user_id: str, order_id: str) -> list[str]:
    """The user's other orders, whatever their status: what makes "one of your orders" ambiguous."""
    return [o["order_id"] for o in _rows(db, "SELECT order_id FROM orders WHERE user_id = ? AND order_id != ? "
                                             "ORDER BY order_id", (user_id, order_id))]


def tracking_unnamed(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A clarify order_tracking: the customer does not say which shipped order until asked."""
    shipped = [o for o in _orders(db, subject["user_id"], ("processed", DELIVERED))
               if db.execute("SELECT 1 FROM fulfillments WHERE order_id = ?", (o["order_id"],)).fetchone()]
    if not shipped:
        return None
    order = rng.choice(shipped)
    others = _other_orders(db, subject["user_id"], order["order_id"])
    if not others:
        return None
    return _identified(db, rng, subject, _mission(
        "order_tracking", "clarify",
        f"You want the status and tracking number of one of your orders (order {order['order_id']}); you only say "
        "which order when the agent asks.",
        [_call("track", "get_order_details", {"order_id": order["order_id"]})],
        known=(f"The order you mean is {order['order_id']}; you also have orders {', '.join(others)}.",),
        communicate=("track.status", "track.fulfillments.0.tracking_id.0"),
        nl=("Agent asked which order the customer meant before looking it up",)))


def address_change_unnamed(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A clarify address_change: the customer gives the new address but names the order only when asked."""
    orders = _orders(db, subject["user_id"], (PENDING, PENDING_MODIFIED))
    if not orders:
        return None
    order = rng.choice(orders)
    others = _other_orders(db, subject["user_id"], order["order_id"])
    if not others:
        return None
    address = rng.choice([a for a in NEW_ADDRESSES if (a["address1"], a["zip"]) != (order["address1"], order["zip"])])
    where = ", ".join(v for v in address.values() if v)
    return _identified(db, rng, subject, _mission(
        "address_change", "clarify",
        f"You want one of your pending orders (order {order['order_id']}) shipped to {where} instead; you only say "
        "which order when the agent asks.",
        [_call("change", "modify_pending_order_address", {"order_id": order["order_id"], **address})],
        known=(f"The order is {order['order_id']}; your other orders are {', '.join(others)}.",
               f"The new shipping address is {where}."),
        nl=("Agent asked which order the customer meant before changing its address",
            "Agent confirmed the new shipping address before changing it")))


MISSIONS = MissionSet({
    "order_tracking": order_tracking,
    "order_cancellation": order_cancellation,
    "address_change": address_change,
    "item_modification": item_modification,
    "returns": returns,
    "exchange": exchange,
    "payment_change": payment_change,
    "account_update": account_update,
    "product_inquiry": product_inquiry,
}, subjects_query="SELECT user_id AS customer_id, first_name || ' ' || last_name AS full_name, * "
                  "FROM users ORDER BY user_id",
    facts={"amount": amount_fact}, uses={"address": FactUse("account_update", address_of_given)},
    variants={"exchange": (exchange_question,), "item_modification": (modification_question,),
              "returns": (refund_question,), "order_tracking": (tracking_unnamed,),
              "address_change": (address_change_unnamed,)})
"""Goal label -> mission builder (every label of GOAL_TOOLS). Tasks are about every user (`customer_id` and
`full_name` for the generator), who introduces themselves by name (how to identify comes from the first
mission); no goal opens a task."""
