"""Import the tau2 / AgentChangeBench retail db.json as a snapshot of the shiftbox schema (ids kept), so
the reference tasks run unchanged on the same tools. Every record is checked before anything is
written; a problem is reported with the table, the record id and the field.

Mapping: products and their variants keep their ids; a user's `orders` list and an order's item
`name`/`product_id`/`options` are not stored but checked (they follow from the foreign keys and the
variant); `exchange_items`/`exchange_new_items`/`return_items` (present once tau2 tools have run) mark
the order lines they name. Zero-amount payment entries (tau2 records a 0.00 "refund" when a modification
keeps the price) carry no money and are dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import SnapshotManifest

from ..kit._json_records import RecordError as _Bad
from ..kit._json_records import check_same_id as _same_id
from ..kit._json_records import checked_keys as _keys
from ..kit._json_records import keyed_records as _mapping
from ..kit._json_records import load_db_json
from ..kit._json_records import record_error as _fail
from ..kit._json_records import text_field as _str
from ._builder import TABLES, check_payments_balance
from ._schema import SCHEMA, new_database

Row = dict[str, Any]
ADDRESS_FIELDS = ("address1", "address2", "city", "country", "state", "zip")
ORDER_STATUSES = ("pending", "processed", "delivered", "cancelled", "pending (item modified)",
                  "exchange requested", "return requested")
PAYMENT_FIELDS = {"credit_card": {"source", "id", "brand", "last_four"}, "gift_card": {"source", "id", "balance"},
                  "paypal": {"source", "id"}}
ORDER_FIELDS = {"order_id", "user_id", "address", "items", "status", "fulfillments", "payment_history",
                "cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
                "exchange_price_difference", "return_items", "return_payment_method_id"}


def _number(table: str, record: str, field: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise _fail(table, record, field, f"must be a number >= {minimum}, not {value!r}")
    return round(float(value), 2)


def _address(table: str, record: str, data: Any) -> Row:
    data = _keys(table, record, data, set(ADDRESS_FIELDS), set(ADDRESS_FIELDS), "address")
    return {k: _str(table, record, f"address.{k}", data[k], empty_ok=k == "address2") for k in ADDRESS_FIELDS}


def _options(table: str, record: str, field: str, data: Any) -> str:
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise _fail(table, record, field, f"must be an object of text options, not {data!r}")
    return json.dumps(data)


def import_agentchangebench(db_json: Path, directory: Path) -> SnapshotManifest:
    """Read the retail db.json, validate every record and write it as snapshot acb-v1."""
    db = load_db_json(db_json, convert, new_database, TABLES)
    return SCHEMA.write_snapshot(db, directory, snapshot_version="acb-v1", source="agentchangebench retail db.json")


def convert(data: Any) -> dict[str, list[Row]]:
    """db.json's products / users / orders as rows of the shiftbox tables (ValueError on any misfit)."""
    _keys("db.json", "(top level)", data, {"products", "users", "orders"}, {"products", "users", "orders"})
    rows: dict[str, list[Row]] = {table: [] for table in TABLES}
    variants, product_names = _products(data, rows)
    methods, listed_orders = _users(data, rows)
    _orders(data, listed_orders, variants, product_names, methods, rows)
    try:
        check_payments_balance(rows)
    except ValueError as exc:
        raise _Bad(str(exc)) from None
    return rows


def _products(data: Any, rows: dict[str, list[Row]]) -> tuple[dict[str, Row], dict[str, str]]:
    """Append the products and their variants to `rows`; return the variants by item id and the product names."""
    variants: dict[str, Row] = {}
    product_names: dict[str, str] = {}
    for key, product in _mapping(data, "products"):
        _keys("products", key, product, {"name", "product_id", "variants"}, {"name", "product_id", "variants"})
        _same_id("products", key, "product_id", product["product_id"])
        name = _str("products", key, "name", product["name"])
        if name in product_names.values():
            raise _fail("products", key, "name", f"repeats the name {name!r}")
        product_names[key] = name
        rows["products"].append({"product_id": key, "name": name})
        if not isinstance(product["variants"], dict):
            raise _fail("products", key, "variants", "must be an object keyed by item id")
        for item_id, v in product["variants"].items():
            where = f"{key} variant {item_id}"
            _keys("products", where, v, {"item_id", "options", "available", "price"},
                  {"item_id", "options", "available", "price"})
            _same_id("products", where, "item_id", v["item_id"], item_id)
            if not isinstance(v["available"], bool):
                raise _fail("products", where, "available", f"must be true or false, not {v['available']!r}")
            if item_id in variants or item_id in product_names:
                raise _fail("products", where, "item_id", "repeats an id")
            variants[item_id] = {"item_id": item_id, "product_id": key,
                                 "options": _options("products", where, "options", v["options"]),
                                 "available": int(v["available"]),
                                 "price": _number("products", where, "price", v["price"], minimum=0.01)}
    rows["variants"] = list(variants.values())
    return variants, product_names


