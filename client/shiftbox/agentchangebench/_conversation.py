"""How the reference reads a conversation: every tool call in message order (any role), and the tool
message answering each call."""

from __future__ import annotations

from ..trajectory import Message, ToolCall, Trajectory


def all_calls(trajectory: Trajectory) -> list[ToolCall]:
    """Every tool call of the conversation in message order, any role (tau2 lets the user call tools)."""
    return [c for m in trajectory.messages for c in m.tool_calls]


def tool_results(trajectory: Trajectory) -> dict[str, Message]:
    """Call id -> the tool message answering it."""
    return {m.tool_call_id: m for m in trajectory.messages if m.role == "tool" and m.tool_call_id is not None}
