"""Behaviour of every retail tool and every error path, through a real MCP client (fixture: conftest.py)."""

from __future__ import annotations

import json

import pytest

from shiftbox_servers.kit import result_error
from tests.servers.helpers import call, digest, fails, ok

pytestmark = pytest.mark.anyio

ANA = "ana_lopez_1001"
BEN = "ben_okafor_2002"
NEW_ADDRESS = {"address1": "9 New Rd", "address2": "", "city": "Dallas", "state": "TX", "country": "USA",
               "zip": "75201"}


# -- calculate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "result"), [
    ("2 + 2", 4.0), ("(342.81 + 561.05) * 2", 1807.72), ("100 / 3", 33.33), ("25.50 - 20", 5.5),
    ("-(3 - 5) * 1.5", 3.0), ("0.1 + 0.2", 0.3),
])
async def test_calculate(shop, expression, result):
    assert await ok(shop, "calculate", {"expression": expression}) == {"expression": expression, "result": result}


@pytest.mark.parametrize("expression", [
    "__import__('os')", "1;2", "2**99999", "1/0", "2 ** 3", "7 // 2", "7 % 2", "abs(-1)", "1e5", "()", "1 +",
    "(" * 40 + "1" + ")" * 40, "-" * 150 + "1", "1+" * 100 + "1",
])
async def test_calculate_rejects_anything_but_arithmetic(shop, expression):
    err = await fails(shop, "calculate", {"expression": expression}, "invalid_arguments")
    assert "expression" in err["message"] or "expression" in err.get("field", "")


# -- users -------------------------------------------------------------------------------------


async def test_find_user_id_by_email_is_case_insensitive(shop):
    assert await ok(shop, "find_user_id_by_email", {"email": "ana@example.com"}) == {"user_id": ANA}
    assert await ok(shop, "find_user_id_by_email", {"email": " ANA@Example.COM "}) == {"user_id": ANA}
    err = await fails(shop, "find_user_id_by_email", {"email": "nobody@example.com"}, "not_found")
    assert "nobody@example.com" in err["message"]


async def test_find_user_id_by_name_zip_folds_case_and_accents_but_not_zip(shop):
    args = {"first_name": "Ben", "last_name": "Okafor", "zip": "83701"}
    assert await ok(shop, "find_user_id_by_name_zip", args) == {"user_ids": [BEN]}
    for first, last in (("José", "Núñez"), ("jose", "NUNEZ")):
        res = await ok(shop, "find_user_id_by_name_zip", {"first_name": first, "last_name": last, "zip": "10001"})
        assert res == {"user_ids": ["jose_nunez_3003"]}
    # a name lookup is a search: nobody matching is an empty list (tests/servers/retail/test_lookup_rule.py)
    assert await ok(shop, "find_user_id_by_name_zip", {**args, "zip": "83702"}) == {"user_ids": []}
    assert await ok(shop, "find_user_id_by_name_zip", {**args, "last_name": "Okafr"}) == {"user_ids": []}


async def test_get_user_details(shop):
    u = await ok(shop, "get_user_details", {"user_id": ANA})
    assert u["name"] == {"first_name": "Ana", "last_name": "Lopez"} and u["email"] == "ana@example.com"
    assert u["address"] == {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "country": "USA",
                            "state": "TX", "zip": "73301"}
    assert u["payment_methods"] == {
        "credit_card_1000001": {"source": "credit_card", "id": "credit_card_1000001", "brand": "visa",
                                "last_four": "1111"},
        "gift_card_1000002": {"source": "gift_card", "id": "gift_card_1000002", "balance": 50.0},
        "paypal_1000003": {"source": "paypal", "id": "paypal_1000003"},
    }
    assert u["orders"] == ["#W1000001", "#W1000002", "#W1000003", "#W1000004", "#W1000005", "#W1000006"]
    await fails(shop, "get_user_details", {"user_id": "nobody_1"}, "not_found")


async def test_modify_user_address_keeps_order_addresses(shop):
    u = await ok(shop, "modify_user_address", {"user_id": BEN, **NEW_ADDRESS})
    assert u["address"] == {"address1": "9 New Rd", "address2": "", "city": "Dallas", "country": "USA",
                            "state": "TX", "zip": "75201"}
    assert (await ok(shop, "get_order_details", {"order_id": "#W2000001"}))["address"]["city"] == "Boise"
    # the new zip authenticates, the old one no longer does
    args = {"first_name": "Ben", "last_name": "Okafor"}
    assert await ok(shop, "find_user_id_by_name_zip", {**args, "zip": "75201"}) == {"user_ids": [BEN]}
    assert await ok(shop, "find_user_id_by_name_zip", {**args, "zip": "83701"}) == {"user_ids": []}
    await fails(shop, "modify_user_address", {"user_id": "nobody_1", **NEW_ADDRESS}, "not_found")
    await fails(shop, "modify_user_address", {"user_id": BEN, **NEW_ADDRESS, "zip": "!"}, "invalid_arguments")


