"""The SDK would ignore unknown keys and coerce "5" to 5 or true to 1; shiftbox servers reject them.

`CASES` are sent by tests/servers/test_every_domain.py (field named, state unchanged)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

ITEMS = {"order_id": "#W1000001", "item_ids": ["2000000001"], "new_item_ids": ["2000000002"],
         "payment_method_id": "credit_card_1000001"}
ADDRESS = {"address1": "9 New Rd", "address2": "", "city": "Dallas", "state": "TX", "country": "USA", "zip": "75201"}

CASES = [
    ("extra key", "get_order_details", {"order_id": "#W1000001", "verbose": True}, "verbose"),
    ("missing field", "get_order_details", {}, "order_id"),
    ("number for string", "get_order_details", {"order_id": 1000001}, "order_id"),
    ("empty string", "get_user_details", {"user_id": ""}, "user_id"),
    ("list for string", "find_user_id_by_email", {"email": ["ana@example.com"]}, "email"),
    ("number for a digit-string id", "get_product_details", {"product_id": 1000000002}, "product_id"),
    ("letters in a product id", "get_product_details", {"product_id": "lamp-1"}, "product_id"),
    ("string for a list", "modify_pending_order_items", {**ITEMS, "item_ids": "2000000001"}, "item_ids"),
    ("JSON text for a list", "modify_pending_order_items", {**ITEMS, "new_item_ids": '["2000000002"]'},
     "new_item_ids"),
    ("number in an id list", "return_delivered_order_items",
     {"order_id": "#W1000003", "item_ids": [3000000002], "payment_method_id": "paypal_1000003"}, "item_ids.0"),
    ("empty id list", "return_delivered_order_items",
     {"order_id": "#W1000003", "item_ids": [], "payment_method_id": "paypal_1000003"}, "item_ids"),
    ("unknown enum value", "cancel_pending_order", {"order_id": "#W1000001", "reason": "too expensive"}, "reason"),
    ("enum in other case", "cancel_pending_order", {"order_id": "#W1000001", "reason": "No longer needed"},
     "reason"),
    ("null for a string", "modify_pending_order_address", {"order_id": "#W1000001", **ADDRESS, "address2": None},
     "address2"),
    ("number for a zip", "modify_user_address", {"user_id": "ana_lopez_1001", **ADDRESS, "zip": 75201}, "zip"),
    ("expression too long", "calculate", {"expression": "1+" * 150 + "1"}, "expression"),
    ("number for an expression", "calculate", {"expression": 4}, "expression"),
    ("arguments to a tool without any", "list_all_product_types", {"limit": 5}, "limit"),
    ("whitespace-only address line", "modify_user_address", {"user_id": "ana_lopez_1001", **ADDRESS, "address1": "   "},
     "address1"),
    ("whitespace-only city", "modify_pending_order_address", {"order_id": "#W1000001", **ADDRESS, "city": " "}, "city"),
    ("whitespace-only second address line", "modify_user_address",
     {"user_id": "ana_lopez_1001", **ADDRESS, "address2": "  "}, "address2"),
    ("whitespace-only email", "find_user_id_by_email", {"email": "    "}, "email"),
    ("whitespace-only first name", "find_user_id_by_name_zip", {"first_name": " ", "last_name": "Lopez", "zip": "75201"},
     "first_name"),
    ("whitespace-only order id", "get_order_details", {"order_id": "\t"}, "order_id"),
    ("whitespace-only summary", "transfer_to_human_agents", {"summary": "\n\n"}, "summary"),
    ("lone surrogate", "modify_user_address", {"user_id": "ana_lopez_1001", **ADDRESS, "city": "Dal\udc00las"}, "city"),
]


async def test_annotations_match_behaviour(shop):
    listed = {t.name: t.annotations for t in (await shop.list_tools()).tools}
    reads = {"calculate", "find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details",
             "get_order_details", "get_product_details", "get_item_details", "list_all_product_types"}
    assert {name for name, a in listed.items() if a.read_only_hint} == reads
    assert {name for name, a in listed.items() if a.destructive_hint} == {
        "cancel_pending_order", "modify_pending_order_items", "modify_pending_order_payment",
        "return_delivered_order_items", "exchange_delivered_order_items"}
    assert listed["modify_pending_order_address"].idempotent_hint is True
    assert listed["modify_user_address"].idempotent_hint is True
    assert listed["cancel_pending_order"].idempotent_hint is False
    assert all(a.open_world_hint is False for a in listed.values())


async def test_parameter_names_are_tau2s():
    """tau2 / AgentChangeBench tasks call these tools with exactly these parameters."""
    from shiftbox_servers.retail import tools

    expected = {
        "calculate": ["expression"],
        "find_user_id_by_email": ["email"],
        "find_user_id_by_name_zip": ["first_name", "last_name", "zip"],
        "get_user_details": ["user_id"],
        "get_order_details": ["order_id"],
        "get_product_details": ["product_id"],
        "get_item_details": ["item_id"],
        "list_all_product_types": [],
        "cancel_pending_order": ["order_id", "reason"],
        "modify_pending_order_address": ["order_id", "address1", "address2", "city", "state", "country", "zip"],
        "modify_pending_order_items": ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
        "modify_pending_order_payment": ["order_id", "payment_method_id"],
        "modify_user_address": ["user_id", "address1", "address2", "city", "state", "country", "zip"],
        "return_delivered_order_items": ["order_id", "item_ids", "payment_method_id"],
        "exchange_delivered_order_items": ["order_id", "item_ids", "new_item_ids", "payment_method_id"],
        "transfer_to_human_agents": ["summary"],
    }
    assert {s.name: list(s.arguments_model.model_fields) for s in tools} == expected
