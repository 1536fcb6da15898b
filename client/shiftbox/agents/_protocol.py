"""What an agent is to the harness: given the conversation and tools, the next assistant message."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..tasks import Task
from ..trajectory import Message, ToolCall


class AgentReply(BaseModel):
    """One assistant message: text, tool calls, or both."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)


class AgentContext(BaseModel):
    """What an agent is given at the start of a simulation.

    `task` is for scripted agents only (the oracle knows the gold actions); the harness never shows
    it to LLM or external agents.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    domain: str
    policy: str
    tools: list[dict[str, Any]] = Field(description="MCP tool definitions (name, description, inputSchema)")
    seed: int
    one_tool_per_turn: bool = False
    task: Task | None = None
    gateway: Any = Field(None, description="for agents that call tools themselves over MCP (`uses_gateway`): "
                                           "a `shiftbox.world.GatewayLink` with this episode's URL")


@runtime_checkable
class Agent(Protocol):
    name: str

    async def start(self, context: AgentContext) -> None: ...

    async def respond(self, messages: list[Message]) -> AgentReply: ...

    async def close(self) -> None: ...