def _users(data: Any, rows: dict[str, list[Row]]) -> tuple[dict[str, Row], dict[str, list[str]]]:
    """Append the users and their payment methods to `rows`; return the methods by id and each user's order ids."""
    methods: dict[str, Row] = {}
    listed_orders: dict[str, list[str]] = {}
    emails: set[str] = set()
    for key, user in _mapping(data, "users"):
        fields = {"user_id", "name", "address", "email", "payment_methods", "orders"}
        _keys("users", key, user, fields, fields)
        _same_id("users", key, "user_id", user["user_id"])
        name = _keys("users", key, user["name"], {"first_name", "last_name"}, {"first_name", "last_name"}, "name")
        email = _str("users", key, "email", user["email"])
        if email.lower() in emails:
            raise _fail("users", key, "email", f"repeats the email {email!r}")
        emails.add(email.lower())
        rows["users"].append({"user_id": key, "first_name": _str("users", key, "name.first_name", name["first_name"]),
                              "last_name": _str("users", key, "name.last_name", name["last_name"]),
                              "email": email, **_address("users", key, user["address"])})
        if not isinstance(user["payment_methods"], dict):
            raise _fail("users", key, "payment_methods", "must be an object keyed by payment method id")
        for pm_id, pm in user["payment_methods"].items():
            where = f"{key} payment method {pm_id}"
            source = pm.get("source") if isinstance(pm, dict) else None
            if source not in PAYMENT_FIELDS:
                raise _fail("users", where, "source", f"is {source!r}; allowed: {sorted(PAYMENT_FIELDS)}")
            _keys("users", where, pm, PAYMENT_FIELDS[source], PAYMENT_FIELDS[source])
            _same_id("users", where, "id", pm["id"], pm_id)
            if pm_id in methods:
                raise _fail("users", where, "id", "repeats an id")
            methods[pm_id] = {
                "payment_method_id": pm_id, "user_id": key, "source": source,
                "brand": _str("users", where, "brand", pm["brand"]) if source == "credit_card" else None,
                "last_four": _str("users", where, "last_four", pm["last_four"]) if source == "credit_card" else None,
                "balance": _number("users", where, "balance", pm["balance"]) if source == "gift_card" else None,
            }
        if not isinstance(user["orders"], list) or not all(isinstance(o, str) for o in user["orders"]):
            raise _fail("users", key, "orders", "must be a list of order ids")
        listed_orders[key] = user["orders"]
    rows["payment_methods"] = list(methods.values())
    return methods, listed_orders


def _orders(data: Any, listed_orders: dict[str, list[str]], variants: dict[str, Row], product_names: dict[str, str],
            methods: dict[str, Row], rows: dict[str, list[Row]]) -> None:
    """Append every order to `rows`, checking that each user lists exactly the orders that name them."""
    owned: dict[str, list[str]] = {user_id: [] for user_id in listed_orders}
    for key, order in _mapping(data, "orders"):
        _keys("orders", key, order, ORDER_FIELDS,
              {"order_id", "user_id", "address", "items", "status", "fulfillments", "payment_history"})
        _same_id("orders", key, "order_id", order["order_id"])
        user_id = order["user_id"]
        if user_id not in listed_orders:
            raise _fail("orders", key, "user_id", f"refers to {user_id!r}, which is not in users")
        owned[user_id].append(key)
        _order(key, order, user_id, variants, product_names, methods, rows)
    for user_id, listed in listed_orders.items():
        if sorted(listed) != sorted(owned[user_id]):
            raise _fail("users", user_id, "orders", f"lists {sorted(listed)} but the orders of the user are "
                        f"{sorted(owned[user_id])}")


