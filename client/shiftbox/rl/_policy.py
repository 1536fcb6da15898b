"""The agent a trained policy plays through: `respond` hands the conversation out and waits for the reply.

The environment runs shiftbox's own simulation (`run_simulation`) in a background task with this agent, so
every turn of the policy is one `respond` call of a normal run: same turn loop, trajectory and scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..agents import Agent, AgentContext, AgentReply
from ..trajectory import Message, Trajectory


class EpisodeTruncated(Exception):
    """The environment ended the episode before the simulation did (reset, close or `truncate`); the
    trajectory ends as an agent error with this message."""


TRUNCATE = None
"""What the environment sends instead of a reply to end the episode now."""


@dataclass
class PolicyTurn:
    """The simulation waits for the policy: the conversation so far."""

    messages: list[Message]


@dataclass
class EpisodeEnd:
    """The simulation ended: its trajectory, or the error that ended the background task."""

    trajectory: Trajectory | None
    error: BaseException | None = None


Event = PolicyTurn | EpisodeEnd


class PolicyAgent(Agent):
    """An agent whose replies come from outside: each `respond` sends a `PolicyTurn` and waits for a reply
    (`AgentReply`, or `TRUNCATE` to end the simulation now)."""

    def __init__(self, name: str, events: MemoryObjectSendStream[Event]):
        self.name = name
        self.context: AgentContext | None = None
        self._events = events
        self.replies, self._replies = channel()

    async def start(self, context: AgentContext) -> None:
        self.context = context

    def close_channels(self) -> None:
        """Close both ends of its reply channel and its end of the events channel, once the simulation is over."""
        for stream in (self.replies, self._replies, self._events):
            stream.close()

    async def respond(self, messages: list[Message]) -> AgentReply:
        await self._events.send(PolicyTurn(list(messages)))
        reply = await self._replies.receive()
        if reply is TRUNCATE:
            raise EpisodeTruncated("the environment ended the episode before the simulation ended")
        return reply


def channel() -> tuple[MemoryObjectSendStream, MemoryObjectReceiveStream]:
    """An unbounded memory stream: a send never waits, so neither side can block the other's shutdown."""
    return anyio.create_memory_object_stream(math.inf)
