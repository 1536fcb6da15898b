"""tau2-bench's retail tools as tau2 serves them (`--toolset tau2`; `agentchangebench` is the same set as
of AgentChangeBench's fork, which predates `get_item_details`), over the same database as the native tools.

Thin adapters: each checks what tau2's tool checks, in tau2's order and with tau2's error message (kinded),
matches ids, emails and names the way tau2 does (exact ids; emails and names compared lower-cased, the zip
exactly; the first match in the stored order), returns tau2's result shape (a bare user id, `calculate`'s
number as text, orders, users and products as tau2 dumps them) and writes through the native tools' helpers.

Different only where tau2 corrupts data (docs/servers.md, "Deliberate differences from the reference
tools"): a multi-item modification prices each line with its own new item (tau2 gives every line the last
new item's price and options) and records no 0.00 entry when the price is unchanged, a cancellation after
a payment change refunds what each method holds (tau2 refunds the refund too), and `calculate` evaluates
arithmetic without Python's eval. A hand-off is also stored as a transfer, as every tool set does.
"""

from __future__ import annotations

import sqlite3
from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from shiftbox_servers.kit import (
    Conflict,
    Episode,
    InvalidArguments,
    NotFound,
    PreconditionFailed,
    ToolSet,
    record_transfer,
    reference_calculate,
    reference_result,
    round_money,
)

from ._models import Order, Product, User, Variant
from ._tools import (
    DELIVERED,
    GIFT_CARD,
    PENDING,
    PENDING_MODIFIED,
    _lines,
    _net_paid,
    _order,
    _pick_lines,
    _product,
    _refund_and_cancel,
    _request_exchange,
    _request_return,
    _set_address,
    _switch_payment,
    _user,
    _variant,
)
from ._tools import _modify_items as _apply_modification

tau2_tools = ToolSet()
"""tau2-bench's 16 retail tools (its repository at 2026-08, the version of ../shared/external/tau2)."""

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


def _arg(description: str) -> object:
    return Annotated[str, Field(description=description)]


def _args(description: str) -> object:
    return Annotated[list[str], Field(description=description)]


OrderId = _arg("the order id, such as '#W0000000' (with its leading '#')")
UserIdArg = _arg("the user id, such as 'sara_doe_496'")
PaymentMethodId = _arg("a payment method id of the order's user, such as 'gift_card_0000000' or "
                       "'credit_card_0000000' (see the user's or the order's details)")
Address1 = _arg("first line of the address, such as '123 Main St'")
Address2 = _arg("second line of the address, such as 'Apt 1', or ''")
City = _arg("city, such as 'San Francisco'")
State = _arg("state, such as 'CA'")
Country = _arg("country, such as 'USA'")
Zip = _arg("zip code, such as '12345'")
OrderResult = Annotated[CallToolResult, Order]
UserResult = Annotated[CallToolResult, User]


# -- lookups as tau2 does them ---------------------------------------------------------------------


def _order_row(ep: Episode, order_id: str) -> sqlite3.Row:
    row = ep.query_one("SELECT * FROM orders WHERE order_id = ?", (order_id,))
    if row is None:
        raise NotFound("Order not found", field="order_id")
    return row


def _require_user(ep: Episode, user_id: str) -> None:
    if ep.query_one("SELECT 1 FROM users WHERE user_id = ?", (user_id,)) is None:
        raise NotFound("User not found", field="user_id")


def _method(ep: Episode, user_id: str, payment_method_id: str) -> sqlite3.Row:
    """One of the user's payment methods ('Payment method not found' for any other id)."""
    row = ep.query_one("SELECT * FROM payment_methods WHERE payment_method_id = ?", (payment_method_id,))
    if row is None or row["user_id"] != user_id:
        kind = None if row is None else PreconditionFailed.kind  # someone else's: it exists
        raise NotFound("Payment method not found", kind=kind, field="payment_method_id")
    return row


def _find_user(ep: Episode, matches) -> str:
    """The first user, in stored order, for whom `matches(row)` holds; 'User not found' when nobody."""
    for row in ep.query("SELECT user_id, first_name, last_name, email, zip FROM users ORDER BY rowid"):
        if matches(row):
            return row["user_id"]
    raise NotFound("User not found")


def _enough_of_each(lines: list[sqlite3.Row], item_ids: list[str], message: str) -> None:
    """tau2's check that the order holds each listed item at least as often as it is listed."""
    held = [line["item_id"] for line in lines]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise NotFound(message.format(item_id=item_id), field="item_ids")


