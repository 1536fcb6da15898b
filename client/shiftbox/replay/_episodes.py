"""Episodes for replay (`ToolSession`s): tools re-executed and checked against the transcript, or served from it."""

from __future__ import annotations

import json
from typing import Any

from ..agents import Agent, AgentContext, AgentReply
from ..errors import ReplayDivergence
from ..llm import first_difference
from ..trajectory import Message, ToolCallRecord, Trajectory
from ..world import ToolSession


class ReplayMismatch(ReplayDivergence):
    """A replayed tool call or result differs from the transcript."""


def _comparable(record: ToolCallRecord) -> dict[str, Any]:
    return {"name": record.name, "arguments": record.arguments, "result": record.result,
            "is_error": record.is_error, "error_kind": record.error_kind}


class _Recorded:
    """The recorded calls of one simulation, consumed in order."""

    def __init__(self, recorded: Trajectory):
        self.recorded = recorded
        self.calls = list(recorded.setup_calls) + list(recorded.tool_calls)
        self.position = 0

    def next(self, name: str, arguments: dict[str, Any]) -> ToolCallRecord:
        n = self.position
        sim = self.recorded.simulation_id
        if n >= len(self.calls):
            raise ReplayMismatch(f"tool drift in {sim}/call {n}: {name} was called but the transcript has only "
                                 f"{len(self.calls)} calls")
        expected = self.calls[n]
        diff = first_difference({"name": expected.name, "arguments": expected.arguments},
                                {"name": name, "arguments": arguments})
        if diff:
            raise ReplayMismatch(f"tool drift in {sim}/call {n}: the call differs from the transcript in {diff} "
                                 f"(recorded {expected.name} {json.dumps(expected.arguments, sort_keys=True)})")
        self.position += 1
        return expected


class TranscriptEpisode:
    """Serves every tool result from the transcript: no server at all (`--tools transcript`)."""

    def __init__(self, recorded: Trajectory, episode_id: str):
        self.id = episode_id
        self._recorded = _Recorded(recorded)
        self._final = recorded.final_state.get(recorded.domain, "")

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, message_index: int,
                   agent_turn: int | None) -> ToolCallRecord:
        expected = self._recorded.next(name, arguments)
        return expected.model_copy(update={"call_id": call_id, "message_index": message_index,
                                           "agent_turn": agent_turn})

    async def close(self) -> str:
        return self._final


class DriftCheckingEpisode:
    """Re-executes every call on the real server and fails when a result differs (`--tools reexecute`)."""

    def __init__(self, episode: ToolSession, recorded: Trajectory):
        self.id = episode.id
        self._episode = episode
        self._recorded = _Recorded(recorded)
        self._sim = recorded.simulation_id
        self._final = recorded.final_state.get(recorded.domain)

    async def call(self, name: str, arguments: dict[str, Any], *, call_id: str, message_index: int,
                   agent_turn: int | None) -> ToolCallRecord:
        n = self._recorded.position
        expected = self._recorded.next(name, arguments)
        actual = await self._episode.call(name, arguments, call_id=call_id, message_index=message_index,
                                          agent_turn=agent_turn)
        diff = first_difference(_comparable(expected), _comparable(actual))
        if diff:
            raise ReplayMismatch(f"tool drift in {self._sim}/call {n} ({name}): the server's answer differs from "
                                 f"the recording in {diff}")
        return actual

    async def close(self) -> str:
        final = await self._episode.close()
        if self._final is not None and final != self._final:
            raise ReplayMismatch(f"state drift in {self._sim}: the final state digest differs from the recording")
        return final


class RecordedAgent(Agent):
    """Plays back an agent's recorded assistant messages (external programs are not re-run in replay)."""

    def __init__(self, recorded: Trajectory):
        self.name = recorded.agent
        self._recorded = recorded
        self._replies = [m for m in recorded.messages if m.role == "assistant"]
        self._next = 0
        self._expected: list[dict[str, Any]] = []  # the recorded messages dumped so far, in order
        self._checked: list[Message] = []  # the conversation's messages found equal to the recording, in order

    async def start(self, context: AgentContext) -> None:
        return None

    async def respond(self, messages: list[Message]) -> AgentReply:
        """The next recorded reply, once the conversation so far equals the recording. A message object already
        found equal at an earlier reply is not dumped again (the orchestrator only appends): each message is
        dumped once a side, not once a reply."""
        sim = self._recorded.simulation_id
        if self._next >= len(self._replies):
            raise ReplayMismatch(f"agent drift in {sim}: the agent is asked for reply {self._next + 1} but the "
                                 f"recording has {len(self._replies)}")
        reply = self._replies[self._next]
        recorded = self._recorded.messages[:reply.index]
        self._expected += [m.model_dump(mode="json") for m in recorded[len(self._expected):]]
        same = 0
        while same < min(len(messages), len(self._checked)) and messages[same] is self._checked[same]:
            same += 1
        if self._expected[same:reply.index] != [m.model_dump(mode="json") for m in messages[same:]]:
            diff = first_difference(self._expected[:reply.index], [m.model_dump(mode="json") for m in messages])
            raise ReplayMismatch(f"conversation drift in {sim} before agent reply {self._next + 1}: {diff}")
        self._checked = list(messages)
        self._next += 1
        return AgentReply(content=reply.content, tool_calls=list(reply.tool_calls))
