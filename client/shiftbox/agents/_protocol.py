"""What an agent is to the harness: given the conversation and tools, the next assistant message."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ..llm import Endpoint, Usage
from ..tasks import Task
from ..trajectory import Message, ToolCall, ToolCallRecord


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
    policy: str = Field(description="the domain policy; empty when the run gives none (`--policy none`)")
    tools: list[dict[str, Any]] = Field(description="MCP tool definitions (name, description, inputSchema)")
    seed: int
    one_tool_per_turn: bool = False
    task: Task | None = None
    gateway: Any = Field(None, description="for agents that call tools themselves over MCP (`uses_gateway`): "
                                           "a `shiftbox.world.GatewayLink` with this episode's URL")


class Agent(ABC):
    """The base class of every agent: the orchestrator calls exactly these members.

    A subclass sets `name` and implements `start` and `respond`; the other members have defaults
    that suit an agent whose tool calls the harness makes (see docs/adding-an-agent.md)."""

    name: str
    """Recorded as `Trajectory.agent`, e.g. `litellm:openai/gpt-4o`."""
    privileged: ClassVar[bool] = False
    """Given the task (`AgentContext.task`, with the gold actions): scripted oracles only."""
    uses_gateway: ClassVar[bool] = False
    """Calls its tools itself over MCP: the run starts a recording gateway and `AgentContext.gateway`
    holds this simulation's URL; the harness still executes every call (`tool_result` hands it back)."""
    usage: Usage | None = None
    """Running totals of model use (`shiftbox.llm.Usage`: tokens, cost, calls), recorded as
    `Trajectory.usage["agent"]` once it counts a call."""

    def preflight(self) -> None:
        """Before a live run (never in replay): raise ValueError if the agent cannot work at all."""
        return None

    def endpoints(self) -> list[Endpoint]:
        """The remote services it calls (`shiftbox.llm.Endpoint`: a model, an A2A agent), which the run's
        preflight checks with one cheap request each before any simulation starts (not in replay)."""
        return []

    @abstractmethod
    async def start(self, context: AgentContext) -> None:
        """A new simulation begins (each simulation gets an agent of its own)."""

    @abstractmethod
    async def respond(self, messages: list[Message]) -> AgentReply:
        """The next assistant message for the conversation so far."""

    async def tool_result(self, call: ToolCall, record: ToolCallRecord) -> None:
        """The harness executed `call` (one of this agent's replies' tool calls); its result is
        `record`, also shown as the next tool message. A gateway agent hands it back to its program."""
        return None

    async def close(self) -> None:
        """The simulation ended (also after a failure): release what `start` acquired."""
        return None
