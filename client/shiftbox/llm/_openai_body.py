"""The bytes the fast path posts: litellm's own request building, done once per route, model, parameters
and tools, and reused for every call whose messages are plain.

litellm's building (`litellm_request_body`) is most of the fast path's own CPU per call: it re-walks the
tool schemas and every message of the growing conversation (its cache-control scrub, twice), and maps
the parameters again. What it does to plain messages (text content, function tool calls, nothing else) is
to drop their None-valued keys; everything else in the body depends only on the route, model,
parameters and tools. So the body is built by litellm once for each of those (a `BodyTemplate`: its JSON
split around the messages) and a later call only serializes its own plain messages between the two
halves. A message that is not plain (content parts, cache_control, an unknown key) sends that call
through litellm's building, and a template is kept only when litellm's messages were exactly the plain
ones, so the bytes are the same either way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._model import LLMRequest

PLAIN_ROLES = frozenset({"system", "user", "assistant", "tool"})
PLAIN_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
MAX_TEMPLATES = 64
"""Keys (route, model, parameters but the seed) kept, and templates per key (one per tools list); beyond it,
the oldest go."""


def dumps(value: Any) -> str:
    """JSON as the openai SDK's httpx sends a body: compact, not ASCII-escaped, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _plain_call(call: Any) -> bool:
    function = call.get("function") if isinstance(call, dict) else None
    return (isinstance(function, dict) and call.keys() == {"id", "type", "function"} and call["type"] == "function"
            and isinstance(call["id"], str) and function.keys() == {"name", "arguments"}
            and isinstance(function["name"], str) and isinstance(function["arguments"], str))


def plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The messages as litellm's building leaves plain ones (None-valued keys dropped), or None when one is
    not plain."""
    out = []
    for message in messages:
        if not message.keys() <= PLAIN_MESSAGE_KEYS or message.get("role") not in PLAIN_ROLES:
            return None
        content, calls = message.get("content"), message.get("tool_calls")
        if content is not None and not isinstance(content, str):
            return None
        if calls is not None and not (isinstance(calls, list) and calls and all(_plain_call(c) for c in calls)):
            return None
        if any(not isinstance(message.get(k), str | None) for k in ("tool_call_id", "name")):
            return None
        out.append({k: v for k, v in message.items() if v is not None})
    return out


@dataclass(frozen=True)
class BodyTemplate:
    """litellm's body for one route, model, parameters and tools, as JSON text around its slots: the
    messages, and the seed when there is one (it differs per simulation; litellm passes it unchanged)."""

    tools: Any
    """A private copy of the tools it was built for, compared by value: tools from one MCP server's schemas
    never differ only in a number's type (1, 1.0, true), the one difference `==` does not see."""
    slots: tuple[str, ...]
    pieces: tuple[str, ...]

    def render(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
        values = {"messages": dumps(messages), "seed": str(params.get("seed"))}
        parts = [self.pieces[0]]
        for slot, piece in zip(self.slots, self.pieces[1:], strict=True):
            parts += (values[slot], piece)
        return "".join(parts).encode()


_templates: dict[tuple[str, str, str], list[BodyTemplate]] = {}
_SEED = object()


def _has_seed(params: dict[str, Any]) -> bool:
    return type(params.get("seed")) is int


def _key(request: LLMRequest, provider: str, model: str) -> tuple[str, str, str]:
    params = {k: (_SEED if k == "seed" and _has_seed(request.params) else v) for k, v in request.params.items()}
    return provider, model, repr(params)  # repr tells 0 from 0.0 and 1 from True, and keeps order


def template_from(body: dict[str, Any], request: LLMRequest, messages: list[dict[str, Any]] | None,
                  ) -> BodyTemplate | None:
    """A template of litellm's body, or None when its messages are not exactly the plain ones, it changed
    the seed, or it holds something the split cannot serialize."""
    marks = {"messages": "\x00shiftbox messages\x00"}
    if "seed" in body and _has_seed(request.params):
        if type(body["seed"]) is not int or body["seed"] != request.params["seed"]:
            return None
        marks["seed"] = "\x00shiftbox seed\x00"
    try:
        if messages is None or dumps(body.get("messages")) != dumps(messages):
            return None
        text = dumps({k: marks.get(k, v) for k, v in body.items()})
        tools = json.loads(dumps(request.tools)) if request.tools is not None else None
    except (TypeError, ValueError):
        return None
    found = sorted((text.find(dumps(mark)), slot) for slot, mark in marks.items())
    if any(at < 0 or text.count(dumps(marks[slot])) != 1 for at, slot in found):
        return None
    pieces, start = [], 0
    for at, slot in found:
        pieces.append(text[start:at])
        start = at + len(dumps(marks[slot]))
    pieces.append(text[start:])
    return BodyTemplate(tools, tuple(slot for _, slot in found), tuple(pieces))


def cached_body(request: LLMRequest, provider: str, model: str) -> bytes | None:
    """The bytes to post, from a template made earlier for this call's route, model, params and tools;
    None when there is none or its messages are not plain. Raises what `dumps` and UTF-8 encoding raise."""
    candidates = _templates.get(_key(request, provider, model))
    if not candidates:
        return None
    messages = plain_messages(request.messages)
    if messages is None:
        return None
    for template in candidates:
        if template.tools == request.tools:
            return template.render(messages, request.params)
    return None


def remember(request: LLMRequest, provider: str, model: str, body: dict[str, Any]) -> None:
    """Keep a template of the body litellm built for this request, when it is one (see `template_from`)."""
    template = template_from(body, request, plain_messages(request.messages))
    if template is None:
        return
    if len(_templates) >= MAX_TEMPLATES:
        _templates.pop(next(iter(_templates)))
    kept = _templates.setdefault(_key(request, provider, model), [])
    if len(kept) >= MAX_TEMPLATES:
        kept.pop(0)
    kept.append(template)
