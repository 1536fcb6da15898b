"""Money: totals, refunds, gift-card balances and price differences against hand-computed values.

Fixture (conftest.py): gift_card_1000002 (ana) holds 50.00, gift_card_2000001 (ben) 6.00.
"""

from __future__ import annotations

import pytest

from tests.servers.helpers import fails, ok

pytestmark = pytest.mark.anyio

ANA, BEN = "ana_lopez_1001", "ben_okafor_2002"


async def balance(shop, user_id: str, gift_card: str) -> float:
    return (await ok(shop, "get_user_details", {"user_id": user_id}))["payment_methods"][gift_card]["balance"]


def history(order: dict) -> list[tuple[str, float, str]]:
    return [(p["transaction_type"], p["amount"], p["payment_method_id"]) for p in order["payment_history"]]


def total(order: dict) -> float:
    return round(sum(i["price"] for i in order["items"]), 2)


async def test_order_totals_equal_their_payments(shop):
    for order_id, expected in (("#W1000001", 60.00), ("#W1000003", 120.50), ("#W2000003", 25.50)):
        o = await ok(shop, "get_order_details", {"order_id": order_id})
        paid = sum(a if t == "payment" else -a for t, a, _ in history(o))
        assert total(o) == round(paid, 2) == expected


async def test_cancelling_a_gift_card_order_credits_the_card_at_once(shop):
    o = await ok(shop, "cancel_pending_order", {"order_id": "#W1000002", "reason": "ordered by mistake"})
    assert history(o) == [("payment", 40.00, "gift_card_1000002"), ("refund", 40.00, "gift_card_1000002")]
    assert await balance(shop, ANA, "gift_card_1000002") == 90.00  # 50.00 + 40.00


async def test_modify_items_charges_the_difference(shop):
    # 20.00 -> 25.50 and 40.00 -> 95.00: 5.50 + 55.00 = 60.50 more, on the credit card
    o = await ok(shop, "modify_pending_order_items", {
        "order_id": "#W1000001", "item_ids": ["2000000001", "3000000001"],
        "new_item_ids": ["2000000002", "3000000002"], "payment_method_id": "credit_card_1000001"})
    assert history(o) == [("payment", 60.00, "credit_card_1000001"), ("payment", 60.50, "credit_card_1000001")]
    assert total(o) == 120.50 == 60.00 + 60.50
    assert await balance(shop, ANA, "gift_card_1000002") == 50.00


async def test_modify_items_with_duplicates_paid_by_gift_card(shop):
    # two units of 2000000001 (20.00 each) -> 2000000004 (18.25) and 2000000002 (25.50): -1.75 + 5.50 = 3.75
    o = await ok(shop, "modify_pending_order_items", {
        "order_id": "#W1000002", "item_ids": ["2000000001", "2000000001"],
        "new_item_ids": ["2000000004", "2000000002"], "payment_method_id": "gift_card_1000002"})
    assert [(i["item_id"], i["price"]) for i in o["items"]] == [("2000000004", 18.25), ("2000000002", 25.50)]
    assert history(o)[-1] == ("payment", 3.75, "gift_card_1000002")
    assert await balance(shop, ANA, "gift_card_1000002") == 46.25  # 50.00 - 3.75


async def test_modify_items_refunds_a_negative_difference_to_a_gift_card(shop):
    # 20.00 -> 18.25: 1.75 back, credited to the gift card at once
    o = await ok(shop, "modify_pending_order_items", {
        "order_id": "#W1000001", "item_ids": ["2000000001"], "new_item_ids": ["2000000004"],
        "payment_method_id": "gift_card_1000002"})
    assert history(o)[-1] == ("refund", 1.75, "gift_card_1000002")
    assert total(o) == 58.25
    assert await balance(shop, ANA, "gift_card_1000002") == 51.75


async def test_modify_items_at_equal_price_records_no_payment(shop):
    o = await ok(shop, "modify_pending_order_items", {
        "order_id": "#W1000001", "item_ids": ["2000000001"], "new_item_ids": ["2000000005"],
        "payment_method_id": "credit_card_1000001"})
    assert history(o) == [("payment", 60.00, "credit_card_1000001")]
    assert o["status"] == "pending (item modified)"


