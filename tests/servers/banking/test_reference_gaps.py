"""Gaps found by replaying real agents' calls against the reference (issue 16): customer records carry every
id the reference lists, date-times take every RFC 3339 form, name lookups return every match, payees added
by the agent are verified, and the AgentChangeBench-parity tool set offers log_shift_event."""

from __future__ import annotations

import pytest
from mcp import Client

from shiftbox_servers.banking import CLOCK_START, DOMAIN, new_database
from shiftbox_servers.kit import DomainServer
from tests.servers.banking.conftest import (
    ACCOUNTS,
    CARDS,
    CUSTOMERS,
    DISPUTES,
    PAYEES,
    PAYMENT_REQUESTS,
    STATEMENTS,
    TRANSACTIONS,
)
from tests.servers.helpers import digest, fails, fixture_snapshot, ok

pytestmark = pytest.mark.anyio


# -- customer records --------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "args"), [
    ("get_customer_by_id", {"customer_id": "cust_a"}),
    ("get_customer_by_phone", {"phone_number": "555-000-1111"}),
])
async def test_customer_record_lists_statements_payment_requests_and_disputes(bank, tool, args):
    c = await ok(bank, tool, args)
    assert c["statement_ids"] == ["stmt_1", "stmt_2", "stmt_3"]
    assert c["payment_request_ids"] == ["req_a0"]
    assert c["dispute_ids"] == ["disp_1"]
    b = await ok(bank, "get_customer_by_id", {"customer_id": "cust_b"})
    assert (b["statement_ids"], b["payment_request_ids"], b["dispute_ids"]) == ([], ["req_b1"], [])


async def test_customer_record_has_the_reference_field_order(bank):
    c = await ok(bank, "get_customer_by_id", {"customer_id": "cust_a"})
    assert list(c) == ["customer_id", "full_name", "date_of_birth", "email", "phone_number", "address",
                       "created_at", "account_ids", "card_ids", "statement_ids", "payment_request_ids",
                       "dispute_ids", "payee_ids"]


async def test_ids_created_in_the_episode_appear_in_the_customer_record(bank):
    """The pending request an agent must pay is discoverable from the record, not from a conflict message."""
    req = await ok(bank, "create_payment_request", {"customer_id": "cust_a", "from_account_id": "acc_a1",
                                                     "to_payee_id": "payee_a1", "amount": 5.0}, episode="ids")
    dispute = await ok(bank, "file_dispute", {"account_id": "acc_a1", "tx_id": "tx_2",
                                              "reason_code": "unauthorized"}, episode="ids")
    c = await ok(bank, "get_customer_by_id", {"customer_id": "cust_a"}, episode="ids")
    assert req["request_id"] in c["payment_request_ids"]
    assert dispute["dispute_id"] in c["dispute_ids"]


# -- date-time arguments -------------------------------------------------------------------------------

# tx_2 is at 2025-06-15T12:00:00 (snapshot time, UTC)
@pytest.mark.parametrize(("start", "end", "expected"), [
    ("2025-06-15T12:00:00Z", "2025-06-15T12:00:00Z", ["tx_2"]),
    ("2025-06-15t12:00:00z", "2025-06-15t12:00:00z", ["tx_2"]),
    ("2025-06-15T14:00:00+02:00", "2025-06-15T14:00:00+02:00", ["tx_2"]),
    ("2025-06-15T07:00:00-05:00", "2025-06-15T07:00:00-05:00", ["tx_2"]),
    ("2025-06-15T11:59:59.999Z", "2025-06-15T12:00:00.000001Z", ["tx_2"]),
    ("2025-06-15T12:00:00.5Z", "2025-06-20T00:00:00Z", []),
    ("2025-06-15 12:00:00+00:00", "2025-06-15 12:00:00+00:00", ["tx_2"]),
    ("2025-06-15T12:00Z", "2025-06-15T12:00Z", ["tx_2"]),
    ("2025-06-14T23:00:00-13:00", "2025-06-15T12:00:00Z", ["tx_2"]),
    ("2025-06-01", "2025-06-15T12:00:00Z", ["tx_2", "tx_1"]),
])
async def test_get_transactions_accepts_rfc3339_date_times(bank, start, end, expected):
    res = await ok(bank, "get_transactions", {"account_id": "acc_a1", "start_time": start, "end_time": end})
    assert [t["tx_id"] for t in res["transactions"]] == expected


@pytest.mark.parametrize("bad", ["2025-06-15T12:00:00+25:00", "2025-06-15T24:30:00Z", "2025-06-15Z",
                                 "2025-06-15T12", "2025-06-15T12:00:00 Z", "yesterday"])
async def test_get_transactions_still_rejects_malformed_date_times(bank, bad):
    await fails(bank, "get_transactions", {"account_id": "acc_a1", "start_time": bad}, "invalid_arguments")


