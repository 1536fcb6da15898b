"""Behaviour of every banking tool and every error path, through a real MCP client."""

from __future__ import annotations

import pytest

from shiftbox_servers.kit import result_error
from tests.servers.helpers import call, digest, fails, ok

pytestmark = pytest.mark.anyio


# -- customers ---------------------------------------------------------------------------------


async def test_get_customer_by_id_returns_profile_and_owned_ids(bank):
    c = await ok(bank, "get_customer_by_id", {"customer_id": "cust_a"})
    assert c["full_name"] == "Ana Lopez"
    assert c["address"] == {"street": "1 Main St", "city": "Austin", "state": "TX", "postal_code": "73301"}
    assert c["account_ids"] == ["acc_a1", "acc_a2", "acc_a3"]
    assert c["card_ids"] == ["card_a1", "card_a2", "card_a3"]
    assert c["payee_ids"] == ["payee_a1"]


async def test_get_customer_by_id_unknown_is_not_found(bank):
    err = await fails(bank, "get_customer_by_id", {"customer_id": "cust_zzz"}, "not_found")
    assert "cust_zzz" in err["message"]


@pytest.mark.parametrize("phone", ["555-000-1111", "+1 (555) 000-1111", "+15550001111", "(555) 000 1111",
                                   "1-555-000-1111", "555.000.1111"])
async def test_get_customer_by_phone_accepts_common_formats(bank, phone):
    c = await ok(bank, "get_customer_by_phone", {"phone_number": phone})
    assert c["customer_id"] == "cust_a"


async def test_get_customer_by_phone_errors(bank):
    await fails(bank, "get_customer_by_phone", {"phone_number": "555-999-0000"}, "not_found")
    err = await fails(bank, "get_customer_by_phone", {"phone_number": "not a phone"}, "invalid_arguments")
    assert "phone" in err["message"]


async def test_get_customer_by_name_is_case_insensitive_and_needs_dob(bank):
    res = await ok(bank, "get_customer_by_name", {"full_name": "ana LOPEZ", "dob": "1990-01-02"})
    assert [c["customer_id"] for c in res["customers"]] == ["cust_a"]
    # a search: nobody matching is an empty list (docs/servers.md, lookups and searches)
    assert await ok(bank, "get_customer_by_name", {"full_name": "Ana Lopez", "dob": "1990-01-03"}) == {"customers": []}
    await fails(bank, "get_customer_by_name", {"full_name": "Ana Lopez", "dob": "02/01/1990"}, "invalid_arguments")
    await fails(bank, "get_customer_by_name", {"full_name": "Ana Lopez", "dob": "1990-02-30"}, "invalid_arguments")


# -- accounts, statements, transactions ----------------------------------------------------------


async def test_get_accounts_lists_owned_accounts(bank):
    res = await ok(bank, "get_accounts", {"customer_id": "cust_a"})
    assert [a["account_id"] for a in res["accounts"]] == ["acc_a1", "acc_a2", "acc_a3"]
    assert res["accounts"][2]["is_business"] is True and res["accounts"][2]["status"] == "Frozen"
    await fails(bank, "get_accounts", {"customer_id": "nobody"}, "not_found")


async def test_get_account(bank):
    a = await ok(bank, "get_account", {"account_id": "acc_a1"})
    assert (a["current_balance"], a["available_balance"]) == (1000.00, 950.00)
    await fails(bank, "get_account", {"account_id": "acc_x"}, "not_found")


async def test_get_statements_newest_first_with_limit(bank):
    res = await ok(bank, "get_statements", {"account_id": "acc_a1"})
    assert [s["statement_id"] for s in res["statements"]] == ["stmt_3", "stmt_2", "stmt_1"]
    res = await ok(bank, "get_statements", {"account_id": "acc_a1", "limit": 1})
    assert [s["statement_id"] for s in res["statements"]] == ["stmt_3"]
    await fails(bank, "get_statements", {"account_id": "acc_x"}, "not_found")
    await fails(bank, "get_statements", {"account_id": "acc_a1", "limit": 0}, "invalid_arguments")


async def test_get_transactions_newest_first_and_time_window(bank):
    res = await ok(bank, "get_transactions", {"account_id": "acc_a1"})
    assert [t["tx_id"] for t in res["transactions"]] == ["tx_5", "tx_4", "tx_3", "tx_2", "tx_1"]
    assert res["truncated"] is False
    # date-only end_time includes the whole day; start_time may be a datetime
    res = await ok(bank, "get_transactions",
                   {"account_id": "acc_a1", "start_time": "2025-06-15T00:00:00", "end_time": "2025-06-20"})
    assert [t["tx_id"] for t in res["transactions"]] == ["tx_3", "tx_2"]
    res = await ok(bank, "get_transactions", {"account_id": "acc_a1", "limit": 2})
    assert [t["tx_id"] for t in res["transactions"]] == ["tx_5", "tx_4"] and res["truncated"] is True


