"""Issue 14, defect 1: banking state depends only on the writes. The same successful writes in the same
order end in the same digest however many reads, failed lookups and malformed calls come between them,
and every timestamp a write stores is clock_start plus its position among the writes."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.servers.banking.conftest import CLOCK_START
from tests.servers.helpers import digest, fails, ok

pytestmark = pytest.mark.anyio

MINUTE = timedelta(minutes=1)

REQUEST = {"customer_id": "cust_a", "from_account_id": "acc_a1", "to_payee_id": "payee_a1", "amount": 65.5}
WRITES = [  # (tool, arguments); the request id is the first one the episode generates
    ("create_payment_request", REQUEST),
    ("authorize_payment_request", {"request_id": "req_000001"}),
    ("make_payment", {"request_id": "req_000001"}),
    ("file_dispute", {"account_id": "acc_a1", "tx_id": "tx_1", "reason_code": "unauthorized"}),
    ("park_task", {"current_task_id": "billing question", "resume_hint": "check statement"}),
]


async def harmless(bank, episode: str) -> None:
    """Calls that must not change the state: reads, tool-level and schema-level rejections, a no-op write."""
    await ok(bank, "get_customer_by_id", {"customer_id": "cust_a"}, episode=episode)
    await ok(bank, "get_account", {"account_id": "acc_a1"}, episode=episode)
    await ok(bank, "get_transactions", {"account_id": "acc_a1", "limit": 3}, episode=episode)
    await fails(bank, "get_customer_by_id", {"customer_id": "cust_missing"}, "not_found", episode=episode)
    await fails(bank, "get_account", {"account_id": "acc_missing"}, "not_found", episode=episode)
    await fails(bank, "lock_card", {"card_id": "card_a3"}, "precondition_failed", episode=episode)
    await fails(bank, "get_account", {"account_id": "acc_a1", "note": "urgent"}, "invalid_arguments",
                episode=episode)
    await fails(bank, "create_payment_request", {**REQUEST, "amount": "65.5"}, "invalid_arguments", episode=episode)
    await ok(bank, "lock_card", {"card_id": "card_a2"}, episode=episode)  # already Locked: changes nothing


async def test_same_writes_with_harmless_calls_between_them_end_in_the_same_digest(bank):
    for tool, arguments in WRITES:
        await ok(bank, tool, arguments, episode="plain")
    for tool, arguments in WRITES:
        await harmless(bank, "noisy")
        if tool == "make_payment":  # paying twice: the second is refused (already Settled) and changes nothing
            await ok(bank, tool, arguments, episode="noisy")
            await fails(bank, tool, arguments, "precondition_failed", episode="noisy")
        else:
            await ok(bank, tool, arguments, episode="noisy")
        await harmless(bank, "noisy")
    assert await digest(bank, "noisy") == await digest(bank, "plain")


async def test_write_timestamps_differ_from_clock_start_only_by_the_write_count(bank, banking_snapshot):
    assert banking_snapshot.manifest.clock_start == CLOCK_START
    stamped = {}
    for tool, arguments in WRITES:
        await harmless(bank, "t")
        stamped[tool] = await ok(bank, tool, arguments, episode="t")
        await harmless(bank, "t")

    def at(n: int) -> str:
        return (CLOCK_START + n * MINUTE).isoformat()

    assert stamped["create_payment_request"]["created_at"] == at(1)
    assert stamped["file_dispute"]["opened_at"] == at(4)
    assert stamped["park_task"]["parked_at"] == at(5)
    res = await bank.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "t"})
    diff = json.loads(res.contents[0].text)
    (payment,) = [t for t in diff["transactions"]["added"] if t["reference"] == "req_000001"]
    assert payment["timestamp"] == at(3)                              # make_payment is the third write
    state = json.loads((await bank.read_resource("shiftbox://episode/digest",
                                                 meta={"shiftbox/episode": "t"})).contents[0].text)
    assert state["now"] == at(6)                                      # the next write's time