def _order(key: str, order: dict, user_id: str, variants: dict[str, Row], product_names: dict[str, str],
           methods: dict[str, Row], rows: dict[str, list[Row]]) -> None:
    status = order["status"]
    if status not in ORDER_STATUSES:
        raise _fail("orders", key, "status", f"is {status!r}; allowed: {list(ORDER_STATUSES)}")

    def own_method(field: str, pm_id: Any) -> str:
        if pm_id not in methods:
            raise _fail("orders", key, field, f"refers to {pm_id!r}, which is no payment method")
        if methods[pm_id]["user_id"] != user_id:
            raise _fail("orders", key, field, f"is {pm_id}, which does not belong to user {user_id}")
        return pm_id

    reason = order.get("cancel_reason")
    if reason is not None and reason not in ("no longer needed", "ordered by mistake"):
        raise _fail("orders", key, "cancel_reason", f"is {reason!r}")
    exchange_pm = order.get("exchange_payment_method_id")
    return_pm = order.get("return_payment_method_id")
    difference = order.get("exchange_price_difference")
    rows["orders"].append({
        "order_id": key, "user_id": user_id, "status": status, **_address("orders", key, order["address"]),
        "cancel_reason": reason,
        "exchange_payment_method_id": None if exchange_pm is None else own_method("exchange_payment_method_id",
                                                                                   exchange_pm),
        "exchange_price_difference": None if difference is None else _number(
            "orders", key, "exchange_price_difference", difference, minimum=float("-inf")),
        "return_payment_method_id": None if return_pm is None else own_method("return_payment_method_id", return_pm),
    })
    if not isinstance(order["items"], list) or not order["items"]:
        raise _fail("orders", key, "items", "must be a non-empty list")
    lines = []
    for n, item in enumerate(order["items"], start=1):
        field = f"items[{n - 1}]"
        _keys("orders", key, item, {"name", "product_id", "item_id", "price", "options"},
              {"item_id", "price"}, field)
        variant = variants.get(item["item_id"])
        if variant is None:
            raise _fail("orders", key, f"{field}.item_id", f"refers to {item['item_id']!r}, which is no variant")
        expected = {"product_id": variant["product_id"], "name": product_names[variant["product_id"]],
                    "options": json.loads(variant["options"])}
        for name, value in expected.items():
            if name in item and item[name] != value:
                raise _fail("orders", key, f"{field}.{name}", f"is {item[name]!r} but item {item['item_id']} "
                            f"has {value!r}")
        lines.append({"order_id": key, "line_no": n, "item_id": item["item_id"],
                      "price": _number("orders", key, f"{field}.price", item["price"], minimum=0.01),
                      "return_requested": 0, "exchange_item_id": None})
    _mark_lines(key, lines, order, variants)
    rows["order_items"] += lines
    if not isinstance(order["fulfillments"], list):
        raise _fail("orders", key, "fulfillments", "must be a list")
    for n, f in enumerate(order["fulfillments"], start=1):
        field = f"fulfillments[{n - 1}]"
        _keys("orders", key, f, {"tracking_id", "item_ids"}, {"tracking_id", "item_ids"}, field)
        for part in ("tracking_id", "item_ids"):
            if not isinstance(f[part], list) or not all(isinstance(x, str) for x in f[part]):
                raise _fail("orders", key, f"{field}.{part}", "must be a list of strings")
        rows["fulfillments"].append({"order_id": key, "fulfillment_no": n, "tracking_ids": json.dumps(f["tracking_id"]),
                                     "item_ids": json.dumps(f["item_ids"])})
    if not isinstance(order["payment_history"], list):
        raise _fail("orders", key, "payment_history", "must be a list")
    seq = 0
    for n, p in enumerate(order["payment_history"]):
        field = f"payment_history[{n}]"
        fields = {"transaction_type", "amount", "payment_method_id"}
        _keys("orders", key, p, fields, fields, field)
        if p["transaction_type"] not in ("payment", "refund"):
            raise _fail("orders", key, f"{field}.transaction_type", f"is {p['transaction_type']!r}")
        amount = _number("orders", key, f"{field}.amount", p["amount"])
        if amount == 0:
            continue
        seq += 1
        rows["order_payments"].append({"order_id": key, "seq": seq, "transaction_type": p["transaction_type"],
                                       "amount": amount,
                                       "payment_method_id": own_method(f"{field}.payment_method_id",
                                                                       p["payment_method_id"])})


def _mark_lines(key: str, lines: list[Row], order: dict, variants: dict[str, Row]) -> None:
    """Mark the lines named by return_items / exchange_items (pairing each with a new item of its product)."""
    for field in ("return_items", "exchange_items", "exchange_new_items"):
        value = order.get(field)
        if value is not None and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
            raise _fail("orders", key, field, "must be a list of item ids")
    for item_id in order.get("return_items") or []:
        line = next((ln for ln in lines if ln["item_id"] == item_id and not ln["return_requested"]), None)
        if line is None:
            raise _fail("orders", key, "return_items", f"names {item_id}, which is not (again) in the order")
        line["return_requested"] = 1
    new_items = list(order.get("exchange_new_items") or [])
    old_items = order.get("exchange_items") or []
    if len(new_items) != len(old_items):
        raise _fail("orders", key, "exchange_new_items", f"has {len(new_items)} ids for {len(old_items)} exchanged")
    for item_id in old_items:
        line = next((ln for ln in lines if ln["item_id"] == item_id and ln["exchange_item_id"] is None), None)
        if line is None:
            raise _fail("orders", key, "exchange_items", f"names {item_id}, which is not (again) in the order")
        new = next((n for n in new_items if n in variants and variants[n]["product_id"] == variants[line["item_id"]]["product_id"]), None)
        if new is None:
            raise _fail("orders", key, "exchange_new_items", f"has no item of the product of {item_id}")
        new_items.remove(new)
        line["exchange_item_id"] = new
