"""What a user simulator is to the harness: the next user message and which goal it serves."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..tasks import Task
from ..trajectory import Message, ToolCallRecord


class UserReply(BaseModel):
    """One user message. `goal` is the goal active once it is sent (a shift when it changes)."""

    content: str
    goal: str | None = None


class UserContext(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    task: Task
    seed: int
    goal_tools: dict[str, tuple[str, ...]] = Field(description="the domain's goal -> relevant tools table")


@runtime_checkable
class UserSimulator(Protocol):
    name: str

    async def start(self, context: UserContext) -> None: ...

    async def respond(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        """The next user message; `tool_calls` are the agent's calls so far (a scripted user may
        use them to tell whether the current goal's work is done)."""
        ...
