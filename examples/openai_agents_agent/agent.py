"""A shiftbox external agent built on the OpenAI Agents SDK (openai-agents 0.24.0).

Same protocol and behaviour as examples/minimal_agent/agent.py (see examples/README.md), but the
framework does the work: `MCPServerStreamableHttp` connects to SHIFTBOX_MCP_URL and exposes its tools
to the agent, `Runner.run` loops LLM call -> tool calls -> LLM call until the model answers.

    python examples/openai_agents_agent/agent.py --model gpt-4o-mini [--base-url URL]

Any OpenAI-compatible chat-completions endpoint works (`--base-url`); a litellm-style `openai/`
prefix on the model is accepted and dropped, so both examples take the same arguments. The API key
comes from the environment only (OPENAI_API_KEY, or the variable named by --api-key-env).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    RunHooks,
    Runner,
    ToolExecutionConfig,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

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


class Narrate(RunHooks):
    """When the model says something *and* asks for tools, show the words before the tools run."""

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        text = "".join(part.text for item in response.output if item.type == "message"
                       for part in item.content if part.type == "output_text")
        if text and any(item.type == "function_call" for item in response.output):
            send(text, final=False)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="chat-completions model, e.g. gpt-4o-mini")
    parser.add_argument("--base-url", "--api-base", dest="base_url",
                        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="environment variable holding the API key (default OPENAI_API_KEY)")
    args = parser.parse_args()

    set_tracing_disabled(True)  # the SDK would otherwise upload traces to OpenAI
    client = AsyncOpenAI(base_url=args.base_url, api_key=os.environ.get(args.api_key_env) or "unused")
    model = OpenAIChatCompletionsModel(model=args.model.removeprefix("openai/"), openai_client=client)
    seed = os.environ.get("SHIFTBOX_SEED")  # same seed, same answers (where the provider supports it)
    settings = ModelSettings(temperature=0, extra_args={"seed": int(seed)} if seed else None)
    run_config = RunConfig(
        tracing_disabled=True,
        # one tool call at a time, in the model's order: deterministic (the SDK runs them concurrently by default)
        tool_execution=ToolExecutionConfig(max_function_tool_concurrency=1),
    )

    tools = MCPServerStreamableHttp(
        params={"url": os.environ["SHIFTBOX_MCP_URL"], "timeout": 30},
        name="shiftbox", cache_tools_list=True, client_session_timeout_seconds=60,
        use_structured_content=True,  # the model sees the result's structured JSON, not its text rendering
    )
    async with tools:
        policy = await tools.get_prompt("policy")  # the domain policy is served as an MCP prompt
        instructions = "\n".join(getattr(m.content, "text", "") for m in policy.messages)
        agent = Agent(name="shiftbox agent", instructions=instructions, model=model,
                      model_settings=settings, mcp_servers=[tools])

        history: list[Any] = []  # the whole conversation so far, in the SDK's input format
        while line := await asyncio.to_thread(sys.stdin.readline):  # "" means EOF: we are done
            if not line.strip():
                continue
            history.append({"role": "user", "content": json.loads(line)["content"]})
            result = await Runner.run(agent, history, max_turns=MAX_STEPS, hooks=Narrate(),
                                      run_config=run_config,
                                      error_handlers={"max_turns": lambda _: APOLOGY})
            history = result.to_input_list()
            send(str(result.final_output or ""))


if __name__ == "__main__":
    asyncio.run(main())
