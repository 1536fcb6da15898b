"""An example A2A agent for `shiftbox run --agent a2a:URL`: a rule-based banking desk, no LLM, no keys.

    python examples/a2a_agent/agent.py --port 9999 [--no-streaming]

serves an A2A agent (a2a-sdk's server classes: an `AgentExecutor`, the default request handler, the
agent card and JSON-RPC routes on Starlette, uvicorn) at http://127.0.0.1:9999. shiftbox sends it each
customer message as an A2A message whose metadata holds `shiftbox/mcp_url`: the domain's tools for this
conversation, over MCP. It verifies the customer by phone number and gives an overview of their
accounts, calling `get_customer_by_phone` and `get_accounts` there; it asks for what it lacks by leaving
the task input-required, and answers with an artifact on a completed task. Deliberately does not import
shiftbox: this is all an A2A agent needs (see docs/a2a.md).
"""

from __future__ import annotations

import argparse
import re
import socket
from typing import Any

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from google.protobuf.json_format import MessageToDict
from mcp import Client
from starlette.applications import Starlette

MCP_URL_KEY = "shiftbox/mcp_url"  # where this conversation's tools are (in every message's metadata)
PHONE = re.compile(r"\+\d{11}")
ASK_IDENTITY = "Before we start, could you confirm your full name and phone number?"
ANYTHING_ELSE = "Is there anything else I can help with?"


class BankingDesk(AgentExecutor):
    """Per conversation (A2A contextId) it remembers the verified customer."""

    def __init__(self) -> None:
        self.customers: dict[str, dict[str, Any]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        mcp_url = MessageToDict(context.message.metadata)[MCP_URL_KEY]
        text = context.get_user_input()
        customer = self.customers.get(task.context_id)
        phone = PHONE.search(text)
        if phone:
            await updater.start_work(updater.new_agent_message([new_text_part("Let me look you up.")]))
            customer = await call_tool(mcp_url, "get_customer_by_phone", {"phone_number": phone.group()})
            if customer is None:
                await updater.requires_input(updater.new_agent_message([new_text_part(
                    "I could not find that phone number. Could you check it and give it again?")]))
                return
            self.customers[task.context_id] = customer
            answer = f"Thank you, {customer['full_name']}: you are verified. {ANYTHING_ELSE}"
        elif customer is None:
            await updater.requires_input(updater.new_agent_message([new_text_part(ASK_IDENTITY)]))
            return
        elif re.search(r"account|balance", text, re.I):
            listing = await call_tool(mcp_url, "get_accounts", {"customer_id": customer["customer_id"]})
            overview = "; ".join(f"{a['account_id']} ({a['type']}): balance {a['current_balance']:.2f}"
                                 for a in (listing or {}).get("accounts", []))
            answer = f"Here are your accounts: {overview}. {ANYTHING_ELSE}"
        else:
            answer = f"I'm sorry, I can only verify you and give an overview of your accounts. {ANYTHING_ELSE}"
        await updater.add_artifact([new_text_part(answer)], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError("this agent answers at once; there is nothing to cancel")


async def call_tool(mcp_url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """One tool call over MCP: its structured result, or None when the tool reports an error."""
    async with Client(mcp_url) as client:
        result = await client.call_tool(name, arguments)
    return None if result.is_error else result.structured_content


def agent_card(url: str, streaming: bool = True) -> AgentCard:
    return AgentCard(
        name="Banking desk (shiftbox example)", version="1.0.0",
        description="Verifies a bank customer by phone number and gives an overview of their accounts.",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="accounts", name="Account overview", tags=["banking"],
                           description="Identity check by phone, then the customer's accounts and balances.")],
    )


def build_app(url: str, streaming: bool = True) -> Starlette:
    """The A2A server's ASGI app: the agent card at /.well-known/agent-card.json, JSON-RPC at /."""
    card = agent_card(url, streaming)
    handler = DefaultRequestHandler(agent_executor=BankingDesk(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--no-streaming", action="store_true", help="announce no streaming: one blocking call per message")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))  # loopback only
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    print(f"A2A agent at {url}", flush=True)
    app = build_app(url, streaming=not args.no_streaming)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
