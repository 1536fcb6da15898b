"""tau2-bench's retail tools as a test oracle: what each of tau2's 16 retail tools returns, raises and
writes, applied to a copy of tau2's db.json (plain dicts, in db.json's own shape; a tool that returns text in tau2 returns that text here).

Written from reading tau2's retail toolkit (src/tau2/domains/retail/tools.py in sierra-research/tau2-bench),
rule by rule, to derive the outcome tau2 gives each gold action; it is not tau2's code. A tau2 tool that
raises ValueError raises `Tau2Error` here, with the shiftbox error kind the failure corresponds to (tau2
itself has one exception type): a missing record is `not_found`, a rule the record's state breaks is
`precondition_failed`, arguments that contradict each other are `invalid_arguments`, asking for what
already holds is `conflict`; the message is tau2's, word for word.

`per_line_prices=False` keeps tau2's modify_pending_order_items as it is: every modified line gets the
price and options of the *last* new item. With True each line gets its own new item's (what shiftbox
does; docs/servers.md lists the difference).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

FIXED_REASONS = ("no longer needed", "ordered by mistake")


class Tau2Error(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _CopyOnRead:
    """db.json's orders or users, each record copied the first time it is looked up (the tools change only
    records they look up), so a fresh model costs nothing and db.json itself is never changed."""

    def __init__(self, base: dict[str, dict]):
        self.base, self.own = base, {}

    def __contains__(self, key: str) -> bool:
        return key in self.base

    def __getitem__(self, key: str) -> dict:
        if key not in self.own:
            self.own[key] = copy.deepcopy(self.base[key])
        return self.own[key]

    def items(self) -> Iterator[tuple[str, dict]]:
        return ((key, self.own.get(key, value)) for key, value in self.base.items())

    def values(self) -> Iterator[dict]:
        return (value for _, value in self.items())

    def changed(self) -> set[str]:
        """Keys of the records the tools changed."""
        return {key for key, value in self.own.items() if value != self.base[key]}


class Tau2Retail:
    def __init__(self, db: dict[str, Any], *, per_line_prices: bool = False):
        self.db = {"products": db["products"], "users": _CopyOnRead(db["users"]), "orders": _CopyOnRead(db["orders"])}
        self.per_line_prices = per_line_prices

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        tool = getattr(self, name, None)
        if tool is None or name.startswith("_"):
            raise Tau2Error("unknown_tool", f"tau2 has no retail tool {name}")
        return tool(**arguments)

    # -- lookups (tau2 matches ids exactly) --------------------------------------------------------

    def _order(self, order_id: str) -> dict:
        if order_id not in self.db["orders"]:
            raise Tau2Error("not_found", "Order not found")
        return self.db["orders"][order_id]

    def _user(self, user_id: str) -> dict:
        if user_id not in self.db["users"]:
            raise Tau2Error("not_found", "User not found")
        return self.db["users"][user_id]

    def _variant_of(self, product_id: str, item_id: str) -> dict:
        variants = self.db["products"][product_id]["variants"]
        if item_id not in variants:
            elsewhere = any(item_id in p["variants"] for p in self.db["products"].values())
            raise Tau2Error("precondition_failed" if elsewhere else "not_found", "Variant not found")
        return variants[item_id]

    def _method(self, user_id: str, payment_method_id: str) -> dict:
        methods = self._user(user_id)["payment_methods"]
        if payment_method_id not in methods:
            elsewhere = any(payment_method_id in u["payment_methods"] for u in self.db["users"].values())
            raise Tau2Error("precondition_failed" if elsewhere else "not_found", "Payment method not found")
        return methods[payment_method_id]

    @staticmethod
    def _enough_of_each(order: dict, item_ids: list[str], message: str) -> None:
        held = [item["item_id"] for item in order["items"]]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                raise Tau2Error("not_found", message.format(item_id=item_id))

    def _priced_pairs(self, order: dict, item_ids: list[str], new_item_ids: list[str], *,
                      same_forbidden: bool, count_message: str) -> tuple[list[dict], float]:
        if len(item_ids) != len(new_item_ids):
            raise Tau2Error("invalid_arguments", count_message)
        variants, difference = [], 0.0
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
            if same_forbidden and item_id == new_item_id:
                raise Tau2Error("invalid_arguments", "The new item id should be different from the old item id")
            item = next(i for i in order["items"] if i["item_id"] == item_id)
            variant = self._variant_of(item["product_id"], new_item_id)
            if not variant["available"]:
                raise Tau2Error("precondition_failed", f"New item {new_item_id} not found or available")
            variants.append(variant)
            difference += variant["price"] - item["price"]
        return variants, difference

    # -- read tools ------------------------------------------------------------------------------

    def calculate(self, expression: str) -> str:
        if not all(c in "0123456789+-*/(). " for c in expression):
            raise Tau2Error("invalid_arguments", "Invalid characters in expression")
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))  # noqa: S307 - digits and operators only

    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db["users"].items():
            if user["email"].lower() == email.lower():
                return user_id
        raise Tau2Error("not_found", "User not found")

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user_id, user in self.db["users"].items():
            name = user["name"]
            if (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"]) == (
                    first_name.lower(), last_name.lower(), zip):
                return user_id
        raise Tau2Error("not_found", "User not found")

    def get_order_details(self, order_id: str) -> dict:
        return self._order(order_id)

    def get_product_details(self, product_id: str) -> dict:
        if product_id not in self.db["products"]:
            raise Tau2Error("not_found", "Product not found")
        return copy.deepcopy(self.db["products"][product_id])

    def get_item_details(self, item_id: str) -> dict:
        for product in self.db["products"].values():
            if item_id in product["variants"]:
                return copy.deepcopy(product["variants"][item_id])
        raise Tau2Error("not_found", "Item not found")

    def get_user_details(self, user_id: str) -> dict:
        return self._user(user_id)

    def list_all_product_types(self) -> str:
        return json.dumps({p["name"]: pid for pid, p in self.db["products"].items()}, sort_keys=True)

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"

    # -- write tools -----------------------------------------------------------------------------

    def cancel_pending_order(self, order_id: str, reason: str) -> dict:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise Tau2Error("precondition_failed", "Non-pending order cannot be cancelled")
        if reason not in FIXED_REASONS:
            raise Tau2Error("invalid_arguments", "Invalid reason")
        refunds = []
        for payment in order["payment_history"]:  # every entry is refunded, as it was paid
            refunds.append({"transaction_type": "refund", "amount": payment["amount"],
                            "payment_method_id": payment["payment_method_id"]})
            method = self._method(order["user_id"], payment["payment_method_id"])
            if method["source"] == "gift_card":
                method["balance"] = round(method["balance"] + payment["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"] += refunds
        return order

    def exchange_delivered_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                       payment_method_id: str) -> dict:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise Tau2Error("precondition_failed", "Non-delivered order cannot be exchanged")
        self._enough_of_each(order, item_ids, "Number of {item_id} not found.")
        _, difference = self._priced_pairs(order, item_ids, new_item_ids, same_forbidden=False,
                                           count_message="The number of items to be exchanged should match.")
        difference = round(difference, 2)
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < difference:
            raise Tau2Error("precondition_failed", "Insufficient gift card balance to pay for the price difference")
        order.update(status="exchange requested", exchange_items=sorted(item_ids),
                     exchange_new_items=sorted(new_item_ids), exchange_payment_method_id=payment_method_id,
                     exchange_price_difference=difference)
        return order

    def modify_pending_order_address(self, order_id: str, address1: str, address2: str, city: str, state: str,
                                     country: str, zip: str) -> dict:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise Tau2Error("precondition_failed", "Non-pending order cannot be modified")
        order["address"] = {"address1": address1, "address2": address2, "city": city, "country": country,
                            "state": state, "zip": zip}
        return order

    def modify_pending_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str],
                                   payment_method_id: str) -> dict:
        order = self._order(order_id)
        if order["status"] != "pending":
            raise Tau2Error("precondition_failed", "Non-pending order cannot be modified")
        self._enough_of_each(order, item_ids, "{item_id} not found")
        variants, difference = self._priced_pairs(order, item_ids, new_item_ids, same_forbidden=True,
                                                  count_message="The number of items to be exchanged should match")
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < difference:
            raise Tau2Error("precondition_failed", "Insufficient gift card balance to pay for the new item")
        order["payment_history"].append({"transaction_type": "payment" if difference > 0 else "refund",
                                         "amount": abs(difference), "payment_method_id": payment_method_id})
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - difference, 2)
        for item_id, new_item_id, own in zip(item_ids, new_item_ids, variants, strict=True):
            item = next(i for i in order["items"] if i["item_id"] == item_id)
            variant = own if self.per_line_prices else variants[-1]
            item.update(item_id=new_item_id, price=variant["price"], options=variant["options"])
        order["status"] = "pending (item modified)"
        return order

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict:
        order = self._order(order_id)
        if "pending" not in order["status"]:
            raise Tau2Error("precondition_failed", "Non-pending order cannot be modified")
        method = self._method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise Tau2Error("precondition_failed", "There should be exactly one payment for a pending order")
        old_id, amount = history[0]["payment_method_id"], history[0]["amount"]
        if old_id == payment_method_id:
            raise Tau2Error("conflict", "The new payment method should be different from the current one")
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise Tau2Error("precondition_failed", "Insufficient gift card balance to pay for the order")
        history += [{"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
                    {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id}]
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - amount, 2)
        old = self._method(order["user_id"], old_id)
        if old["source"] == "gift_card":
            old["balance"] = round(old["balance"] + amount, 2)
        return order

    def modify_user_address(self, user_id: str, address1: str, address2: str, city: str, state: str, country: str,
                            zip: str) -> dict:
        user = self._user(user_id)
        user["address"] = {"address1": address1, "address2": address2, "city": city, "country": country,
                           "state": state, "zip": zip}
        return user

    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> dict:
        order = self._order(order_id)
        if order["status"] != "delivered":
            raise Tau2Error("precondition_failed", "Non-delivered order cannot be returned")
        method = self._method(order["user_id"], payment_method_id)
        if method["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            raise Tau2Error("precondition_failed", "Payment method should be the original payment method")
        self._enough_of_each(order, item_ids, "Some item not found")
        order.update(status="return requested", return_items=sorted(item_ids),
                     return_payment_method_id=payment_method_id)
        return order
