"""The one trajectory format: everything a simulation did, enough to score it and to replay it.

Timings live only in `timing` fields; `canonical_json()` leaves them out, so two runs of the same
simulation compare (and hash) equal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from .._usage import Usage

TRAJECTORY_SCHEMA_VERSION = 1

Role = Literal["user", "assistant", "tool"]
TerminationReason = Literal[
    "user_stop", "user_transfer", "out_of_scope", "agent_transfer", "max_steps", "too_many_tool_errors",
    "agent_error", "agent_program_error", "user_error", "infrastructure_error", "replay_mismatch", "session_closed",
]
Blame = Literal["agent", "agent_program", "user", "infrastructure", "none"]
UNSCORED_BLAME: frozenset[str] = frozenset({"agent_program", "user", "infrastructure"})
"""Failures that are not the agent's answer: the agent program did not run, the user simulator or the infrastructure
failed. Such simulations are not scored (metrics), and `run --resume` runs the program and infrastructure ones again."""
STOP_TOKENS = {"###STOP###": "user_stop", "###TRANSFER###": "user_transfer",
               "###OUT-OF-SCOPE###": "out_of_scope"}


class ToolCall(BaseModel):
    """A call the agent asked for (id derived from the agent turn: deterministic)."""

    id: str
    name: str
    arguments: dict[str, Any]


class Message(BaseModel):
    index: int = Field(description="position in the conversation, from 0")
    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = Field(None, description="for role=tool: the call this answers")
    agent_turn: int | None = Field(None, description="for role=assistant: 0-based agent turn number")
    goal: str | None = Field(None, description="for role=user: the goal active when it was sent")
    is_error: bool | None = Field(None, description="for role=tool: the call failed")


class ToolCallRecord(BaseModel):
    """One tools/call as the harness saw it (setup calls are recorded apart, in `setup_calls`)."""

    call_id: str
    message_index: int = Field(description="index of the assistant message that asked for it")
    agent_turn: int | None
    domain: str
    name: str
    arguments: dict[str, Any]
    result: Any = Field(description="structured content, or the text when a tool returned none; "
                                    "a failed call's {\"error\": {kind, message, ...}}")
    is_error: bool
    error_kind: str | None = None
    timing: dict[str, float] = Field(default_factory=dict, description="latency_ms; excluded from equality")
    _client_result: Any = PrivateAttr(None)
    """The server's result exactly as received (not saved): what a gateway hands back to an external agent."""


class GoalShift(BaseModel):
    """The user moved from one goal to the next at `message_index` (ground truth for GSRT)."""

    shift_index: int = Field(description="1 for the first shift")
    from_goal: str
    to_goal: str
    message_index: int


SHIFT_REPORT_TOOL = "log_shift_event"
"""The tool with which an agent reports a goal shift it noticed (AgentChangeBench-parity tool set)."""


class ShiftReport(BaseModel):
    """The agent's own report of a goal shift: a successful `log_shift_event` call, with what it said."""

    message_index: int = Field(description="the assistant message that made the call")
    agent_turn: int | None
    turn_no: int | None = Field(description="the turn the agent named")
    from_class: str
    to_class: str
    trigger_terms: list[str] = Field(default_factory=list)
    requires_reauth: bool | None = None

    @classmethod
    def from_call(cls, record: ToolCallRecord) -> ShiftReport:
        args = record.arguments
        turn = args.get("turn_no")
        terms = args.get("trigger_terms")
        reauth = args.get("requires_reauth")
        return cls(message_index=record.message_index, agent_turn=record.agent_turn,
                   turn_no=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
                   from_class=str(args.get("from_class", "")), to_class=str(args.get("to_class", "")),
                   trigger_terms=[str(t) for t in terms] if isinstance(terms, list) else [],
                   requires_reauth=reauth if isinstance(reauth, bool) else None)


def shift_reports_of(calls: list[ToolCallRecord]) -> list[ShiftReport]:
    """The agent's shift reports among its calls (the successful `log_shift_event` calls), in call order."""
    return [ShiftReport.from_call(c) for c in calls if c.name == SHIFT_REPORT_TOOL and not c.is_error]


