"""The 16 retail tools (tau2's public contract: same names and parameters), over one episode's database.

Where tau2's reference tools are wrong, these do the right thing (see docs in each tool and the module
notes below); with a fresh tau2 order (one payment, nothing modified yet) they give the same result.

- Money moves by *net* amount per payment method (payments minus refunds), so an order whose payment
  method was changed is refunded once, not twice, when it is cancelled (tau2 refunded every history
  entry, including the refunded one).
- modify_pending_order_items gives every modified line its own new variant's price and options (tau2
  gave all of them the last variant's) and records no zero-amount payment when prices are equal.
- A modified item must change to a different option; an exchange may name the same item (a faulty unit
  replaced by an identical one, which several tau2 tasks expect).
"""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from typing import Annotated

from pydantic import Field
from pydantic_core import from_json

from shiftbox_servers.kit import (
    NOT_BLANK,
    Conflict,
    Episode,
    InvalidArguments,
    NotFound,
    PreconditionFailed,
    ToolSet,
    add_transfer_tool,
    evaluate_arithmetic,
    identifier,
    round_money,
    text,
)

from ._models import (
    Address,
    Calculation,
    CancelReason,
    CreditCard,
    GiftCard,
    Order,
    PayPal,
    Product,
    ProductTypes,
    User,
    UserId,
    UserIds,
    UserName,
    Variant,
)

tools = ToolSet()

OrderId = identifier("order id, such as '#W0000000' (note the leading '#')")
UserIdArg = identifier("user id, such as 'sara_doe_496'")
PaymentMethodId = identifier(
    "payment method id of the order's user, such as 'gift_card_0000000', 'credit_card_0000000' or "
    "'paypal_0000000' (see get_user_details)")
ProductId = Annotated[str, Field(pattern=r"^[0-9]{1,20}$",
                                 description="product id, a digit string such as '6086499569' (not an item id)")]
ItemId = Annotated[str, Field(pattern=r"^[0-9]{1,20}$",
                              description="item id, a digit string such as '1008292230' (not a product id)")]


def item_ids(description: str) -> object:
    return Annotated[list[ItemId], Field(min_length=1, max_length=50, description=description)]


Address1 = text("first line of the address, such as '123 Main St'", max_length=200)
Address2 = Annotated[str, Field(max_length=200, description="second line, such as 'Apt 1', or '' for none"), NOT_BLANK]
City = text("city, such as 'San Francisco'", max_length=100)
State = text("state, such as 'CA'", max_length=60)
Country = text("country, such as 'USA'", max_length=60)
Zip = Annotated[str, Field(pattern=r"^[0-9A-Za-z][0-9A-Za-z -]{1,9}$", description="zip code, such as '12345'")]

PENDING = "pending"
PENDING_MODIFIED = "pending (item modified)"
DELIVERED = "delivered"
GIFT_CARD = "gift_card"


# -- lookups ---------------------------------------------------------------------------------------


def _order_row(ep: Episode, order_id: str) -> sqlite3.Row:
    row = ep.query_one("SELECT * FROM orders WHERE order_id = ?", (order_id,))
    if row is None and not order_id.startswith("#"):
        row = ep.query_one("SELECT * FROM orders WHERE order_id = ?", ("#" + order_id,))
    if row is None:
        raise NotFound(f"no order with id {order_id!r} (order ids look like '#W0000000')", field="order_id")
    return row


