"""Agents that call their tools themselves over MCP, through the run's recording gateway.

What such an agent says reaches the harness by some transport (a program's stdout for `cmd:`, an A2A
server's replies for `a2a:`), and its tool calls reach the gateway. `GatewayAgent` keeps both in one
queue of events, in the order they arrived, and turns them into agent turns: a tool call the gateway
received is returned to the orchestrator like any other agent's tool call (so the harness's one
recorder executes it) and its result goes back to the waiting MCP request through `tool_result`;
text marked as not final is narration attached to the next tool call; final text ends the turn. A
subclass delivers the user's messages (`_deliver`) and pushes what the agent says (`_push`).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ..errors import AgentProgramError
from ..trajectory import Message, ToolCall, ToolCallRecord
from ._protocol import Agent, AgentContext, AgentReply

if TYPE_CHECKING:  # the world's results as the gateway hands them on (`client_result` loads the models)
    from mcp_types import CallToolResult

DEFAULT_TURN_TIMEOUT_S = 120.0


class ExternalAgentError(AgentProgramError):
    """An agent that calls its tools through the gateway did not run as one: it exited, wrote garbage, failed,
    could not be reached or did not answer in time. Ends the simulation (`agent_program_error`, not scored),
    never the run."""


@dataclass
class _Call:
    """A tool call the agent sent to the gateway, waiting for its result."""

    name: str
    arguments: dict[str, Any]
    answered: anyio.Event
    result: CallToolResult | None = None


Said = dict[str, Any]
"""Text the agent said: `{"content": str, "final": bool}` (`final` false: narration before tool calls)."""
_Event = Said | _Call | Exception | object


class GatewayAgent(Agent):
    """The turn-taking of an agent whose tool calls arrive at the gateway (see the module docstring)."""

    uses_gateway: ClassVar[bool] = True
    kind: ClassVar[str] = "external agents"

    def __init__(self, *, turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S):
        self.turn_timeout_s = turn_timeout_s
        self._events: list[_Event] = []
        self._wakeup = anyio.Event()
        self._pending: dict[str, _Call] = {}
        self._sent = 0
        self._calls = 0
        self._closed = False

    # -- what a subclass provides ---------------------------------------------------------------

    @abstractmethod
    async def _open(self, context: AgentContext) -> None:
        """Start the transport for this simulation (`context.gateway.url` is where the tools are)."""

    @abstractmethod
    async def _deliver(self, texts: list[str]) -> None:
        """Hand the user's new messages to the agent."""

    async def _shut(self) -> None:
        """Stop the transport (the simulation ended; also after a failure)."""
        return None

    def _before_call(self) -> None:
        """A tool call reached the gateway: queue what the agent said before it, if the transport can tell."""
        return None

    def _diagnostics(self) -> str:
        """Appended to error messages (e.g. the tail of a program's stderr)."""
        return ""

    def _from(self) -> str:
        """Who did not reply, for the timeout's message (e.g. " from the A2A agent at URL"); empty when obvious."""
        return ""

    async def _next_event(self) -> _Event:
        """The next event, waiting for one; a transport that must be polled overrides this."""
        while not self._events:
            self._wakeup = anyio.Event()
            await self._wakeup.wait()
        return self._events.pop(0)

    def _push(self, event: _Event) -> None:
        self._events.append(event)
        self._wakeup.set()

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self, context: AgentContext) -> None:
        if context.gateway is None:
            raise ExternalAgentError(f"{self.kind} need the run's recording gateway (none was started)")
        context.gateway.attach(self._tool_call)
        await self._open(context)

    async def close(self) -> None:
        """Answer every call still waiting (the simulation has ended), then stop the transport."""
        self._closed = True
        queued = [e for e in self._events if isinstance(e, _Call)]  # sent but never handed to the harness
        for call in [*self._pending.values(), *queued]:
            call.answered.set()
        await self._shut()

    # -- the turn -------------------------------------------------------------------------------

    async def respond(self, messages: list[Message]) -> AgentReply:
        texts = [m.content or "" for m in messages[self._sent:] if m.role == "user"]
        self._sent = len(messages)
        if texts:
            await self._deliver(texts)
        narration: list[str] = []
        with anyio.move_on_after(self.turn_timeout_s) as scope:
            while True:
                event = await self._next_event()
                if isinstance(event, Exception):
                    raise event
                if isinstance(event, _Call):
                    call_id = f"ext_{self._calls}"
                    self._calls += 1
                    self._pending[call_id] = event
                    content = "\n".join(narration) or None
                    return AgentReply(content=content, tool_calls=[ToolCall(id=call_id, name=event.name,
                                                                            arguments=event.arguments)])
                if event.get("final", True) is False:
                    narration.append(event["content"])
                    continue
                return AgentReply(content="\n".join([*narration, event["content"]]))
        assert scope.cancelled_caught
        raise ExternalAgentError(f"no reply{self._from()} within {self.turn_timeout_s:g} s (agent timeout; set it with "
                                 "--agent-arg timeout=SECONDS)" + self._diagnostics())

    async def tool_result(self, call: ToolCall, record: ToolCallRecord) -> None:
        """The harness executed `call`: hand the server's result back to the waiting MCP request."""
        from ..world import client_result

        pending = self._pending.pop(call.id, None)
        if pending is not None:
            pending.result = client_result(record)
            pending.answered.set()

    async def _tool_call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Gateway route: queue the call behind anything the agent said before sending it."""
        if self._closed:
            return _ended_result()
        self._before_call()
        call = _Call(name, arguments, anyio.Event())
        self._push(call)
        await call.answered.wait()
        return call.result or _ended_result()


def _ended_result() -> CallToolResult:
    from shiftbox_servers.kit import ErrorKind, error_result

    return error_result(ErrorKind.PRECONDITION_FAILED, "the simulation has ended; no tool call was made")
