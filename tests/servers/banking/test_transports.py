"""The banking server over every transport: in-memory, stdio subprocess, streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import sys
import urllib.request

import anyio
import pytest
from mcp import Client

from shiftbox_servers.kit import http_server_process
from tests.servers.helpers import fails, ok

pytestmark = pytest.mark.anyio


async def test_in_memory(bank):
    c = await ok(bank, "get_customer_by_phone", {"phone_number": "555-000-2222"})
    assert c["customer_id"] == "cust_b"


async def test_http_concurrent_episodes_are_isolated(banking_snapshot):
    async with http_server_process("banking", banking_snapshot.directory) as base:
        async with Client(f"{base}/episodes/one/mcp") as one, Client(f"{base}/episodes/two/mcp") as two:
            results = {}

            async def write_in_one():
                results["dispute"] = await ok(one, "file_dispute", {"account_id": "acc_a1", "tx_id": "tx_2",
                                                                    "reason_code": "unauthorized"})

            async def read_in_two():
                results["two_before"] = await ok(two, "get_transactions", {"account_id": "acc_a1"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(write_in_one)
                tg.start_soon(read_in_two)
            two_after = await ok(two, "get_transactions", {"account_id": "acc_a1"})
            one_after = await ok(one, "get_transactions", {"account_id": "acc_a1"})
            status = lambda res: {t["tx_id"]: t["status"] for t in res["transactions"]}["tx_2"]  # noqa: E731
            assert status(one_after) == "Disputed"
            assert status(two_after) == "Posted" and status(results["two_before"]) == "Posted"
            await fails(two, "get_dispute", {"dispute_id": results["dispute"]["dispute_id"]}, "not_found")

        health = json.loads(urllib.request.urlopen(base + "/healthz").read())
        assert health["episodes"] == 2 and health["sha256"] == banking_snapshot.manifest.sha256
        assert health["rss_bytes"] > 10_000_000   # the resident memory of a Python server process
        req = urllib.request.Request(base + "/episodes/one", method="DELETE")
        assert json.loads(urllib.request.urlopen(req).read()) == {"dropped": True}


async def test_http_legacy_clients_get_one_episode_per_session(banking_snapshot):
    async with http_server_process("banking", banking_snapshot.directory) as base:
        async with Client(f"{base}/mcp", mode="legacy") as a, Client(f"{base}/mcp", mode="legacy") as b:
            dispute = {"account_id": "acc_a1", "tx_id": "tx_2", "reason_code": "unauthorized"}
            await ok(a, "file_dispute", dispute)
            await fails(a, "file_dispute", dispute, "conflict")
            # had the two sessions shared one database, this would be a conflict too
            await ok(b, "file_dispute", dispute)


def test_server_refuses_missing_snapshot_with_clear_message(tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "shiftbox_servers", "banking", "--snapshot", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "is not a snapshot" in proc.stderr and "shiftbox snapshots build" in proc.stderr


def test_server_refuses_unknown_domain():
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "shiftbox_servers", "bankking"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "unknown domain 'bankking'" in proc.stderr and "banking" in proc.stderr