# -- orders and products -----------------------------------------------------------------------


async def test_get_order_details_full_shape(shop):
    o = await ok(shop, "get_order_details", {"order_id": "#W1000003"})
    assert o == {
        "order_id": "#W1000003", "user_id": ANA,
        "address": {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "country": "USA",
                    "state": "TX", "zip": "73301"},
        "items": [
            {"name": "T-Shirt", "product_id": "1000000001", "item_id": "2000000002", "price": 25.5,
             "options": {"color": "blue", "size": "M"}},
            {"name": "Lamp", "product_id": "1000000002", "item_id": "3000000002", "price": 95.0,
             "options": {"style": "floor"}},
        ],
        "status": "delivered",
        "fulfillments": [{"tracking_id": ["111111111111"], "item_ids": ["2000000002", "3000000002"]}],
        "payment_history": [{"transaction_type": "payment", "amount": 120.5, "payment_method_id": "paypal_1000003"}],
        "cancel_reason": None, "exchange_items": None, "exchange_new_items": None,
        "exchange_payment_method_id": None, "exchange_price_difference": None, "return_items": None,
        "return_payment_method_id": None,
    }


async def test_get_order_details_statuses_and_request_fields(shop):
    cancelled = await ok(shop, "get_order_details", {"order_id": "#W1000005"})
    assert (cancelled["status"], cancelled["cancel_reason"]) == ("cancelled", "ordered by mistake")
    returned = await ok(shop, "get_order_details", {"order_id": "#W3000001"})
    assert returned["return_items"] == ["2000000001"] and returned["return_payment_method_id"] == "paypal_3000001"
    exchanged = await ok(shop, "get_order_details", {"order_id": "#W3000002"})
    assert (exchanged["exchange_items"], exchanged["exchange_new_items"]) == (["3000000001"], ["3000000002"])
    assert exchanged["exchange_price_difference"] == 55.0
    split = await ok(shop, "get_order_details", {"order_id": "#W2000002"})
    assert [f["tracking_id"] for f in split["fulfillments"]] == [["333333333333"], ["444444444444"]]


async def test_get_order_details_accepts_a_missing_hash_and_reports_unknown_ids(shop):
    assert (await ok(shop, "get_order_details", {"order_id": "W1000001"}))["order_id"] == "#W1000001"
    err = await fails(shop, "get_order_details", {"order_id": "#W9999999"}, "not_found")
    assert "#W9999999" in err["message"]


async def test_get_product_details(shop):
    p = await ok(shop, "get_product_details", {"product_id": "1000000002"})
    assert p == {"name": "Lamp", "product_id": "1000000002", "variants": {
        "3000000001": {"item_id": "3000000001", "options": {"style": "desk"}, "available": True, "price": 40.0},
        "3000000002": {"item_id": "3000000002", "options": {"style": "floor"}, "available": True, "price": 95.0},
    }}
    shirt = await ok(shop, "get_product_details", {"product_id": "1000000001"})
    assert shirt["variants"]["2000000003"]["available"] is False and len(shirt["variants"]) == 5
    err = await fails(shop, "get_product_details", {"product_id": "2000000001"}, "not_found")
    assert "item id" in err["message"]  # an item id given for a product id is named as such
    await fails(shop, "get_product_details", {"product_id": "9999999999"}, "not_found")
    await fails(shop, "get_product_details", {"product_id": "lamp"}, "invalid_arguments")


async def test_get_item_details(shop):
    """tau2's 16th retail tool: one variant by item id, whatever its product (tau2 task 21 calls it)."""
    assert await ok(shop, "get_item_details", {"item_id": "2000000003"}) == {
        "item_id": "2000000003", "options": {"color": "green", "size": "M"}, "available": False, "price": 22.0}
    err = await fails(shop, "get_item_details", {"item_id": "1000000002"}, "not_found")
    assert "product id" in err["message"]  # a product id given for an item id is named as such
    err = await fails(shop, "get_item_details", {"item_id": "9999999999"}, "not_found")
    assert "9999999999" in err["message"]
    await fails(shop, "get_item_details", {"item_id": "lamp"}, "invalid_arguments")