def _new_variants(ep: Episode, lines: list[sqlite3.Row], item_ids: list[str], new_item_ids: list[str],
                  *, same_forbidden: bool, count_message: str) -> tuple[list[sqlite3.Row], float]:
    """tau2's checks of the new items, in its order, and the price difference (new minus old, summed)."""
    if len(item_ids) != len(new_item_ids):
        raise InvalidArguments(count_message, field="new_item_ids")
    variants, difference = [], 0.0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        if same_forbidden and item_id == new_item_id:
            raise InvalidArguments("The new item id should be different from the old item id", field="new_item_ids")
        line = next(ln for ln in lines if ln["item_id"] == item_id)
        variant = ep.query_one("SELECT * FROM variants WHERE item_id = ?", (new_item_id,))
        if variant is None or variant["product_id"] != line["product_id"]:
            kind = None if variant is None else PreconditionFailed.kind  # another product's item
            raise NotFound("Variant not found", kind=kind, field="new_item_ids")
        if not variant["available"]:
            raise PreconditionFailed(f"New item {new_item_id} not found or available", field="new_item_ids")
        variants.append(variant)
        difference += variant["price"] - line["price"]
    return variants, difference


def _gift_card_covers(method: sqlite3.Row, amount: float, message: str) -> None:
    if method["source"] == GIFT_CARD and method["balance"] < amount:
        raise PreconditionFailed(message, field="payment_method_id")


def _payments(ep: Episode, order_id: str) -> list[sqlite3.Row]:
    return ep.query("SELECT * FROM order_payments WHERE order_id = ? ORDER BY seq", (order_id,))


def _order_result(ep: Episode, order_id: str) -> CallToolResult:
    return reference_result(_order(ep, order_id))


# -- tools -----------------------------------------------------------------------------------------


@tau2_tools.tool(read_only=True)
def calculate(ep: Episode, expression: _arg("the arithmetic to evaluate, such as '2 + 2': numbers, + - * /, "
                                            "parentheses and spaces")) -> CallToolResult:
    """Calculate the value of an arithmetic expression (numbers, + - * /, parentheses, spaces).

    Returns the value rounded to 2 decimals, as text.
    """
    return reference_calculate(expression)


@tau2_tools.tool(read_only=False, destructive=True)
def cancel_pending_order(ep: Episode, order_id: OrderId,
                         reason: _arg("why: 'no longer needed' or 'ordered by mistake'")) -> OrderResult:
    """Cancel a pending order (a processed or delivered one cannot be). Explain the details and get the
    user's explicit yes first. The status becomes 'cancelled' and the payments are refunded: to a gift card
    at once, otherwise within 5-7 business days. Returns the order after the cancellation."""
    order = _order_row(ep, order_id)
    if order["status"] != PENDING:
        raise PreconditionFailed("Non-pending order cannot be cancelled", field="order_id")
    if reason not in CANCEL_REASONS:
        raise InvalidArguments("Invalid reason", field="reason")
    payments = _payments(ep, order_id)
    if all(p["transaction_type"] == "payment" for p in payments):  # as placed: each payment refunded
        refunds = [(p["payment_method_id"], p["amount"]) for p in payments]
    else:  # after a payment change tau2 also "refunds" the refund; what each method holds is refunded
        refunds = list(_net_paid(ep, order_id).items())
    _refund_and_cancel(ep, order_id, refunds, reason)
    return _order_result(ep, order_id)


@tau2_tools.tool(read_only=False, destructive=True)
def exchange_delivered_order_items(
    ep: Episode, order_id: OrderId,
    item_ids: _args("the item ids to exchange, each such as '1008292230'; an id may repeat"),
    new_item_ids: _args("the item to get for each position of item_ids, of the same product; an id may repeat"),
    payment_method_id: PaymentMethodId,
) -> OrderResult:
    """Exchange items of a delivered order for other items of the same product type. A delivered order can
    be returned or exchanged only once. Explain the details and get the user's explicit yes first. The price
    difference is charged to, or refunded to, the payment method. Returns the order after the request."""
    order = _order_row(ep, order_id)
    if order["status"] != DELIVERED:
        raise PreconditionFailed("Non-delivered order cannot be exchanged", field="order_id")
    lines = _lines(ep, order_id)
    _enough_of_each(lines, item_ids, "Number of {item_id} not found.")
    variants, difference = _new_variants(ep, lines, item_ids, new_item_ids, same_forbidden=False,
                                         count_message="The number of items to be exchanged should match.")
    difference = round_money(difference)
    method = _method(ep, order["user_id"], payment_method_id)
    _gift_card_covers(method, difference, "Insufficient gift card balance to pay for the price difference")
    _request_exchange(ep, order_id, _pick_lines(lines, item_ids, order_id), variants, payment_method_id, difference)
    return _order_result(ep, order_id)


