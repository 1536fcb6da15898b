"""An episode at its size limit, and the digest of a large episode (issue 30, low items).

An episode's database may grow only so far (`GROWTH_BYTES` beyond the snapshot; SQLite's own limit in copy mode):
a write past it is the `capacity` error kind, never `internal`, and changes nothing. Reading a large episode's
digest must not hold up the other episodes the server is serving.
"""

from __future__ import annotations

import json
import sqlite3
import time

import anyio
import pytest

from shiftbox_servers.kit import (
    EPISODE_META_KEY,
    STATE_DIGEST_URI,
    DomainServer,
    ErrorKind,
    get_domain,
    result_error,
)
from tests.servers.banking.conftest import write_fixture_snapshot
from tests.servers.kit.test_invalid_requests import modern_post


def test_a_write_past_the_episodes_size_limit_is_a_capacity_error_and_changes_nothing(tmp_path):
    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    episode = server.episodes.get("full")
    pages = episode.db.execute("PRAGMA page_count").fetchone()[0]
    episode.db.execute(f"PRAGMA max_page_count = {pages}")  # the episode's database may not grow by one page
    for i in range(100_000):  # fill the free space left in its pages, as earlier writes would have
        try:
            episode.execute("INSERT INTO payees VALUES (?, 'cust_a', ?, 'electronic', 1)", (f"fill_{i}", f"Fill {i}"))
        except sqlite3.OperationalError:
            break
    payees = "SELECT count(*) FROM payees"
    before = (episode.db.execute(payees).fetchone(), episode.now_iso())
    failed = server.run_tool(server.tools.specs["add_payee"], "full", {"customer_id": "cust_a", "name": "One more"})
    assert failed["isError"], "the episode never reached its size limit"
    error = result_error(failed)
    assert error["kind"] == ErrorKind.CAPACITY == "capacity", error
    assert "size limit" in error["message"]
    after = (episode.db.execute(payees).fetchone(), episode.now_iso())
    assert after == before, "the failed call changed the episode (its rows or its clock)"
    other = server.run_tool(server.tools.specs["get_customer_by_phone"], "full", {"phone_number": "+15550000000"})
    assert result_error(other) is None or result_error(other)["kind"] != "capacity"  # reads still work


LARGE = 30_000  # rows written, as in the issue (whose digest stalled every other episode for 2.5 s)


def digest_read(episode: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                       "params": {"uri": STATE_DIGEST_URI, "_meta": {EPISODE_META_KEY: episode}}},
                      separators=(",", ":")).encode()


CHEAP_CALL = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "get_customer_by_phone", "arguments": {"phone_number": "+15550000000"}}}, separators=(",", ":")).encode()


@pytest.mark.anyio
async def test_a_large_episodes_digest_does_not_hold_up_other_episodes(banking_http):
    server, _, client = banking_http
    big = server.episodes.get("big")
    with big.atomic():  # LARGE writes, each logged as a tool call's would be
        big.db.executemany("INSERT INTO payees VALUES (?, 'cust_a', ?, 'electronic', 1)",
                           [(f"pay_big_{i:05d}", f"Payee {i}") for i in range(LARGE)])
    start = time.perf_counter()
    expected = big.digest()
    digest_s = time.perf_counter() - start  # what the read costs, computed in place
    done: dict[str, float] = {}

    async def read_digest() -> None:
        answer = await modern_post(client, "/mcp", digest_read("big"))
        assert json.loads(answer.json()["result"]["contents"][0]["text"])["digest"] == expected, answer.text
        done["digest"] = time.perf_counter() - start

    async def call_elsewhere() -> None:
        await anyio.sleep(digest_s / 10)  # the digest is being computed
        answer = await modern_post(client, "/episodes/small/mcp", CHEAP_CALL)
        assert "result" in answer.json(), answer.text
        done["call"] = time.perf_counter() - start - digest_s / 10

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(read_digest)
        tg.start_soon(call_elsewhere)
    # the other episode's call was answered while the digest was being computed, not after it
    assert done["call"] < done["digest"], (done, digest_s)
    assert done["call"] < digest_s / 4, (done, digest_s)