async def test_list_all_product_types_sorted_by_name(shop):
    res = await ok(shop, "list_all_product_types")
    assert list(res["product_types"].items()) == [("Kettle", "1000000003"), ("Lamp", "1000000002"),
                                                  ("T-Shirt", "1000000001")]


# -- cancel ------------------------------------------------------------------------------------


async def test_cancel_pending_order_refunds_the_card_later(shop):
    o = await ok(shop, "cancel_pending_order", {"order_id": "#W1000001", "reason": "no longer needed"})
    assert (o["status"], o["cancel_reason"]) == ("cancelled", "no longer needed")
    assert o["payment_history"] == [
        {"transaction_type": "payment", "amount": 60.0, "payment_method_id": "credit_card_1000001"},
        {"transaction_type": "refund", "amount": 60.0, "payment_method_id": "credit_card_1000001"}]
    u = await ok(shop, "get_user_details", {"user_id": ANA})
    assert u["payment_methods"]["gift_card_1000002"]["balance"] == 50.0


async def test_cancel_errors(shop):
    args = {"order_id": "#W1000003", "reason": "no longer needed"}
    for order_id in ("#W1000003", "#W1000004", "#W1000005", "#W2000003", "#W3000001"):
        err = await fails(shop, "cancel_pending_order", {**args, "order_id": order_id}, "precondition_failed")
        assert order_id in err["message"]
    await fails(shop, "cancel_pending_order", {**args, "order_id": "#W0000000"}, "not_found")
    await fails(shop, "cancel_pending_order", {"order_id": "#W1000001", "reason": "changed my mind"},
                "invalid_arguments")


# -- modify pending orders ---------------------------------------------------------------------


async def test_modify_pending_order_address(shop):
    o = await ok(shop, "modify_pending_order_address", {"order_id": "#W1000001", **NEW_ADDRESS})
    assert o["address"] == {"address1": "9 New Rd", "address2": "", "city": "Dallas", "country": "USA",
                            "state": "TX", "zip": "75201"} and o["status"] == "pending"
    # an item-modified order may still get a new address; a shipped one may not
    assert (await ok(shop, "modify_pending_order_address", {"order_id": "#W2000003", **NEW_ADDRESS}))["status"] \
        == "pending (item modified)"
    await fails(shop, "modify_pending_order_address", {"order_id": "#W1000004", **NEW_ADDRESS}, "precondition_failed")
    await fails(shop, "modify_pending_order_address", {"order_id": "#W0000000", **NEW_ADDRESS}, "not_found")
    # the user's default address is untouched
    assert (await ok(shop, "get_user_details", {"user_id": ANA}))["address"]["city"] == "Austin"


async def test_modify_pending_order_items_happy_path_and_once_only(shop):
    o = await ok(shop, "modify_pending_order_items", {
        "order_id": "#W1000001", "item_ids": ["2000000001", "3000000001"],
        "new_item_ids": ["2000000002", "3000000002"], "payment_method_id": "credit_card_1000001"})
    assert o["status"] == "pending (item modified)"
    # each line gets its own new variant's price and options (tau2 gave both the last variant's)
    assert [(i["item_id"], i["price"], i["options"]) for i in o["items"]] == [
        ("2000000002", 25.5, {"color": "blue", "size": "M"}), ("3000000002", 95.0, {"style": "floor"})]
    await fails(shop, "modify_pending_order_items", {
        "order_id": "#W1000001", "item_ids": ["2000000002"], "new_item_ids": ["2000000004"],
        "payment_method_id": "credit_card_1000001"}, "precondition_failed")
    await fails(shop, "cancel_pending_order", {"order_id": "#W1000001", "reason": "ordered by mistake"},
                "precondition_failed")