class ServerInfo(BaseModel):
    name: str
    version: str
    snapshot: str
    snapshot_sha256: str
    image_id: str | None = Field(None, exclude_if=lambda v: v is None,
                                 description="container image id (`--servers docker`); absent otherwise")
    toolset: str = Field("default", exclude_if=lambda v: v == "default",
                         description="tool profile the server offered (`--toolset`); absent when the default")
    dependency_graph: bool = Field(False, exclude_if=lambda v: not v,
                                   description="the server's tool descriptions carried the domain's dependency "
                                               "graph (`--dependency-graph`); absent when they did not")
    graph_refusal: bool = Field(False, exclude_if=lambda v: not v,
                                description="the server refused calls whose required tools had not succeeded "
                                            "(`--graph-refusal`); absent when it did not")
    tool_contract: str | None = Field(None, exclude_if=lambda v: v is None,
                                      description="digest of the tools the server published (tools/list: names, "
                                                  "descriptions, schemas, annotations); absent in older records")
    tool_schemas: dict[str, dict[str, Any]] | None = Field(
        None, exclude_if=lambda v: v is None,
        description="tool name -> the input schema the server published, for a domain whose tools come with its "
                    "snapshot (mmtb): metrics check the calls against these; absent for a domain's declared tools")


class UserSimulatorInfo(BaseModel):
    """Which user simulator played the customer: results are comparable only between equal ones."""

    kind: str = Field(description="'scripted', 'litellm' or a plugin's name")
    model: str | None = Field(None, description="the LLM behind it (litellm); null for a scripted user")
    prompt_sha256: str | None = Field(None, description="sha256 of its prompt templates (LLM users)")
    personas_version: int | None = Field(None, description="persona catalog schema_version")
    personas_sha256: str | None = Field(None, description="sha256 of the persona catalog (personas.json)")
    protocol: str | None = Field(None, description="the goal-shift protocol it followed ('reference', 'completion', "
                                                   "'agentchangebench'; docs/agents.md)")


class Termination(BaseModel):
    reason: TerminationReason
    detail: str = ""
    blame: Blame = "none"

    @property
    def scored(self) -> bool:
        """The conversation is the agent's to be scored on (it did not end in a failure of another party)."""
        return self.blame not in UNSCORED_BLAME


class Trajectory(BaseModel):
    schema_version: int = TRAJECTORY_SCHEMA_VERSION
    simulation_id: str
    task_id: str
    trial: int
    domain: str
    seed: int = Field(description="derived from (run seed, task id, trial)")
    agent: str
    user: str
    persona: str | None
    user_simulator: UserSimulatorInfo | None = Field(
        None, exclude_if=lambda v: v is None, description="the user simulator's identity; absent in older records")
    goals: list[str]
    servers: dict[str, ServerInfo]
    messages: list[Message]
    tool_calls: list[ToolCallRecord]
    setup_calls: list[ToolCallRecord] = Field(default_factory=list)
    shifts: list[GoalShift]
    shift_reports: list[ShiftReport] | None = Field(
        None, exclude_if=lambda v: v is None,
        description="the agent's own shift reports (log_shift_event); absent when its tool set had no such tool")
    termination: Termination
    one_tool_per_turn: bool = Field(
        False, exclude_if=lambda v: not v,
        description="the run executed at most one tool call per agent turn (`--one-tool-per-turn`): path evaluation "
                    "then counts no parallel steps; absent when parallel calls ran")
    final_state: dict[str, str] = Field(description="domain -> state digest at the end")
    timing: dict[str, float] = Field(default_factory=dict, description="wall_s etc.; excluded from equality")
    usage: dict[str, Usage] = Field(
        default_factory=dict, description="LLM tokens and cost per role (agent, user), counted apart")
    source_data: dict[str, Any] | None = Field(
        None, description="verbatim data of an imported transcript (e.g. AgentChangeBench reward_info)")

    def canonical(self) -> dict[str, Any]:
        """The trajectory without measured timings: what equality and hashes are taken over."""
        data = self.model_dump(mode="json")
        data.pop("timing", None)
        for group in ("tool_calls", "setup_calls"):
            for call in data[group]:
                call.pop("timing", None)
        return data

    def canonical_json(self) -> str:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))

    def content_hash(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()