async def test_get_transactions_errors(bank):
    await fails(bank, "get_transactions", {"account_id": "acc_x"}, "not_found")
    await fails(bank, "get_transactions", {"account_id": "acc_a1", "start_time": "yesterday"}, "invalid_arguments")
    err = await fails(bank, "get_transactions",
                      {"account_id": "acc_a1", "start_time": "2025-06-20", "end_time": "2025-06-01"},
                      "invalid_arguments")
    assert "after" in err["message"]


# -- payees and payments -----------------------------------------------------------------------


async def test_add_payee_generates_counter_id_and_rejects_duplicates(bank):
    p = await ok(bank, "add_payee", {"customer_id": "cust_a", "name": "Gas  Co", "deliver_type": "check"})
    assert p == {"payee_id": "payee_000001", "customer_id": "cust_a", "name": "Gas Co",
                 "deliver_type": "check", "verified": True}
    await fails(bank, "add_payee", {"customer_id": "cust_a", "name": "gas co"}, "conflict")
    await fails(bank, "add_payee", {"customer_id": "nobody", "name": "X"}, "not_found")
    await fails(bank, "add_payee", {"customer_id": "cust_a", "name": "X", "deliver_type": "wire"},
                "invalid_arguments")


async def test_full_payment_flow_debits_balances_and_settles(bank):
    req = await ok(bank, "create_payment_request", {"customer_id": "cust_a", "from_account_id": "acc_a1",
                                                     "to_payee_id": "payee_a1", "amount": 65.5})
    assert req["status"] == "Awaiting Payment" and req["request_id"] == "req_000001"
    # clock: snapshot starts 09:00 and moves one minute per write; this is the first write
    assert req["created_at"] == "2025-07-01T09:01:00"
    await fails(bank, "make_payment", {"request_id": req["request_id"]}, "precondition_failed")
    auth = await ok(bank, "authorize_payment_request", {"request_id": req["request_id"]})
    assert auth["status"] == "Authorized"
    again = await ok(bank, "authorize_payment_request", {"request_id": req["request_id"]})
    assert again["status"] == "Authorized"
    paid = await ok(bank, "make_payment", {"request_id": req["request_id"]})  # the third write (09:03):
    # the refused make_payment and the repeated authorize changed nothing, so they did not move the clock
    # new ids continue after the highest numeric id of that prefix: the fixture holds tx_1 … tx_5
    assert paid["status"] == "Settled" and paid["settled_tx_id"] == "tx_000006"
    acct = await ok(bank, "get_account", {"account_id": "acc_a1"})
    assert acct["current_balance"] == 1000.00 - 65.50 and acct["available_balance"] == 950.00 - 65.50
    txs = await ok(bank, "get_transactions", {"account_id": "acc_a1", "limit": 1})
    assert txs["transactions"][0] == {
        "tx_id": "tx_000006", "account_id": "acc_a1", "timestamp": "2025-07-01T09:03:00", "type": "billpay",
        "amount": -65.5, "merchant_or_payee": "Electric Co", "status": "Posted", "reference": "req_000001"}
    await fails(bank, "cancel_payment_request", {"request_id": req["request_id"]}, "precondition_failed")


async def test_make_payment_with_insufficient_funds_fails_the_request_without_debit(bank):
    res = await ok(bank, "make_payment", {"request_id": "req_b1"})
    assert res["status"] == "Failed" and "insufficient" in res["failure_reason"]
    acct = await ok(bank, "get_account", {"account_id": "acc_b1"})
    assert acct["current_balance"] == 20.00
    # canceling a failed request is idempotent
    again = await ok(bank, "cancel_payment_request", {"request_id": "req_b1"})
    assert again["status"] == "Failed"