async def test_modify_pending_order_items_errors(shop):
    base = {"order_id": "#W1000001", "item_ids": ["2000000001"], "new_item_ids": ["2000000002"],
            "payment_method_id": "credit_card_1000001"}
    cases = [
        ({"new_item_ids": ["2000000003"]}, "precondition_failed", "not available"),
        ({"new_item_ids": ["3000000002"]}, "precondition_failed", "same product"),
        ({"new_item_ids": ["2999999999"]}, "not_found", "2999999999"),
        ({"item_ids": ["2000000004"]}, "not_found", "not in order"),
        ({"item_ids": ["2000000001", "2000000001"], "new_item_ids": ["2000000002", "2000000004"]}, "not_found",
         "has 1 of item 2000000001, but 2 were listed"),
        ({"new_item_ids": ["2000000002", "2000000004"]}, "invalid_arguments", "new_item_ids"),
        ({"new_item_ids": ["2000000001"]}, "invalid_arguments", "same as"),
        ({"payment_method_id": "credit_card_2000002"}, "precondition_failed", "does not belong"),
        ({"payment_method_id": "credit_card_9999999"}, "not_found", "credit_card_9999999"),
        ({"order_id": "#W1000003"}, "precondition_failed", "delivered"),
        ({"order_id": "#W0000000"}, "not_found", "#W0000000"),
        ({"item_ids": []}, "invalid_arguments", "item_ids"),
    ]
    before = await digest(shop)
    for change, kind, words in cases:
        err = await fails(shop, "modify_pending_order_items", {**base, **change}, kind)
        assert words in err["message"], (change, err)
    assert await digest(shop) == before


async def test_modify_pending_order_payment_errors(shop):
    await fails(shop, "modify_pending_order_payment", {"order_id": "#W1000001", "payment_method_id": "credit_card_1000001"},
                "conflict")
    err = await fails(shop, "modify_pending_order_payment",
                      {"order_id": "#W1000001", "payment_method_id": "gift_card_1000002"}, "precondition_failed")
    assert "50.00" in err["message"] and "60.00" in err["message"]
    await fails(shop, "modify_pending_order_payment", {"order_id": "#W1000001", "payment_method_id": "paypal_3000001"},
                "precondition_failed")
    await fails(shop, "modify_pending_order_payment", {"order_id": "#W1000001", "payment_method_id": "paypal_0"},
                "not_found")
    await fails(shop, "modify_pending_order_payment", {"order_id": "#W1000003", "payment_method_id": "credit_card_1000001"},
                "precondition_failed")
    await fails(shop, "modify_pending_order_payment", {"order_id": "#W0000000", "payment_method_id": "paypal_1000003"},
                "not_found")


# -- return and exchange -----------------------------------------------------------------------


async def test_return_delivered_order_items(shop):
    o = await ok(shop, "return_delivered_order_items", {
        "order_id": "#W1000003", "item_ids": ["3000000002"], "payment_method_id": "paypal_1000003"})
    assert (o["status"], o["return_items"], o["return_payment_method_id"]) == (
        "return requested", ["3000000002"], "paypal_1000003")
    assert o["payment_history"] == [
        {"transaction_type": "payment", "amount": 120.5, "payment_method_id": "paypal_1000003"}]
    await fails(shop, "return_delivered_order_items", {
        "order_id": "#W1000003", "item_ids": ["2000000002"], "payment_method_id": "paypal_1000003"},
        "precondition_failed")


async def test_return_may_refund_to_a_gift_card_but_no_other_method(shop):
    args = {"order_id": "#W1000003", "item_ids": ["3000000002", "2000000002"]}
    err = await fails(shop, "return_delivered_order_items", {**args, "payment_method_id": "credit_card_1000001"},
                      "precondition_failed")
    assert "gift card" in err["message"]
    o = await ok(shop, "return_delivered_order_items", {**args, "payment_method_id": "gift_card_1000002"})
    assert o["return_items"] == ["2000000002", "3000000002"]


async def test_return_errors(shop):
    base = {"order_id": "#W1000003", "item_ids": ["3000000002"], "payment_method_id": "paypal_1000003"}
    await fails(shop, "return_delivered_order_items", {**base, "order_id": "#W1000001"}, "precondition_failed")
    await fails(shop, "return_delivered_order_items", {**base, "order_id": "#W3000001"}, "precondition_failed")
    await fails(shop, "return_delivered_order_items", {**base, "order_id": "#W0000000"}, "not_found")
    await fails(shop, "return_delivered_order_items", {**base, "item_ids": ["4000000001"]}, "not_found")
    await fails(shop, "return_delivered_order_items", {**base, "item_ids": ["3000000002", "3000000002"]}, "not_found")
    await fails(shop, "return_delivered_order_items", {**base, "payment_method_id": "gift_card_2000001"},
                "precondition_failed")
    await fails(shop, "return_delivered_order_items", {**base, "payment_method_id": "paypal_404"}, "not_found")


