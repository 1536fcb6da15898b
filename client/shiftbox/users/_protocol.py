"""What a user simulator is to the harness: the next user message and which goal it serves."""

from __future__ import annotations

from abc import ABC, abstractmethod

from pydantic import BaseModel, ConfigDict, Field

from ..llm import Endpoint, Usage
from ..tasks import Task
from ..trajectory import Message, ToolCallRecord, UserSimulatorInfo


class UserReply(BaseModel):
    """One user message. `goal` is the goal active once it is sent (a shift when it changes to a goal not
    raised before); `stacked` are further goals the same message asks for (a stacked request)."""

    content: str
    goal: str | None = None
    stacked: list[str] = Field(
        default_factory=list,
        description="goals this message also asks for, to be handled after `goal`: each is a goal shift at this "
                    "message; when the user later turns to one of them (`goal` becomes it), no new shift is recorded")


class UserContext(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    task: Task
    seed: int
    goal_tools: dict[str, tuple[str, ...]] = Field(description="the domain's goal -> relevant tools table")


class UserSimulator(ABC):
    """The base class of every user simulator: the orchestrator calls exactly these members.

    A subclass sets `name` and implements `start` and `respond` (see docs/adding-an-agent.md)."""

    name: str
    """Recorded as `Trajectory.user`, e.g. `scripted` or `litellm:openai/gpt-4o-mini`."""
    protocol: str | None = None
    """The goal-shift protocol it follows, recorded in its identity (None: its own, unnamed)."""
    usage: Usage | None = None
    """Running totals of model use (`shiftbox.llm.Usage`: tokens, cost, calls), recorded as
    `Trajectory.usage["user"]` once it counts a call."""

    def preflight(self) -> None:
        """Before a live run: raise ValueError if the simulator cannot work at all."""
        return None

    def endpoints(self) -> list[Endpoint]:
        """The models it calls, which the run's preflight checks before any simulation starts (not in replay)."""
        return []

    def identity(self) -> UserSimulatorInfo:
        """Which simulator this is (`Trajectory.user_simulator`): by default what `name` (`kind:model`)
        says, with the persona catalog's version and digest; an LLM simulator adds its prompt digest."""
        from ._personas import catalog_identity

        kind, _, model = self.name.partition(":")
        version, digest = catalog_identity()
        return UserSimulatorInfo(kind=kind, model=model or None, personas_version=version, personas_sha256=digest,
                                 protocol=self.protocol)

    @abstractmethod
    async def start(self, context: UserContext) -> None:
        """A new simulation begins (each simulation gets a simulator of its own)."""

    @abstractmethod
    async def respond(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        """The next user message; `tool_calls` are the agent's calls so far (a scripted user may
        use them to tell whether the current goal's work is done)."""
