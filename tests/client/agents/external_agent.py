"""A tiny external agent program for the harness's tests: `python external_agent.py MODE`.

Modes: `lookup` (narrates, looks the customer up over MCP at SHIFTBOX_MCP_URL, answers; stops the
user on the next message), `crash` (exits 3 after the first user message), `garbage` (prints a
non-protocol line), `hang` (never answers), `silent_exit` (exits 0 at once).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time


def say(content: str, final: bool = True) -> None:
    line = {"role": "assistant", "content": content}
    if not final:
        line["final"] = False
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def lookup(customer_id: str) -> None:
    from mcp import Client

    async with Client(os.environ["SHIFTBOX_MCP_URL"]) as client:
        for line in sys.stdin:
            if not line.strip():
                continue
            json.loads(line)
            say("Let me look that up.", final=False)
            result = await client.call_tool("get_customer_by_id", {"customer_id": customer_id})
            bad = await client.call_tool("get_customer_by_id", {"customer_id": 5})
            print(f"bad call error: {bad.is_error}", file=sys.stderr)
            name = (result.structured_content or {}).get("full_name", "unknown")
            say(f"I found {name}. Is there anything else I can help with?")


def main() -> int:
    mode = sys.argv[1]
    if mode == "silent_exit":
        return 0
    if mode == "lookup":
        asyncio.run(lookup(sys.argv[2]))
        return 0
    for line in sys.stdin:
        if not line.strip():
            continue
        if mode == "crash":
            print("about to fail on purpose", file=sys.stderr)
            return 3
        if mode == "garbage":
            print("this is not JSON", flush=True)
        if mode == "hang":
            time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