async def test_exchange_delivered_order_items(shop):
    o = await ok(shop, "exchange_delivered_order_items", {
        "order_id": "#W2000002", "item_ids": ["4000000001", "2000000001"],
        "new_item_ids": ["4000000001", "2000000002"], "payment_method_id": "credit_card_2000002"})
    # the kettle is replaced by an identical one (a faulty unit); the shirt changes colour
    assert o["status"] == "exchange requested"
    assert (o["exchange_items"], o["exchange_new_items"]) == (["2000000001", "4000000001"],
                                                              ["2000000002", "4000000001"])
    assert (o["exchange_payment_method_id"], o["exchange_price_difference"]) == ("credit_card_2000002", 5.5)
    assert [i["item_id"] for i in o["items"]] == ["2000000001", "4000000001"]  # items change on receipt
    await fails(shop, "exchange_delivered_order_items", {
        "order_id": "#W2000002", "item_ids": ["2000000001"], "new_item_ids": ["2000000004"],
        "payment_method_id": "credit_card_2000002"}, "precondition_failed")


async def test_exchange_errors(shop):
    base = {"order_id": "#W2000002", "item_ids": ["2000000001"], "new_item_ids": ["2000000002"],
            "payment_method_id": "credit_card_2000002"}
    cases = [
        ({"item_ids": ["4000000001"], "new_item_ids": ["4000000002"], "payment_method_id": "gift_card_2000001"},
         "precondition_failed", "6.40"),  # 36.40 - 30.00 > 6.00
        ({"new_item_ids": ["2000000003"]}, "precondition_failed", "not available"),
        ({"new_item_ids": ["3000000001"]}, "precondition_failed", "same product"),
        ({"new_item_ids": ["5"]}, "not_found", "'5'"),
        ({"item_ids": ["3000000001"], "new_item_ids": ["3000000002"]}, "not_found", "not in order"),
        ({"new_item_ids": ["2000000002", "2000000004"]}, "invalid_arguments", "new_item_ids"),
        ({"order_id": "#W2000001"}, "precondition_failed", "pending"),
        ({"order_id": "#W3000002"}, "precondition_failed", "exchange requested"),
        ({"order_id": "#W0000000"}, "not_found", "#W0000000"),
        ({"payment_method_id": "paypal_1000003"}, "precondition_failed", "does not belong"),
        ({"payment_method_id": "paypal_404"}, "not_found", "paypal_404"),
    ]
    before = await digest(shop)
    for change, kind, words in cases:
        err = await fails(shop, "exchange_delivered_order_items", {**base, **change}, kind)
        assert words in err["message"], (change, err)
    assert await digest(shop) == before


# -- transfer and bookkeeping ------------------------------------------------------------------


async def test_transfer_to_human_agents_records_the_handoff(shop):
    t = await ok(shop, "transfer_to_human_agents", {"summary": "wants a refund to PayPal"})
    assert t["transfer_id"] == "xfer_000001" and t["requested_at"] == "2025-06-16T10:01:00"
    assert "Transfer successful" in t["message"]
    await fails(shop, "transfer_to_human_agents", {"summary": ""}, "invalid_arguments")


async def test_failed_call_changes_no_state(shop):
    before = await digest(shop)
    await fails(shop, "cancel_pending_order", {"order_id": "#W1000003", "reason": "no longer needed"},
                "precondition_failed")
    await fails(shop, "modify_pending_order_payment", {"order_id": "#W1000001", "payment_method_id": "gift_card_1000002"},
                "precondition_failed")
    assert await digest(shop) == before


async def test_diff_lists_what_a_cancellation_wrote(shop):
    await ok(shop, "cancel_pending_order", {"order_id": "#W1000002", "reason": "ordered by mistake"}, episode="d")
    res = await shop.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "d"})
    diff = json.loads(res.contents[0].text)
    assert set(diff) == {"orders", "order_payments", "payment_methods"}
    assert diff["order_payments"]["added"] == [{"order_id": "#W1000002", "seq": 2, "transaction_type": "refund",
                                                "amount": 40.0, "payment_method_id": "gift_card_1000002"}]
    assert diff["payment_methods"]["changed"] == [{"key": ["gift_card_1000002"], "fields": {"balance": [50.0, 90.0]}}]


async def test_call_helper_reports_kind_for_unknown_tool(shop):
    res = await call(shop, "get_item_variants", {"item_id": "2000000001"})
    assert res.is_error and result_error(res)["kind"] == "unknown_tool"


async def test_every_tool_is_exercised_here():
    """Guard: a new retail tool must get behaviour tests in this file."""
    from pathlib import Path

    from shiftbox_servers.retail import tools

    source = Path(__file__).read_text()
    untested = [s.name for s in tools if f'"{s.name}"' not in source]
    assert not untested, f"tools without behaviour tests: {untested}"
    assert len(tools) == 16