async def test_create_payment_request_expires_at_with_offset(bank):
    # the episode clock is at 2025-07-01T09:01:00 for the first write: 10:00+02:00 is 08:00 UTC, in the past
    base = {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1", "amount": 10.0}
    await fails(bank, "create_payment_request", {**base, "expires_at": "2025-07-01T10:00:00+02:00"},
                "invalid_arguments", episode="exp")
    req = await ok(bank, "create_payment_request", {**base, "expires_at": "2025-07-01T05:30:00.25-04:00"},
                   episode="exp")
    assert req["expires_at"] == "2025-07-01T09:30:00.250000"


# -- name lookups return every match ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def twins_snapshot(tmp_path_factory):
    twin = ("cust_c", "Ana Lopez", "1990-01-02", "ana2@example.com", "+15550003333", "9 Elm St", "Austin",
            "TX", "73301", "2024-03-01T00:00:00")
    tables = [("customers", [*CUSTOMERS, twin]), ("accounts", ACCOUNTS), ("cards", CARDS),
              ("statements", STATEMENTS), ("transactions", TRANSACTIONS), ("payees", PAYEES),
              ("payment_requests", PAYMENT_REQUESTS), ("disputes", DISPUTES)]
    return fixture_snapshot(new_database(), tmp_path_factory.mktemp("twins"), domain="banking",
                            clock_start=CLOCK_START, tables=tables)


async def test_get_customer_by_name_returns_every_customer_sharing_name_and_birth_date(twins_snapshot):
    async with Client(DomainServer(DOMAIN, twins_snapshot).mcp) as client:
        res = await ok(client, "get_customer_by_name", {"full_name": "ana lopez", "dob": "1990-01-02"})
        assert [c["customer_id"] for c in res["customers"]] == ["cust_a", "cust_c"]
        assert res["customers"][1]["email"] == "ana2@example.com"


async def test_get_customer_by_name_without_match_is_an_empty_list(bank):
    res = await ok(bank, "get_customer_by_name", {"full_name": "Ana Lopez", "dob": "1990-01-03"})
    assert res == {"customers": []}
    res = await ok(bank, "get_customer_by_name", {"full_name": "Ben Okafor", "dob": "1985-05-05"})
    assert [c["customer_id"] for c in res["customers"]] == ["cust_b"]


# -- payees ------------------------------------------------------------------------------------------------


async def test_add_payee_creates_a_verified_payee(bank):
    p = await ok(bank, "add_payee", {"customer_id": "cust_b", "name": "Gas Co"}, episode="payee")
    assert p["verified"] is True


# -- the AgentChangeBench-parity tool set ----------------------------------------------------------------


SHIFT_EVENT = {"turn_no": 5, "from_class": "TransactionResolver", "to_class": "SecurityEducator",
               "trigger_terms": ["secure my account"], "requires_reauth": False}


async def test_default_tool_set_has_no_log_shift_event(bank):
    names = [t.name for t in (await bank.list_tools()).tools]
    assert "log_shift_event" not in names and len(names) == 20
    await fails(bank, "log_shift_event", SHIFT_EVENT, "unknown_tool")


REFERENCE_TOOLS = [  # AgentChangeBench's BankingTools, in its order
    "get_customer_by_id", "get_customer_by_phone", "get_customer_by_name", "get_accounts", "get_account",
    "get_statements", "get_transactions", "add_payee", "create_payment_request", "check_payment_request",
    "authorize_payment_request", "make_payment", "cancel_payment_request", "lock_card", "unlock_card",
    "file_dispute", "get_dispute", "log_shift_event", "park_task", "resume_task", "transfer_to_human_agents",
]


async def test_agentchangebench_tool_set_logs_shift_events_without_changing_state(banking_snapshot):
    server = DomainServer(DOMAIN, banking_snapshot, toolset="agentchangebench")
    async with Client(server.mcp) as client:
        listed = (await client.list_tools()).tools
        names = [t.name for t in listed]
        assert names == REFERENCE_TOOLS
        before = await digest(client, "shift")
        first = await ok(client, "log_shift_event", SHIFT_EVENT, episode="shift")
        second = await ok(client, "log_shift_event", {**SHIFT_EVENT, "turn_no": 9}, episode="shift")
        assert (first["logged"], first["count"], second["count"]) == (True, 1, 2)
        assert await digest(client, "shift") == before       # instrumentation, not state
        other = await ok(client, "log_shift_event", SHIFT_EVENT, episode="other")
        assert other["count"] == 1                              # counted per episode
        await fails(client, "log_shift_event", {**SHIFT_EVENT, "turn_no": "5"}, "invalid_arguments", episode="x")
        await fails(client, "log_shift_event", {**SHIFT_EVENT, "trigger_terms": "fraud"}, "invalid_arguments",
                    episode="x")


def test_unknown_tool_set_is_refused_with_the_choices(banking_snapshot):
    with pytest.raises(KeyError, match="agentchangebench"):
        DomainServer(DOMAIN, banking_snapshot, toolset="nope")


def test_shiftbox_server_takes_a_toolset_option():
    from shiftbox_servers.kit.cli import build_parser

    args = build_parser().parse_args(["banking", "--toolset", "agentchangebench"])
    assert args.toolset == "agentchangebench"
    assert build_parser().parse_args(["banking"]).toolset == "default"


def test_the_package_name_of_the_reference_tool_set_is_the_one_the_domain_serves():
    from shiftbox_servers import banking

    assert banking.reference_tools is DOMAIN.toolset("agentchangebench") is DOMAIN.toolsets["agentchangebench"]
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        banking.nothing_here  # noqa: B018
