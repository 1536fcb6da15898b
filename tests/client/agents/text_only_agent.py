"""An A2A agent written to know nothing of shiftbox: it reads only the text of each message (a2a-sdk's
`get_user_input`), never its metadata or data parts, and answers with a plain `Message`, as a2a-samples'
helloworld agent does. It finds its tools in the text by docs/a2a.md's plain-text convention (the
`MCP tools: URL` line, the customer's words after `Customer: `) and calls them with the official `mcp`
client. Without a tools line it can only apologise: the default handover scores it 0.
"""

from __future__ import annotations

import re
from typing import Any

from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from mcp import Client
from starlette.applications import Starlette

TOOLS = re.compile(r"^MCP tools: (https?://\S+)$", re.M)
NO_TOOLS = "Sorry, I have no tools to look anything up."


class TextOnlyDesk(AgentExecutor):
    """Verifies by phone number, then lists accounts; remembers the customer per conversation (contextId)."""

    def __init__(self) -> None:
        self.customer_of: dict[str, dict[str, Any]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        await event_queue.enqueue_event(new_text_message(await self.answer(context.context_id, text),
                                                         context_id=context.context_id))

    async def answer(self, conversation: str, text: str) -> str:
        tools = TOOLS.search(text)
        if tools is None:
            return NO_TOOLS
        words = text.rsplit("\nCustomer: ", 1)[-1]
        async with Client(tools.group(1)) as mcp:
            names = {tool.name for tool in (await mcp.list_tools()).tools}
            phone = re.search(r"\+\d{11}", words)
            if phone and "get_customer_by_phone" in names:
                found = await mcp.call_tool("get_customer_by_phone", {"phone_number": phone.group()})
                if found.is_error:
                    return "I could not find that number; could you check it?"
                self.customer_of[conversation] = found.structured_content
                return f"Thanks {found.structured_content['full_name']}, you are verified. What else can I do?"
            customer = self.customer_of.get(conversation)
            if customer is None:
                return "Please tell me your full name and phone number first."
            listing = await mcp.call_tool("get_accounts", {"customer_id": customer["customer_id"]})
        accounts = (listing.structured_content or {}).get("accounts", [])
        return "Your accounts: " + ", ".join(f"{a['account_id']} {a['current_balance']:.2f}" for a in accounts) + \
            ". What else can I do?"

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def build_app(url: str) -> Starlette:
    card = AgentCard(
        name="Text-only desk", version="0.1.0", description="Reads nothing but message text.",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=False), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="desk", name="Bank desk", description="Verify and list accounts.", tags=["banking"])])
    handler = DefaultRequestHandler(agent_executor=TextOnlyDesk(), task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])