@tau2_tools.tool(read_only=True)
def find_user_id_by_name_zip(
    ep: Episode, first_name: _arg("the customer's first name, such as 'John'"),
    last_name: _arg("the customer's last name, such as 'Doe'"), zip: _arg("the customer's zip code, such as '12345'"),
) -> CallToolResult:
    """Find a user id by first name, last name and zip code; an error when nobody matches. Find the user by
    email first; use this only when the email is not found or the user cannot remember it."""
    first, last = first_name.lower(), last_name.lower()
    return reference_result(_find_user(ep, lambda r: (r["first_name"].lower(), r["last_name"].lower(), r["zip"])
                                       == (first, last, zip)))


@tau2_tools.tool(read_only=True)
def find_user_id_by_email(ep: Episode, email: _arg("the user's email, such as 'something@example.com'")
                          ) -> CallToolResult:
    """Find a user id by email; an error when nobody has that email."""
    email = email.lower()
    return reference_result(_find_user(ep, lambda r: r["email"].lower() == email))


@tau2_tools.tool(read_only=True)
def get_order_details(ep: Episode, order_id: OrderId) -> OrderResult:
    """Get the status and details of an order."""
    return _order_result(ep, _order_row(ep, order_id)["order_id"])


@tau2_tools.tool(read_only=True)
def get_product_details(ep: Episode, product_id: _arg("the product id, such as '6086499569' (not an item id)")
                        ) -> Annotated[CallToolResult, Product]:
    """Get the inventory details of a product: each of its items with options, availability and price."""
    if ep.query_one("SELECT 1 FROM products WHERE product_id = ?", (product_id,)) is None:
        raise NotFound("Product not found", field="product_id")
    return reference_result(_product(ep, product_id, stored_order=True))


@tau2_tools.tool(read_only=True)
def get_item_details(ep: Episode, item_id: _arg("the item id, such as '6086499569' (not a product id)")
                     ) -> Annotated[CallToolResult, Variant]:
    """Get the inventory details of one item: options, availability and price."""
    row = ep.query_one("SELECT * FROM variants WHERE item_id = ?", (item_id,))
    if row is None:
        raise NotFound("Item not found", field="item_id")
    return reference_result(_variant(row))


@tau2_tools.tool(read_only=True)
def get_user_details(ep: Episode, user_id: UserIdArg) -> UserResult:
    """Get the details of a user, including their payment methods and orders."""
    _require_user(ep, user_id)
    return reference_result(_user(ep, user_id, stored_order=True))


@tau2_tools.tool(read_only=True)
def list_all_product_types(ep: Episode) -> Annotated[CallToolResult, dict[str, str]]:
    """List the name and product id of every product type (50 in the store), as JSON sorted by name. Each
    product type has several items with their own item ids and options."""
    rows = ep.query("SELECT name, product_id FROM products")
    return reference_result(dict(sorted((r["name"], r["product_id"]) for r in rows)))


@tau2_tools.tool(read_only=False)
def modify_pending_order_address(ep: Episode, order_id: OrderId, address1: Address1, address2: Address2, city: City,
                                 state: State, country: Country, zip: Zip) -> OrderResult:
    """Change the shipping address of a pending order. Explain the change and get the user's explicit yes
    first. Returns the order after the change."""
    order = _order_row(ep, order_id)
    if PENDING not in order["status"]:
        raise PreconditionFailed("Non-pending order cannot be modified", field="order_id")
    _set_address(ep, "orders", "order_id", order_id, (address1, address2, city, state, country, zip))
    return _order_result(ep, order_id)