def _user_row(ep: Episode, user_id: str) -> sqlite3.Row:
    row = ep.query_one("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if row is None:
        raise NotFound(f"no user with id {user_id!r}", field="user_id")
    return row


def _address(row: sqlite3.Row) -> Address:
    return Address(address1=row["address1"], address2=row["address2"], city=row["city"],
                   country=row["country"], state=row["state"], zip=row["zip"])


def _payment_method_model(row: sqlite3.Row) -> CreditCard | GiftCard | PayPal:
    pm_id, source = row["payment_method_id"], row["source"]
    if source == "credit_card":
        return CreditCard(source=source, id=pm_id, brand=row["brand"], last_four=row["last_four"])
    if source == GIFT_CARD:
        return GiftCard(source=source, id=pm_id, balance=row["balance"])
    return PayPal(source="paypal", id=pm_id)


def _user(ep: Episode, user_id: str, *, stored_order: bool = False) -> User:
    """The user's profile: payment methods and order ids sorted by id, or with `stored_order` in the order the
    snapshot stores them (an imported db.json's own order, which tau2's tools show)."""
    row = _user_row(ep, user_id)
    order_by = "rowid" if stored_order else "payment_method_id"
    methods = ep.query(f"SELECT * FROM payment_methods WHERE user_id = ? ORDER BY {order_by}", (user_id,))
    order_by = "rowid" if stored_order else "order_id"
    orders = ep.query(f"SELECT order_id FROM orders WHERE user_id = ? ORDER BY {order_by}", (user_id,))
    return User(
        user_id=row["user_id"],
        name=UserName(first_name=row["first_name"], last_name=row["last_name"]),
        address=_address(row),
        email=row["email"],
        payment_methods={m["payment_method_id"]: _payment_method_model(m) for m in methods},
        orders=[o[0] for o in orders],
    )


def _lines(ep: Episode, order_id: str) -> list[sqlite3.Row]:
    """The order's lines in order, with their variant's product, name and options."""
    return ep.query(
        "SELECT i.line_no, i.item_id, i.price, i.return_requested, i.exchange_item_id, v.product_id, "
        "v.options, p.name FROM order_items i JOIN variants v USING (item_id) JOIN products p USING (product_id) "
        "WHERE i.order_id = ? ORDER BY i.line_no",
        (order_id,),
    )


def _order(ep: Episode, order_id: str) -> Order:
    # One validation of plain data (JSON columns parsed by pydantic-core): the same model as building each
    # part with its constructor, in a fraction of the time (a tool call's result is built on every call).
    row = _order_row(ep, order_id)
    order_id = row["order_id"]
    lines = _lines(ep, order_id)
    fulfillments = ep.query(
        "SELECT tracking_ids, item_ids FROM fulfillments WHERE order_id = ? ORDER BY fulfillment_no", (order_id,))
    payments = ep.query(
        "SELECT transaction_type, amount, payment_method_id FROM order_payments WHERE order_id = ? ORDER BY seq",
        (order_id,))
    exchanged = [ln for ln in lines if ln["exchange_item_id"] is not None]
    returned = [ln for ln in lines if ln["return_requested"]]
    return Order.model_validate({
        "order_id": order_id,
        "user_id": row["user_id"],
        "address": _address(row),
        "items": [{"name": ln["name"], "product_id": ln["product_id"], "item_id": ln["item_id"],
                   "price": ln["price"], "options": from_json(ln["options"])} for ln in lines],
        "status": row["status"],
        "fulfillments": [{"tracking_id": from_json(f["tracking_ids"]), "item_ids": from_json(f["item_ids"])}
                         for f in fulfillments],
        "payment_history": [dict(p) for p in payments],
        "cancel_reason": row["cancel_reason"],
        "exchange_items": sorted(ln["item_id"] for ln in exchanged) if exchanged else None,
        "exchange_new_items": sorted(ln["exchange_item_id"] for ln in exchanged) if exchanged else None,
        "exchange_payment_method_id": row["exchange_payment_method_id"],
        "exchange_price_difference": row["exchange_price_difference"],
        "return_items": sorted(ln["item_id"] for ln in returned) if returned else None,
        "return_payment_method_id": row["return_payment_method_id"],
    })


def _product(ep: Episode, product_id: str, *, stored_order: bool = False) -> Product:
    """A product with its variants, by item id or (`stored_order`) in the snapshot's stored order."""
    row = ep.query_one("SELECT * FROM products WHERE product_id = ?", (product_id,))
    if row is None:
        hint = ""
        if ep.query_one("SELECT 1 FROM variants WHERE item_id = ?", (product_id,)):
            hint = " (that is an item id; product ids are listed by list_all_product_types)"
        raise NotFound(f"no product with id {product_id!r}{hint}", field="product_id")
    order_by = "rowid" if stored_order else "item_id"
    variants = ep.query(f"SELECT * FROM variants WHERE product_id = ? ORDER BY {order_by}", (product_id,))
    return Product(name=row["name"], product_id=product_id, variants={v["item_id"]: _variant(v) for v in variants})


def _variant(row: sqlite3.Row) -> Variant:
    return Variant(item_id=row["item_id"], options=json.loads(row["options"]), available=bool(row["available"]),
                   price=row["price"])


def _payment_method(ep: Episode, user_id: str, payment_method_id: str) -> sqlite3.Row:
    """A payment method of the order's user (not found, or someone else's, is an error)."""
    row = ep.query_one("SELECT * FROM payment_methods WHERE payment_method_id = ?", (payment_method_id,))
    if row is None:
        raise NotFound(f"no payment method with id {payment_method_id!r}", field="payment_method_id")
    if row["user_id"] != user_id:
        raise PreconditionFailed(f"payment method {payment_method_id} does not belong to user {user_id}",
                                 field="payment_method_id")
    return row


def _net_paid(ep: Episode, order_id: str) -> dict[str, float]:
    """Payment method -> amount it currently holds for the order (payments minus refunds), > 0 only."""
    net: dict[str, float] = {}
    for p in ep.query("SELECT * FROM order_payments WHERE order_id = ? ORDER BY seq", (order_id,)):
        sign = 1 if p["transaction_type"] == "payment" else -1
        net[p["payment_method_id"]] = net.get(p["payment_method_id"], 0.0) + sign * p["amount"]
    return {pm: round_money(amount) for pm, amount in net.items() if round_money(amount) > 0}


def _record_payment(ep: Episode, order_id: str, transaction_type: str, amount: float, payment_method_id: str) -> None:
    """Append a payment-history entry of `amount` as given (the native tools pass amounts rounded to the cent;
    tau2's tool set passes tau2's own sums)."""
    (last,) = ep.query_one("SELECT COALESCE(MAX(seq), 0) FROM order_payments WHERE order_id = ?", (order_id,))
    ep.execute("INSERT INTO order_payments VALUES (?, ?, ?, ?, ?)",
               (order_id, last + 1, transaction_type, amount, payment_method_id))


def _adjust_gift_card(ep: Episode, method: sqlite3.Row, delta: float) -> None:
    """Credit (delta > 0) or debit (delta < 0) a gift card at once; other methods settle outside the store."""
    if method["source"] == GIFT_CARD:
        ep.execute("UPDATE payment_methods SET balance = ? WHERE payment_method_id = ?",
                   (round_money(method["balance"] + delta), method["payment_method_id"]))


def _require_status(order: sqlite3.Row, allowed: tuple[str, ...], action: str) -> None:
    if order["status"] not in allowed:
        wanted = " or ".join(repr(s) for s in allowed)
        raise PreconditionFailed(f"order {order['order_id']} is {order['status']!r}; only an order that is "
                                 f"{wanted} can be {action}", field="order_id")


def _pick_lines(lines: list[sqlite3.Row], wanted: list[str], order_id: str) -> list[sqlite3.Row]:
    """One distinct order line per requested item id (an id listed twice needs two such lines)."""
    free = list(lines)
    picked = []
    for item_id in wanted:
        line = next((ln for ln in free if ln["item_id"] == item_id), None)
        if line is None:
            have = sum(ln["item_id"] == item_id for ln in lines)
            asked = wanted.count(item_id)
            if have == 0:
                items = ", ".join(sorted({ln["item_id"] for ln in lines}))
                raise NotFound(f"item {item_id} is not in order {order_id}; its items are: {items}",
                               field="item_ids")
            raise NotFound(f"order {order_id} has {have} of item {item_id}, but {asked} were listed",
                           field="item_ids")
        free.remove(line)
        picked.append(line)
    return picked


def _replacements(ep: Episode, lines: list[sqlite3.Row], new_item_ids: list[str], *,
                  same_allowed: bool) -> tuple[list[sqlite3.Row], float]:
    """Check each new item (exists, same product, available, different unless `same_allowed`) and return
    them with the price difference: new prices minus the old lines' prices (> 0 means the user pays)."""
    if len(lines) != len(new_item_ids):
        raise InvalidArguments(f"item_ids has {len(lines)} ids but new_item_ids has {len(new_item_ids)}; each new "
                               "item replaces the item at the same position", field="new_item_ids")
    variants = []
    difference = 0.0
    for line, new_id in zip(lines, new_item_ids, strict=True):
        if new_id == line["item_id"] and not same_allowed:
            raise InvalidArguments(f"new item {new_id} is the same as the item it replaces; choose a different "
                                   "option of the product", field="new_item_ids")
        variant = ep.query_one("SELECT * FROM variants WHERE item_id = ?", (new_id,))
        if variant is None:
            raise NotFound(f"no item with id {new_id!r}", field="new_item_ids")
        if variant["product_id"] != line["product_id"]:
            raise PreconditionFailed(f"new item {new_id} is not a variant of {line['name']} (product "
                                     f"{line['product_id']}); an item can only change to another option of the "
                                     "same product", field="new_item_ids")
        if not variant["available"]:
            raise PreconditionFailed(f"new item {new_id} is not available", field="new_item_ids")
        variants.append(variant)
        difference += variant["price"] - line["price"]
    return variants, round_money(difference)


def _set_address(ep: Episode, table: str, key: str, value: str, address: tuple[str, ...]) -> None:
    """Write (address1, address2, city, state, country, zip) to the `table` row whose `key` column is `value`."""
    ep.execute(f"UPDATE {table} SET address1 = ?, address2 = ?, city = ?, state = ?, country = ?, zip = ? "
               f"WHERE {key} = ?", (*address, value))


def _refund_and_cancel(ep: Episode, order_id: str, refunds: list[tuple[str, float]], reason: str) -> None:
    """Record each (payment method, amount) refund, crediting gift cards at once, and cancel the order."""
    for payment_method_id, amount in refunds:
        _record_payment(ep, order_id, "refund", amount, payment_method_id)
        method = ep.query_one("SELECT * FROM payment_methods WHERE payment_method_id = ?", (payment_method_id,))
        _adjust_gift_card(ep, method, amount)
    ep.execute("UPDATE orders SET status = 'cancelled', cancel_reason = ? WHERE order_id = ?", (reason, order_id))


def _modify_items(ep: Episode, order_id: str, lines: list[sqlite3.Row], variants: list[sqlite3.Row],
                  method: sqlite3.Row, difference: float) -> None:
    """Charge (or refund) the price difference, give each line its new variant (and that variant's price) and
    mark the order item-modified."""
    if difference > 0:
        _record_payment(ep, order_id, "payment", difference, method["payment_method_id"])
    elif difference < 0:
        _record_payment(ep, order_id, "refund", -difference, method["payment_method_id"])
    _adjust_gift_card(ep, method, -difference)
    for line, variant in zip(lines, variants, strict=True):
        ep.execute("UPDATE order_items SET item_id = ?, price = ? WHERE order_id = ? AND line_no = ?",
                   (variant["item_id"], variant["price"], order_id, line["line_no"]))
    ep.execute("UPDATE orders SET status = ? WHERE order_id = ?", (PENDING_MODIFIED, order_id))


def _switch_payment(ep: Episode, order_id: str, method: sqlite3.Row, old_id: str, amount: float) -> None:
    """Charge `amount` to the new method and refund it to the old one (gift cards at once)."""
    _record_payment(ep, order_id, "payment", amount, method["payment_method_id"])
    _record_payment(ep, order_id, "refund", amount, old_id)
    _adjust_gift_card(ep, method, -amount)
    old = ep.query_one("SELECT * FROM payment_methods WHERE payment_method_id = ?", (old_id,))
    _adjust_gift_card(ep, old, amount)


def _request_return(ep: Episode, order_id: str, lines: list[sqlite3.Row], payment_method_id: str) -> None:
    for line in lines:
        ep.execute("UPDATE order_items SET return_requested = 1 WHERE order_id = ? AND line_no = ?",
                   (order_id, line["line_no"]))
    ep.execute("UPDATE orders SET status = 'return requested', return_payment_method_id = ? WHERE order_id = ?",
               (payment_method_id, order_id))


def _request_exchange(ep: Episode, order_id: str, lines: list[sqlite3.Row], variants: list[sqlite3.Row],
                      payment_method_id: str, difference: float) -> None:
    for line, variant in zip(lines, variants, strict=True):
        ep.execute("UPDATE order_items SET exchange_item_id = ? WHERE order_id = ? AND line_no = ?",
                   (variant["item_id"], order_id, line["line_no"]))
    ep.execute("UPDATE orders SET status = 'exchange requested', exchange_payment_method_id = ?, "
               "exchange_price_difference = ? WHERE order_id = ?", (payment_method_id, difference, order_id))


def _fold(name: str) -> str:
    """Case- and accent-insensitive form of a name ('Vázquez' matches 'vazquez')."""
    decomposed = unicodedata.normalize("NFKD", " ".join(name.split()))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


# -- tools -----------------------------------------------------------------------------------------


@tools.tool(read_only=True)
def calculate(
    ep: Episode,
    expression: text("arithmetic such as '(342.81 + 561.05) * 2 - 10'; numbers, + - * / ( ) . and spaces only",
                     max_length=200),
) -> Calculation:
    """Calculate the result of an arithmetic expression, rounded to 2 decimals.

    The expression may contain numbers, the operators + - * /, parentheses, decimal points and spaces;
    anything else is rejected. Use it for totals, refunds and price differences.
    """
    return Calculation(expression=expression, result=evaluate_arithmetic(expression))


@tools.tool(read_only=True)
def find_user_id_by_email(
    ep: Episode, email: text("email, such as 'something@example.com'", min_length=3, max_length=254),
) -> UserId:
    """Find a user id by email address (case-insensitive). Not found is an error.

    This is the default way to authenticate a customer; fall back to find_user_id_by_name_zip only when
    the customer cannot give an email that is found.
    """
    row = ep.query_one("SELECT user_id FROM users WHERE email = ?", (email.strip(),))
    if row is None:
        raise NotFound(f"no user with email {email!r}", field="email")
    return UserId(user_id=row[0])


@tools.tool(read_only=True)
def find_user_id_by_name_zip(
    ep: Episode,
    first_name: text("first name, such as 'John'", max_length=100),
    last_name: text("last name, such as 'Doe'", max_length=100),
    zip: text("zip code of the user's default address, such as '12345'", max_length=10),
) -> UserIds:
    """Find the ids of the users with this first name, last name and zip code of the default address.

    Names match case- and accent-insensitively; the zip must match exactly. Returns every match (several
    when users share name and zip: tell them apart by another detail) and an empty list when nobody
    matches. Use find_user_id_by_email first; this is for customers who cannot give their email.
    """
    first, last = _fold(first_name), _fold(last_name)
    rows = ep.query("SELECT user_id, first_name, last_name FROM users WHERE zip = ? ORDER BY user_id",
                    (zip.strip(),))
    return UserIds(user_ids=[r["user_id"] for r in rows
                             if _fold(r["first_name"]) == first and _fold(r["last_name"]) == last])


@tools.tool(read_only=True)
def get_user_details(ep: Episode, user_id: UserIdArg) -> User:
    """Get a user's profile: name, email, default address, payment methods (gift cards with their
    balance, credit cards with brand and last four digits, PayPal) and the ids of their orders."""
    return _user(ep, user_id)


@tools.tool(read_only=True)
def get_order_details(ep: Episode, order_id: OrderId) -> Order:
    """Get the status and details of an order: items (name, product id, item id, price, options),
    shipping address, fulfillments (tracking ids), payment history and any cancellation, exchange or
    return details. Status is one of pending, processed, delivered, cancelled, pending (item modified),
    exchange requested, return requested."""
    return _order(ep, order_id)


@tools.tool(read_only=True)
def get_product_details(ep: Episode, product_id: ProductId) -> Product:
    """Get a product type and all its variant items: item id, options, availability and price.

    Takes a product id (from list_all_product_types or an order's items), not an item id.
    """
    return _product(ep, product_id)


@tools.tool(read_only=True)
def get_item_details(ep: Episode, item_id: ItemId) -> Variant:
    """Get one variant item by its item id: options, availability and price.

    Takes an item id (from an order's items or get_product_details), not a product id; the item's
    product is not needed.
    """
    row = ep.query_one("SELECT * FROM variants WHERE item_id = ?", (item_id,))
    if row is None:
        hint = ""
        if ep.query_one("SELECT 1 FROM products WHERE product_id = ?", (item_id,)):
            hint = " (that is a product id; get_product_details lists its items)"
        raise NotFound(f"no item with id {item_id!r}{hint}", field="item_id")
    return _variant(row)


@tools.tool(read_only=True)
def list_all_product_types(ep: Episode) -> ProductTypes:
    """List the name and product id of every product type in the store, sorted by name.

    Each product type has several variant items with their own item ids and options; see
    get_product_details.
    """
    rows = ep.query("SELECT name, product_id FROM products ORDER BY name, product_id")
    return ProductTypes(product_types={r["name"]: r["product_id"] for r in rows})


@tools.tool(read_only=False, destructive=True)
def cancel_pending_order(ep: Episode, order_id: OrderId, reason: CancelReason) -> Order:
    """Cancel a pending order (status exactly 'pending'; processed, delivered or item-modified orders
    cannot be cancelled). The reason must be 'no longer needed' or 'ordered by mistake'.

    Every payment is refunded to the method that paid it: gift cards are credited immediately, other
    methods within 5-7 business days. Explain the details and get the customer's explicit 'yes' first.
    Returns the order after cancellation.
    """
    order = _order_row(ep, order_id)
    _require_status(order, (PENDING,), "cancelled")
    order_id = order["order_id"]
    _refund_and_cancel(ep, order_id, list(_net_paid(ep, order_id).items()), reason)
    return _order(ep, order_id)


@tools.tool(read_only=False, idempotent=True)
def modify_pending_order_address(
    ep: Episode, order_id: OrderId, address1: Address1, address2: Address2, city: City, state: State,
    country: Country, zip: Zip,
) -> Order:
    """Change the shipping address of a pending order (status 'pending' or 'pending (item modified)').

    Explain the change and get the customer's explicit 'yes' first. Returns the order after the change.
    """
    order = _order_row(ep, order_id)
    _require_status(order, (PENDING, PENDING_MODIFIED), "given a new address")
    _set_address(ep, "orders", "order_id", order["order_id"], (address1, address2, city, state, country, zip))
    return _order(ep, order["order_id"])


@tools.tool(read_only=False, destructive=True)
def modify_pending_order_items(
    ep: Episode,
    order_id: OrderId,
    item_ids: item_ids("item ids to change, each such as '1008292230'; list an id twice to change two "
                       "units of it"),
    new_item_ids: item_ids("the new item for each position of item_ids: an available, different option of "
                           "the same product"),
    payment_method_id: PaymentMethodId,
) -> Order:
    """Change items of a pending order to other options of the same product. Can be done only once per
    order: the status becomes 'pending (item modified)' and the order can no longer be cancelled or
    have its items changed, so collect every item to change before calling.

    The price difference (new minus old) is charged to payment_method_id, or refunded to it when
    negative; a gift card must have balance for a positive difference and is charged or credited at
    once. Explain the details and get the customer's explicit 'yes' first. Returns the order.
    """
    order = _order_row(ep, order_id)
    _require_status(order, (PENDING,), "have its items modified")
    order_id = order["order_id"]
    lines = _pick_lines(_lines(ep, order_id), item_ids, order_id)
    variants, difference = _replacements(ep, lines, new_item_ids, same_allowed=False)
    method = _payment_method(ep, order["user_id"], payment_method_id)
    if method["source"] == GIFT_CARD and method["balance"] < difference:
        raise PreconditionFailed(f"gift card {payment_method_id} has a balance of {method['balance']:.2f}, "
                                 f"less than the price difference of {difference:.2f}", field="payment_method_id")
    _modify_items(ep, order_id, lines, variants, method, difference)
    return _order(ep, order_id)


@tools.tool(read_only=False, destructive=True)
def modify_pending_order_payment(ep: Episode, order_id: OrderId, payment_method_id: PaymentMethodId) -> Order:
    """Pay a pending order (status 'pending' or 'pending (item modified)') with a different payment
    method of the same user.

    The new method is charged the amount paid so far and the old one refunded: gift cards at once
    (a gift card must have balance for the whole amount), other methods within 5-7 business days.
    The order must currently be paid by a single method. Explain the details and get the customer's
    explicit 'yes' first. Returns the order after the change.
    """
    order = _order_row(ep, order_id)
    _require_status(order, (PENDING, PENDING_MODIFIED), "given a new payment method")
    order_id = order["order_id"]
    method = _payment_method(ep, order["user_id"], payment_method_id)
    paid = _net_paid(ep, order_id)
    if len(paid) != 1:
        raise PreconditionFailed(f"order {order_id} is paid by {len(paid)} payment methods; only an order paid by "
                                 "one method can switch to another", field="order_id")
    ((old_id, amount),) = paid.items()
    if old_id == payment_method_id:
        raise Conflict(f"order {order_id} is already paid with {payment_method_id}; choose a different method",
                       field="payment_method_id")
    if method["source"] == GIFT_CARD and method["balance"] < amount:
        raise PreconditionFailed(f"gift card {payment_method_id} has a balance of {method['balance']:.2f}, less "
                                 f"than the order's {amount:.2f}", field="payment_method_id")
    _switch_payment(ep, order_id, method, old_id, amount)
    return _order(ep, order_id)


@tools.tool(read_only=False, idempotent=True)
def modify_user_address(
    ep: Episode, user_id: UserIdArg, address1: Address1, address2: Address2, city: City, state: State,
    country: Country, zip: Zip,
) -> User:
    """Change a user's default address (existing orders keep their shipping address).

    Explain the change and get the customer's explicit 'yes' first. Returns the user after the change.
    """
    _user_row(ep, user_id)
    _set_address(ep, "users", "user_id", user_id, (address1, address2, city, state, country, zip))
    return _user(ep, user_id)


@tools.tool(read_only=False, destructive=True)
def return_delivered_order_items(
    ep: Episode,
    order_id: OrderId,
    item_ids: item_ids("item ids to return, each such as '1008292230'; list an id twice to return two units"),
    payment_method_id: PaymentMethodId,
) -> Order:
    """Request the return of items of a delivered order (status 'delivered'); the status becomes
    'return requested' and the customer gets an email on how to send the items back. Can be done once.

    The refund goes to payment_method_id, which must be the method that paid the order or one of the
    user's gift cards. Explain the details and get the customer's explicit 'yes' first. Returns the order.
    """
    order = _order_row(ep, order_id)
    _require_status(order, (DELIVERED,), "returned")
    order_id = order["order_id"]
    method = _payment_method(ep, order["user_id"], payment_method_id)
    if method["source"] != GIFT_CARD and payment_method_id not in _net_paid(ep, order_id):
        raise PreconditionFailed(f"the refund must go to the payment method that paid order {order_id} or to a "
                                 f"gift card; {payment_method_id} is neither", field="payment_method_id")
    _request_return(ep, order_id, _pick_lines(_lines(ep, order_id), item_ids, order_id), payment_method_id)
    return _order(ep, order_id)


@tools.tool(read_only=False, destructive=True)
def exchange_delivered_order_items(
    ep: Episode,
    order_id: OrderId,
    item_ids: item_ids("item ids to exchange, each such as '1008292230'; list an id twice to exchange two units"),
    new_item_ids: item_ids("the new item for each position of item_ids: an available item of the same product "
                           "(the same item id replaces a faulty unit with an identical one)"),
    payment_method_id: PaymentMethodId,
) -> Order:
    """Request an exchange of items of a delivered order (status 'delivered') for available items of
    the same product (another option, or the same item to replace a faulty unit); the status becomes 'exchange requested' and the customer gets an email on how to send
    the items back. No new order is needed. Can be done once: collect every item first.

    The price difference (new minus old) will be charged to, or refunded to, payment_method_id; a gift
    card must have balance for a positive difference. Explain the details and get the customer's
    explicit 'yes' first. Returns the order.
    """
    order = _order_row(ep, order_id)
    _require_status(order, (DELIVERED,), "exchanged")
    order_id = order["order_id"]
    lines = _pick_lines(_lines(ep, order_id), item_ids, order_id)
    variants, difference = _replacements(ep, lines, new_item_ids, same_allowed=True)
    method = _payment_method(ep, order["user_id"], payment_method_id)
    if method["source"] == GIFT_CARD and method["balance"] < difference:
        raise PreconditionFailed(f"gift card {payment_method_id} has a balance of {method['balance']:.2f}, "
                                 f"less than the price difference of {difference:.2f}", field="payment_method_id")
    _request_exchange(ep, order_id, lines, variants, payment_method_id, difference)
    return _order(ep, order_id)


add_transfer_tool(tools, party="customer", description="""\
Hand the conversation to a human agent, with a summary. Only when the customer explicitly asks
for a human, or the request cannot be handled within policy and these tools. After calling it, tell
the customer they are being transferred.""")
