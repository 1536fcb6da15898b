"""Agent programs that do not run, and agents that run but answer badly: `python broken_agent.py MODE`.

The program did not run (not scored): `import_error` (fails at import, before reading anything), `auth_error`
(prints a provider's authentication error to stderr and exits 1 on the first message), `raises` (an uncaught
exception on the first message), `mid_exit` (answers the first message, exits 0 on the second), `never_writes`
(reads its input, never answers). The agent ran and answered badly (scored): `nonsense` (answers every message
with text unrelated to it), `wrong_tool` (calls a tool that does not exist, then one with bad arguments, then
answers). `switch` is `auth_error` for the simulations whose seed (SHIFTBOX_SEED) is a line of the file named by
SHIFTBOX_TEST_BROKEN_FLAG, `nonsense` for the others and once the file is removed: a key fixed before `--resume`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def say(content: str) -> None:
    sys.stdout.write(json.dumps({"role": "assistant", "content": content}) + "\n")
    sys.stdout.flush()


def messages():
    for line in sys.stdin:
        if line.strip():
            yield json.loads(line)["content"]


def auth_error() -> int:
    for _ in messages():
        print("openai.AuthenticationError: Error code: 401 - Incorrect API key provided: sk-test", file=sys.stderr)
        return 1
    return 0


def nonsense() -> int:
    for _ in messages():
        say("Purple elephants dance at noon.")
    return 0


async def wrong_tool() -> None:
    from mcp import Client

    async with Client(os.environ["SHIFTBOX_MCP_URL"]) as client:
        for _ in messages():
            await client.call_tool("no_such_tool", {})
            await client.call_tool("get_customer_by_id", {"customer_id": 5})
            say("Done.")


def main() -> int:
    mode = sys.argv[1]
    if mode == "import_error":
        import shiftbox_no_such_module  # noqa: F401  # ModuleNotFoundError, as a missing dependency would
    if mode == "switch":
        flag = Path(os.environ["SHIFTBOX_TEST_BROKEN_FLAG"])
        broken = flag.exists() and os.environ["SHIFTBOX_SEED"] in flag.read_text().split()
        mode = "auth_error" if broken else "nonsense"
    if mode == "auth_error":
        return auth_error()
    if mode == "nonsense":
        return nonsense()
    if mode == "wrong_tool":
        import asyncio

        asyncio.run(wrong_tool())
        return 0
    for n, _ in enumerate(messages()):
        if mode == "raises":
            raise RuntimeError("the agent's own bug")
        if mode == "mid_exit":
            if n == 1:
                return 0
            say("Hello, how can I help?")
        if mode == "never_writes":
            time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