@tau2_tools.tool(read_only=False, destructive=True)
def modify_pending_order_items(
    ep: Episode, order_id: OrderId,
    item_ids: _args("the item ids to change, each such as '1008292230'; an id may repeat"),
    new_item_ids: _args("the item to change to for each position of item_ids, of the same product; an id may "
                        "repeat"),
    payment_method_id: PaymentMethodId,
) -> OrderResult:
    """Change items of a pending order to other items of the same product type; this can be done once per
    order. Explain the details and get the user's explicit yes first. The price difference is charged to,
    or refunded to, the payment method. Returns the order after the change."""
    order = _order_row(ep, order_id)
    if order["status"] != PENDING:
        raise PreconditionFailed("Non-pending order cannot be modified", field="order_id")
    lines = _lines(ep, order_id)
    _enough_of_each(lines, item_ids, "{item_id} not found")
    variants, difference = _new_variants(ep, lines, item_ids, new_item_ids, same_forbidden=True,
                                         count_message="The number of items to be exchanged should match")
    method = _method(ep, order["user_id"], payment_method_id)
    _gift_card_covers(method, difference, "Insufficient gift card balance to pay for the new item")
    _apply_modification(ep, order_id, _pick_lines(lines, item_ids, order_id), variants, method, difference)
    return _order_result(ep, order_id)


@tau2_tools.tool(read_only=False, destructive=True)
def modify_pending_order_payment(ep: Episode, order_id: OrderId, payment_method_id: PaymentMethodId) -> OrderResult:
    """Pay a pending order with another payment method of the user. Explain the details and get the user's
    explicit yes first. Returns the order after the change."""
    order = _order_row(ep, order_id)
    if PENDING not in order["status"]:
        raise PreconditionFailed("Non-pending order cannot be modified", field="order_id")
    method = _method(ep, order["user_id"], payment_method_id)
    payments = _payments(ep, order_id)
    # tau2 records an entry for every item modification (0.00 when the price is unchanged; not stored here),
    # so an item-modified order never has exactly one
    if len(payments) != 1 or payments[0]["transaction_type"] != "payment" or order["status"] == PENDING_MODIFIED:
        raise PreconditionFailed("There should be exactly one payment for a pending order", field="order_id")
    old_id, amount = payments[0]["payment_method_id"], payments[0]["amount"]
    if old_id == payment_method_id:
        raise Conflict("The new payment method should be different from the current one", field="payment_method_id")
    _gift_card_covers(method, amount, "Insufficient gift card balance to pay for the order")
    _switch_payment(ep, order_id, method, old_id, amount)
    return _order_result(ep, order_id)


@tau2_tools.tool(read_only=False)
def modify_user_address(ep: Episode, user_id: UserIdArg, address1: Address1, address2: Address2, city: City,
                        state: State, country: Country, zip: Zip) -> UserResult:
    """Change a user's default address. Explain the change and get the user's explicit yes first. Returns
    the user after the change."""
    _require_user(ep, user_id)
    _set_address(ep, "users", "user_id", user_id, (address1, address2, city, state, country, zip))
    return reference_result(_user(ep, user_id, stored_order=True))


@tau2_tools.tool(read_only=False, destructive=True)
def return_delivered_order_items(
    ep: Episode, order_id: OrderId,
    item_ids: _args("the item ids to return, each such as '1008292230'; an id may repeat"),
    payment_method_id: PaymentMethodId,
) -> OrderResult:
    """Return items of a delivered order: the status becomes 'return requested' and the user gets an email
    on how to send them back. The refund goes to the original payment method or a gift card. Explain the
    details and get the user's explicit yes first. Returns the order after the request."""
    order = _order_row(ep, order_id)
    if order["status"] != DELIVERED:
        raise PreconditionFailed("Non-delivered order cannot be returned", field="order_id")
    method = _method(ep, order["user_id"], payment_method_id)
    first = _payments(ep, order_id)[0]["payment_method_id"]
    if method["source"] != GIFT_CARD and payment_method_id != first:
        raise PreconditionFailed("Payment method should be the original payment method", field="payment_method_id")
    lines = _lines(ep, order_id)
    _enough_of_each(lines, item_ids, "Some item not found")
    _request_return(ep, order_id, _pick_lines(lines, item_ids, order_id), payment_method_id)
    return _order_result(ep, order_id)


@tau2_tools.tool(read_only=False)
def transfer_to_human_agents(ep: Episode, summary: _arg("a summary of the user's issue")) -> CallToolResult:
    """Transfer the user to a human agent, with a summary of the issue. Only when the user explicitly asks
    for a human agent, or the issue cannot be solved within the policy and these tools."""
    record_transfer(ep, summary)
    return reference_result("Transfer successful")


acb_tools = tau2_tools.without("get_item_details")
"""AgentChangeBench's retail tools: its fork of tau2 (2025-06 release), 15 tools, before get_item_details."""
