"""The banking server in memory, to legacy HTTP clients, and refusing what it cannot serve (stdio and\nisolated HTTP episodes for every domain: tests/servers/test_every_domain.py)."""

from __future__ import annotations

import sys

import pytest
from mcp import Client

from shiftbox_servers.kit import http_server_process
from tests.servers.helpers import fails, ok

pytestmark = pytest.mark.anyio


async def test_in_memory(bank):
    c = await ok(bank, "get_customer_by_phone", {"phone_number": "555-000-2222"})
    assert c["customer_id"] == "cust_b"


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
