"""Between shiftbox's and Inspect's shapes: MCP tools as Inspect `ToolInfo`, conversations as Inspect chat messages,
and a model's assistant message as an `AgentReply` (with the harness's own tool-call ids)."""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolCallError, ToolInfo, ToolParams

from .._usage import Usage
from ..agents import INVALID_JSON_KEY, AgentReply
from ..trajectory import Message, ToolCall

REF_PREFIX = "#/$defs/"


def inline_refs(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    """`schema` with every local `$ref` ("#/$defs/<name>") replaced by its definition: Inspect's `ToolParams` keeps
    no `$defs`, so a reference left in would point nowhere once the tool reaches the model."""
    if isinstance(schema, list):
        return [inline_refs(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    defs = {**(defs or {}), **schema.get("$defs", {})}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX):
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return inline_refs({**defs[ref[len(REF_PREFIX):]], **rest}, defs)
    return {k: inline_refs(v, defs) for k, v in schema.items() if k != "$defs"}


def tool_info(tool: dict[str, Any]) -> ToolInfo:
    """One MCP tool (name, description, inputSchema) as Inspect describes a tool to any model provider (the way
    Inspect's own MCP client converts one: parameters validated as `ToolParams`, a missing description = the name)."""
    parameters = ToolParams.model_validate(inline_refs(tool.get("inputSchema") or {"type": "object"}))
    for name, param in parameters.properties.items():
        param.description = param.description or name
    return ToolInfo(name=tool["name"], description=tool.get("description") or tool["name"], parameters=parameters)


def chat_messages(messages: list[Message]) -> list[ChatMessage]:
    """A shiftbox conversation as Inspect chat messages (the simulated user's goal is not part of them)."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[ChatMessage] = []
    for m in messages:
        if m.role == "user":
            out.append(ChatMessageUser(content=m.content or ""))
        elif m.role == "assistant":
            calls = [InspectToolCall(id=c.id, function=c.name, arguments=c.arguments) for c in m.tool_calls]
            out.append(ChatMessageAssistant(content=m.content or "", tool_calls=calls or None))
        else:
            content = m.content or ""
            out.append(ChatMessageTool(content=content, tool_call_id=m.tool_call_id,
                                       function=names.get(m.tool_call_id or ""),
                                       error=ToolCallError("unknown", content) if m.is_error else None))
    return out


def agent_reply(output: ModelOutput, turn: int, one_tool_per_turn: bool = False) -> AgentReply:
    """The model's message as the next assistant message; call i of agent turn t gets id `call_<t>_<i>`, as every
    shiftbox agent's calls do, so a provider's ids never reach the trajectory. Arguments Inspect could not parse
    are kept as `{"__invalid_json__": <why>}`: the server rejects them and TUE counts the mistake."""
    message = output.message
    raw_calls = (message.tool_calls or [])[:1] if one_tool_per_turn else (message.tool_calls or [])
    calls = [ToolCall(id=f"call_{turn}_{i}", name=raw.function,
                      arguments={INVALID_JSON_KEY: raw.parse_error} if raw.parse_error else dict(raw.arguments))
             for i, raw in enumerate(raw_calls)]
    return AgentReply(content=message.text or None, tool_calls=calls)


def usage_of(output: ModelOutput) -> Usage:
    """One generate call's tokens (and cost, when Inspect priced it) as shiftbox counts model use."""
    usage = output.usage
    if usage is None:
        return Usage(calls=1)
    return Usage(prompt_tokens=usage.input_tokens, completion_tokens=usage.output_tokens,
                 cost_usd=float(usage.total_cost or 0.0), calls=1)
