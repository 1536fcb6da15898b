"""`shiftbox demo`: a short scripted goal-shift session against the banking server over stdio.

It shows what the sandbox gives a harness: format-tolerant lookups, strict argument errors with a
kind, a working dispute, and the episode's state diff. (The full offline evaluation replaces this
once the harness lands.)
"""

from __future__ import annotations

import json
import sys
import time

import anyio
from mcp import Client, StdioServerParameters
from rich.console import Console
from rich.table import Table

from shiftbox_servers.kit import STATE_DIFF_URI, Snapshot, get_domain

SCRIPT_GOALS = ["authentication", "transactions", "dispute", "cards"]


async def run_demo(console: Console) -> int:
    snapshot = Snapshot.load(get_domain("banking").default_snapshot_dir())
    db = snapshot.open_copy()
    phone, customer_id = db.execute(
        "SELECT c.phone_number, c.customer_id FROM customers c JOIN accounts a USING (customer_id) "
        "JOIN transactions t USING (account_id) WHERE t.reference = 'SUSPICIOUS_CHARGE' "
        "AND t.status = 'Posted' ORDER BY c.customer_id LIMIT 1").fetchone()
    spoken = f"{phone[2:5]}-{phone[5:8]}-{phone[8:]}"  # how a user says it, not E.164
    params = StdioServerParameters(command=sys.executable, args=["-m", "shiftbox_servers", "banking"])
    table = Table("goal", "tool", "arguments", "result", title="scripted banking session (stdio)")
    start = time.perf_counter()
    async with Client(params) as client:
        info = client.server_info
        console.print(f"server {info.name} {info.version}; {info.description}")

        async def step(goal: str, tool: str, args: dict) -> dict:
            result = await client.call_tool(tool, args)
            data = result.structured_content or {}
            shown = (f"[red]{data['error']['kind']}[/]: {data['error']['message'][:60]}" if result.is_error
                     else json.dumps(data)[:70])
            table.add_row(goal, tool, json.dumps(args)[:50], shown)
            return data

        customer = await step("authentication", "get_customer_by_phone", {"phone_number": spoken})
        account_id = customer["account_ids"][0]
        await step("transactions", "get_transactions", {"account_id": account_id, "limit": "5"})
        txs = await step("transactions", "get_transactions", {"account_id": account_id, "limit": 50})
        suspicious = next(t for t in txs["transactions"] if t["reference"] == "SUSPICIOUS_CHARGE")
        await step("dispute", "file_dispute", {"account_id": suspicious["account_id"], "tx_id": suspicious["tx_id"],
                                               "reason_code": "unauthorized"})
        await step("dispute", "file_dispute", {"account_id": suspicious["account_id"], "tx_id": suspicious["tx_id"],
                                               "reason_code": "unauthorized"})
        if customer["card_ids"]:
            await step("cards", "lock_card", {"card_id": customer["card_ids"][0], "reason": "suspected fraud"})
        diff = json.loads((await client.read_resource(STATE_DIFF_URI)).contents[0].text)
    console.print(table)
    changed = {t: {k: len(v) for k, v in d.items() if v} for t, d in diff.items()}
    console.print(f"customer {customer_id}; state diff against the snapshot: {changed}")
    console.print(f"done in {time.perf_counter() - start:.2f}s")
    return 0


def demo() -> None:
    """Run a short scripted banking session over stdio and show results and the state diff."""
    raise SystemExit(anyio.run(run_demo, Console()))