async def test_create_payment_request_preconditions(bank):
    base = {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1", "amount": 10.0}
    await fails(bank, "create_payment_request", {**base, "from_account_id": "acc_b1"}, "precondition_failed")
    await fails(bank, "create_payment_request", {**base, "from_account_id": "acc_a3"}, "precondition_failed")
    await fails(bank, "create_payment_request", {**base, "to_payee_id": "payee_b1"}, "precondition_failed")
    await fails(bank, "create_payment_request", {**base, "to_payee_id": "payee_zz"}, "not_found")
    await fails(bank, "create_payment_request", {**base, "amount": 0}, "invalid_arguments")
    await fails(bank, "create_payment_request", {**base, "amount": -5.0}, "invalid_arguments")
    await fails(bank, "create_payment_request", {**base, "amount": 1.005}, "invalid_arguments")
    await fails(bank, "create_payment_request", {**base, "expires_at": "2025-06-01"}, "invalid_arguments")
    await ok(bank, "create_payment_request", base)
    err = await fails(bank, "create_payment_request", base, "conflict")
    assert "req_000001" in err["message"]


async def test_payment_request_expires_on_the_episode_clock(bank):
    req = await ok(bank, "create_payment_request", {"customer_id": "cust_a", "from_account_id": "acc_a1",
                                                     "to_payee_id": "payee_a1", "amount": 10.0,
                                                     "expires_at": "2025-07-01T09:03:00"})
    assert req["status"] == "Awaiting Payment"                       # written at 09:01
    await ok(bank, "get_account", {"account_id": "acc_a1"})          # reads see the next write's time, 09:02
    assert (await ok(bank, "check_payment_request", {"request_id": req["request_id"]}))["status"] == "Awaiting Payment"
    await ok(bank, "lock_card", {"card_id": "card_a1"})              # a write: 09:02; time moves with writes only
    expired = await ok(bank, "check_payment_request", {"request_id": req["request_id"]})  # 09:03
    assert expired["status"] == "Expired"
    await fails(bank, "authorize_payment_request", {"request_id": req["request_id"]}, "precondition_failed")


async def test_cancel_and_check_payment_request(bank):
    req = await ok(bank, "create_payment_request", {"customer_id": "cust_a", "from_account_id": "acc_a1",
                                                     "to_payee_id": "payee_a1", "amount": 10.0})
    canceled = await ok(bank, "cancel_payment_request", {"request_id": req["request_id"]})
    assert canceled["status"] == "Canceled"
    assert (await ok(bank, "check_payment_request", {"request_id": req["request_id"]}))["status"] == "Canceled"
    await fails(bank, "check_payment_request", {"request_id": "req_zz"}, "not_found")
    await fails(bank, "authorize_payment_request", {"request_id": "req_zz"}, "not_found")
    await fails(bank, "cancel_payment_request", {"request_id": "req_zz"}, "not_found")
    await fails(bank, "make_payment", {"request_id": "req_zz"}, "not_found")


# -- cards -------------------------------------------------------------------------------------


async def test_lock_and_unlock_card_are_idempotent(bank):
    locked = await ok(bank, "lock_card", {"card_id": "card_a1", "reason": "lost"})
    assert (locked["status"], locked["lock_reason"]) == ("Locked", "lost")
    assert (await ok(bank, "lock_card", {"card_id": "card_a1"}))["lock_reason"] == "lost"
    unlocked = await ok(bank, "unlock_card", {"card_id": "card_a1"})
    assert (unlocked["status"], unlocked["lock_reason"]) == ("Active", None)
    assert (await ok(bank, "unlock_card", {"card_id": "card_a1"}))["status"] == "Active"


async def test_card_errors(bank):
    await fails(bank, "lock_card", {"card_id": "card_zz"}, "not_found")
    await fails(bank, "unlock_card", {"card_id": "card_zz"}, "not_found")
    await fails(bank, "lock_card", {"card_id": "card_a3"}, "precondition_failed")
    await fails(bank, "unlock_card", {"card_id": "card_a3"}, "precondition_failed")


# -- disputes ----------------------------------------------------------------------------------


async def test_file_dispute_creates_dispute_and_marks_transaction(bank):
    d = await ok(bank, "file_dispute", {"account_id": "acc_a1", "tx_id": "tx_2", "reason_code": "unauthorized"})
    # the fixture holds disp_1, so the first generated dispute id is disp_000002
    assert d == {"dispute_id": "disp_000002", "account_id": "acc_a1", "tx_id": "tx_2",
                 "reason_code": "unauthorized", "status": "Submitted", "opened_at": "2025-07-01T09:01:00"}
    assert await ok(bank, "get_dispute", {"dispute_id": "disp_000002"}) == d
    txs = await ok(bank, "get_transactions", {"account_id": "acc_a1"})
    assert {t["tx_id"]: t["status"] for t in txs["transactions"]}["tx_2"] == "Disputed"
    await fails(bank, "file_dispute", {"account_id": "acc_a1", "tx_id": "tx_2", "reason_code": "fraudulent"},
                "conflict")


async def test_file_dispute_errors(bank):
    args = {"account_id": "acc_a1", "reason_code": "unauthorized"}
    await fails(bank, "file_dispute", {**args, "tx_id": "tx_zz"}, "not_found")
    await fails(bank, "file_dispute", {**args, "account_id": "acc_zz", "tx_id": "tx_2"}, "not_found")
    await fails(bank, "file_dispute", {**args, "tx_id": "tx_b1"}, "precondition_failed")   # other account
    await fails(bank, "file_dispute", {**args, "tx_id": "tx_5"}, "conflict")               # already disputed
    await fails(bank, "file_dispute", {**args, "tx_id": "tx_4"}, "precondition_failed")    # reversed
    await fails(bank, "file_dispute", {**args, "tx_id": "tx_3"}, "precondition_failed")    # a credit
    await fails(bank, "file_dispute", {**args, "tx_id": "tx_2", "reason_code": "bored"}, "invalid_arguments")
    await fails(bank, "get_dispute", {"dispute_id": "disp_zz"}, "not_found")


# -- bookkeeping -------------------------------------------------------------------------------


async def test_park_and_resume_task(bank):
    p = await ok(bank, "park_task", {"current_task_id": "dispute tx_2", "resume_hint": "needs reason"})
    assert (p["parked_task_id"], p["status"], p["parked_at"]) == ("park_000001", "Parked", "2025-07-01T09:01:00")
    r = await ok(bank, "resume_task", {"parked_task_id": "park_000001"})
    assert (r["status"], r["resumed_at"], r["resume_hint"]) == ("Resumed", "2025-07-01T09:02:00", "needs reason")
    await fails(bank, "resume_task", {"parked_task_id": "park_000001"}, "precondition_failed")
    await fails(bank, "resume_task", {"parked_task_id": "park_zz"}, "not_found")


async def test_transfer_to_human_agents_records_the_handoff(bank):
    t = await ok(bank, "transfer_to_human_agents", {"summary": "wants a fee waiver"})
    assert t["transfer_id"] == "xfer_000001" and t["summary"] == "wants a fee waiver"
    await fails(bank, "transfer_to_human_agents", {"summary": ""}, "invalid_arguments")


async def test_failed_call_changes_no_state(bank):
    before = await digest(bank)
    await fails(bank, "file_dispute", {"account_id": "acc_a1", "tx_id": "tx_5", "reason_code": "other"}, "conflict")
    await fails(bank, "create_payment_request", {"customer_id": "cust_a", "from_account_id": "acc_a3",
                                                 "to_payee_id": "payee_a1", "amount": 1.0}, "precondition_failed")
    assert await digest(bank) == before


async def test_every_tool_is_exercised_here():
    """Guard: a new banking tool must get behaviour tests in this file."""
    from pathlib import Path

    from shiftbox_servers.banking import parity_tools, tools

    source = Path(__file__).read_text() + Path(__file__).with_name("test_reference_gaps.py").read_text()
    untested = [s.name for s in (tools + parity_tools) if f'"{s.name}"' not in source]
    assert not untested, f"tools without behaviour tests: {untested}"
    assert len(tools) == 20 and len(parity_tools) == 1


async def test_call_helper_reports_kind_for_unknown_tool(bank):
    res = await call(bank, "customer_detailsrequest", {})
    assert res.is_error and result_error(res)["kind"] == "unknown_tool"


async def test_digest_depends_on_final_state_not_on_the_path(bank):
    """Regression: the digest hashed every row (120 ms on the native snapshot); it now comes from the change
    log, and must still be equal for equal states however they were reached."""
    from tests.servers.helpers import digest

    fresh = await digest(bank, "p0")
    # lock then unlock: net no change
    await ok(bank, "lock_card", {"card_id": "card_a1"}, episode="p1")
    await ok(bank, "unlock_card", {"card_id": "card_a1"}, episode="p1")
    assert await digest(bank, "p1") == fresh
    # same end state reached in different orders
    await ok(bank, "lock_card", {"card_id": "card_a1"}, episode="p2")
    await ok(bank, "lock_card", {"card_id": "card_b1"}, episode="p2")
    await ok(bank, "lock_card", {"card_id": "card_b1"}, episode="p3")
    await ok(bank, "lock_card", {"card_id": "card_a1"}, episode="p3")
    assert await digest(bank, "p2") == await digest(bank, "p3") != fresh


async def test_diff_lists_net_changes_only(bank):
    import json

    await ok(bank, "add_payee", {"customer_id": "cust_b", "name": "Gym"}, episode="d")
    await ok(bank, "lock_card", {"card_id": "card_b1", "reason": "lost"}, episode="d")
    await ok(bank, "unlock_card", {"card_id": "card_a2"}, episode="d")
    await ok(bank, "lock_card", {"card_id": "card_a2", "reason": "lost"}, episode="d")  # back to the original
    res = await bank.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "d"})
    diff = json.loads(res.contents[0].text)
    assert set(diff) == {"payees", "cards"}
    assert diff["payees"]["added"] == [{"payee_id": "payee_000001", "customer_id": "cust_b", "name": "Gym",
                                        "deliver_type": "electronic", "verified": 1}]
    assert diff["cards"]["changed"] == [{"key": ["card_b1"], "fields": {"status": ["Active", "Locked"],
                                                                          "lock_reason": [None, "lost"]}}]
