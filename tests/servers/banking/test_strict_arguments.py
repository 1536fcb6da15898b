"""The SDK would ignore unknown keys and coerce "5" to 5 or true to 1; shiftbox servers reject them.

`CASES` are sent by tests/servers/test_every_domain.py (field named, state unchanged)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

CASES = [
    ("extra key", "get_account", {"account_id": "acc_a1", "verbose": True}, "verbose"),
    ("string for integer", "get_statements", {"account_id": "acc_a1", "limit": "5"}, "limit"),
    ("true for integer", "get_statements", {"account_id": "acc_a1", "limit": True}, "limit"),
    ("float for integer", "get_statements", {"account_id": "acc_a1", "limit": 2.5}, "limit"),
    ("missing field", "get_account", {}, "account_id"),
    ("number for string", "get_account", {"account_id": 17}, "account_id"),
    ("list for string", "get_customer_by_id", {"customer_id": ["cust_a"]}, "customer_id"),
    ("object for number", "create_payment_request",
     {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1", "amount": {"usd": 5}},
     "amount"),
    ("string for number", "create_payment_request",
     {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1", "amount": "5.00"},
     "amount"),
    ("out of range", "get_transactions", {"account_id": "acc_a1", "limit": 501}, "limit"),
    ("empty string", "get_account", {"account_id": ""}, "account_id"),
    ("unknown enum value", "add_payee", {"customer_id": "cust_a", "name": "X", "deliver_type": "pigeon"},
     "deliver_type"),
    ("whitespace-only payee name", "add_payee", {"customer_id": "cust_a", "name": "   "}, "name"),
    ("whitespace-only id", "get_account", {"account_id": " \t "}, "account_id"),
    ("whitespace-only optional text", "lock_card", {"card_id": "card_b1", "reason": "  "}, "reason"),
    ("whitespace-only name lookup", "get_customer_by_name", {"full_name": "\n", "dob": "1990-01-02"}, "full_name"),
    ("whitespace-only phone number", "get_customer_by_phone", {"phone_number": "         "}, "phone_number"),
    ("whitespace-only task name", "park_task", {"current_task_id": "  "}, "current_task_id"),
    ("lone surrogate", "add_payee", {"customer_id": "cust_a", "name": "Bob \ud83d"}, "name"),
    ("lone surrogate in an id", "get_account", {"account_id": "acc_\udc00"}, "account_id"),
]


async def test_read_only_annotations_match_behaviour(bank):
    listed = {t.name: t for t in (await bank.list_tools()).tools}
    assert listed["get_transactions"].annotations.read_only_hint is True
    assert listed["make_payment"].annotations.read_only_hint is False
    assert listed["make_payment"].annotations.destructive_hint is True
    assert listed["lock_card"].annotations.idempotent_hint is True