async def test_payment_change_to_a_gift_card_and_back(shop):
    o = await ok(shop, "modify_pending_order_payment", {"order_id": "#W1000006", "payment_method_id": "gift_card_1000002"})
    assert history(o) == [("payment", 18.25, "credit_card_1000001"), ("payment", 18.25, "gift_card_1000002"),
                           ("refund", 18.25, "credit_card_1000001")]
    assert await balance(shop, ANA, "gift_card_1000002") == 31.75  # 50.00 - 18.25
    o = await ok(shop, "modify_pending_order_payment", {"order_id": "#W1000006", "payment_method_id": "paypal_1000003"})
    assert history(o)[-2:] == [("payment", 18.25, "paypal_1000003"), ("refund", 18.25, "gift_card_1000002")]
    assert await balance(shop, ANA, "gift_card_1000002") == 50.00


async def test_payment_change_off_a_gift_card_credits_it(shop):
    await ok(shop, "modify_pending_order_payment", {"order_id": "#W2000004", "payment_method_id": "credit_card_2000002"})
    assert await balance(shop, BEN, "gift_card_2000001") == 46.00  # 6.00 + 40.00
    # cancelling afterwards refunds the card that now holds the money, once (tau2 refunded both entries)
    o = await ok(shop, "cancel_pending_order", {"order_id": "#W2000004", "reason": "no longer needed"})
    assert history(o) == [("payment", 40.00, "gift_card_2000001"), ("payment", 40.00, "credit_card_2000002"),
                          ("refund", 40.00, "gift_card_2000001"), ("refund", 40.00, "credit_card_2000002")]
    assert await balance(shop, BEN, "gift_card_2000001") == 46.00


async def test_cancel_after_item_modification_is_refused_but_payment_change_refunds_the_total(shop):
    await ok(shop, "modify_pending_order_items", {
        "order_id": "#W1000001", "item_ids": ["3000000001"], "new_item_ids": ["3000000002"],
        "payment_method_id": "credit_card_1000001"})  # +55.00 on the card: 115.00 in all
    o = await ok(shop, "modify_pending_order_payment", {"order_id": "#W1000001", "payment_method_id": "paypal_1000003"})
    assert history(o)[-2:] == [("payment", 115.00, "paypal_1000003"), ("refund", 115.00, "credit_card_1000001")]


async def test_exchange_difference_negative_and_no_money_moves_yet(shop):
    # 25.50 -> 18.25 and 95.00 -> 40.00: -7.25 - 55.00 = -62.25, refunded when the items come back
    o = await ok(shop, "exchange_delivered_order_items", {
        "order_id": "#W1000003", "item_ids": ["2000000002", "3000000002"],
        "new_item_ids": ["2000000004", "3000000001"], "payment_method_id": "gift_card_1000002"})
    assert o["exchange_price_difference"] == -62.25
    assert history(o) == [("payment", 120.50, "paypal_1000003")]
    assert await balance(shop, ANA, "gift_card_1000002") == 50.00


async def test_exchange_positive_difference_covered_by_a_gift_card(shop):
    # 20.00 -> 25.50: 5.50, within ben's 6.00; charged when the exchange is processed, not now
    o = await ok(shop, "exchange_delivered_order_items", {
        "order_id": "#W2000002", "item_ids": ["2000000001"], "new_item_ids": ["2000000002"],
        "payment_method_id": "gift_card_2000001"})
    assert (o["exchange_price_difference"], o["exchange_payment_method_id"]) == (5.50, "gift_card_2000001")
    assert await balance(shop, BEN, "gift_card_2000001") == 6.00
    assert (await ok(shop, "calculate", {"expression": "25.50 - 20.00"}))["result"] == 5.5


async def test_exchange_positive_difference_beyond_the_gift_card_is_refused(shop):
    # 30.00 -> 36.40 (+6.40) and 20.00 -> 25.50 (+5.50): 11.90 > 6.00
    err = await fails(shop, "exchange_delivered_order_items", {
        "order_id": "#W2000002", "item_ids": ["4000000001", "2000000001"],
        "new_item_ids": ["4000000002", "2000000002"], "payment_method_id": "gift_card_2000001"}, "precondition_failed")
    assert "6.00" in err["message"] and "11.90" in err["message"]
