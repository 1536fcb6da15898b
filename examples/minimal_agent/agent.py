"""A minimal external agent for shiftbox: an LLM (via litellm) calling the domain's tools over MCP.

The harness starts this program once per simulation:

    python examples/minimal_agent/agent.py --model openai/gpt-4o-mini [--api-base URL]

with SHIFTBOX_MCP_URL (the domain's tools, over streamable HTTP), SHIFTBOX_DOMAIN and SHIFTBOX_SEED
in the environment. It then talks JSON lines (see examples/README.md for the exact protocol):

    stdin   {"role": "user", "content": "..."}                     one line per user message; EOF = done
    stdout  {"role": "assistant", "content": "...", "final": false} optional narration, before tool calls
            {"role": "assistant", "content": "..."}                 the reply; ends the agent's turn

Nothing but those lines may go to stdout, so every other print is sent to stderr below. The API key
is read from the environment only (litellm's usual variables, or the one named by --api-key-env).
Deliberately does not import shiftbox: this is all any program needs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

# litellm would otherwise download its model price list at import time (and retry for seconds offline).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from mcp import Client  # noqa: E402

litellm.suppress_debug_info = True

PROTOCOL_OUT = sys.stdout  # the JSON lines go here...
sys.stdout = sys.stderr  # ...and any stray print() from a library goes to stderr instead

MAX_STEPS = 20  # LLM calls per user message before giving up
APOLOGY = "I'm sorry, I could not complete that. Could you please try again or rephrase your request?"


def send(content: str, final: bool = True) -> None:
    """Write one protocol line and flush it at once (the harness waits for it)."""
    line: dict[str, Any] = {"role": "assistant", "content": content}
    if not final:
        line["final"] = False
    PROTOCOL_OUT.write(json.dumps(line) + "\n")
    PROTOCOL_OUT.flush()


def function_schema(tool: Any) -> dict[str, Any]:
    """An MCP tool as an OpenAI function tool: its input schema is already JSON Schema."""
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description or "",
                         "parameters": tool.input_schema or {"type": "object", "properties": {}}}}


def result_text(result: Any) -> str:
    """What the model is shown of a tool result: the structured content as sorted JSON, else the text.

    An error has no structured content: its text is the error as sorted JSON (`{"error": {"kind",
    "message", ...}}`, what was wrong), so the model can correct itself."""
    if result.structured_content is not None:
        return json.dumps(result.structured_content, sort_keys=True)
    return "\n".join(getattr(item, "text", "") for item in result.content)


async def list_all_tools(mcp: Client) -> list[Any]:
    tools, cursor = [], None
    while True:
        page = await mcp.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


async def agent_turn(mcp: Client, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     llm: dict[str, Any]) -> str:
    """Call the LLM (and the tools it asks for) until it answers the user; returns that answer."""
    for _ in range(MAX_STEPS):
        response = await litellm.acompletion(messages=messages, tools=tools or None, **llm)
        message = response.choices[0].message
        text, calls = message.content or "", message.tool_calls or []
        # Keep the assistant message in the history exactly as the model produced it.
        entry: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
        if calls:
            entry["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.function.name,
                                                 "arguments": c.function.arguments or "{}"}}
                                   for c in calls]
        messages.append(entry)
        if not calls:
            return text
        if text:  # said along with the tool calls: the user sees it before the tools run
            send(text, final=False)
        for call in calls:  # one at a time, in the model's order: deterministic
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except ValueError:
                arguments = None
            if isinstance(arguments, dict):
                content = result_text(await mcp.call_tool(call.function.name, arguments))
            else:  # not sent to the server: tell the model what went wrong instead
                content = json.dumps({"error": {"kind": "invalid_arguments",
                                                "message": "tool arguments must be a JSON object"}})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    messages.append({"role": "assistant", "content": APOLOGY})
    return APOLOGY


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="litellm model, e.g. openai/gpt-4o-mini")
    parser.add_argument("--api-base", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", help="environment variable holding the API key "
                                              "(default: the provider's usual one, e.g. OPENAI_API_KEY)")
    args = parser.parse_args()

    llm: dict[str, Any] = {"model": args.model, "temperature": 0, "drop_params": True}
    if args.api_base:
        llm["api_base"] = args.api_base
    if args.api_key_env:
        llm["api_key"] = os.environ.get(args.api_key_env)
    if os.environ.get("SHIFTBOX_SEED"):  # same seed, same answers (where the provider supports it)
        llm["seed"] = int(os.environ["SHIFTBOX_SEED"])

    async with Client(os.environ["SHIFTBOX_MCP_URL"]) as mcp:
        policy = await mcp.get_prompt("policy")  # the domain policy is served as an MCP prompt
        system = "\n".join(getattr(m.content, "text", "") for m in policy.messages)
        tools = [function_schema(t) for t in await list_all_tools(mcp)]
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]

        while line := await asyncio.to_thread(sys.stdin.readline):  # "" means EOF: we are done
            if not line.strip():
                continue
            messages.append({"role": "user", "content": json.loads(line)["content"]})
            send(await agent_turn(mcp, messages, tools, llm))


if __name__ == "__main__":
    asyncio.run(main())
