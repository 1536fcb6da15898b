"""The bytes the fast path posts: litellm's own request building, done once per route, model, parameters
and tools, and reused for every call whose messages are plain.

litellm's building (`litellm_request_body`) is most of the fast path's own CPU per call: it re-walks the
tool schemas and every message of the growing conversation (its cache-control scrub, twice), and maps
the parameters again. What it does to plain messages (text content, function tool calls, nothing else) is
to drop their None-valued keys; everything else in the body depends only on the route, model,
parameters and tools. So the body is built by litellm once for each of those (a `BodyTemplate`: its JSON
split around the messages) and a later call only serializes its own plain messages between the two
halves; each message is checked and serialized once (`messages_json`), not again on every later call of
its conversation. A message that is not plain (content parts, cache_control, an unknown key) sends that call
through litellm's building, and a template is kept only when litellm's messages were exactly the plain
ones, so the bytes are the same either way.

For the calls whose building is known (`own_body`: a model litellm's price map does not know, so no
catalog rules apply; plain messages; function tools; the common sampling parameters) the first body is
built here instead, as litellm would build it, so such a run never imports litellm. Anything else is
built by litellm, as before. The tests compare both byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._model import LLMRequest
from ._prices import known_model

PLAIN_ROLES = frozenset({"system", "user", "assistant", "tool"})
PLAIN_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
MAX_TEMPLATES = 64
"""Keys (route, model, parameters but the seed) kept, and templates per key (one per tools list); beyond it,
the oldest go."""


def dumps(value: Any) -> str:
    """JSON as the openai SDK's httpx sends a body: compact, not ASCII-escaped, no NaN."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def plain_call(call: Any) -> bool:
    """A function tool call of exactly an id, its type and a function's name and arguments, all text."""
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
        if calls is not None and not (isinstance(calls, list) and calls and all(plain_call(c) for c in calls)):
            return None
        if any(not isinstance(message.get(k), str | None) for k in ("tool_call_id", "name")):
            return None
        out.append({k: v for k, v in message.items() if v is not None})
    return out


MAX_CHECKED = 4096
"""Messages whose JSON `messages_json` keeps; beyond it, the oldest go."""
_checked: dict[tuple[Any, ...], str] = {}


def _frozen(message: dict[str, Any]) -> tuple[Any, ...] | None:
    """The message as a key that equals another message's only when their JSON and plainness are the same: its
    items in order, every key and value exactly a `str` (or None), tool calls as their items in order; None for
    any other value (such a message is checked each time)."""
    items: list[tuple[str, Any]] = []
    for key, value in message.items():
        if type(key) is not str:
            return None
        if type(value) is list and key == "tool_calls":
            calls = []
            for call in value:
                if type(call) is not dict:
                    return None
                frozen_call = []
                for name, part in call.items():
                    if type(name) is not str:
                        return None
                    if type(part) is dict and name == "function":
                        part = tuple(part.items())
                        if not all(type(k) is str and type(v) is str for k, v in part):
                            return None
                    elif type(part) is not str:
                        return None
                    frozen_call.append((name, part))
                calls.append(tuple(frozen_call))
            value = tuple(calls)
        elif value is not None and type(value) is not str:
            return None
        items.append((key, value))
    return tuple(items)


def messages_json(messages: list[dict[str, Any]]) -> str | None:
    """`dumps(plain_messages(messages))`, or None when one is not plain. Each message is checked and serialized
    once: a conversation's earlier messages come back on every call (as new dicts, equal to the old), and are found
    by their `_frozen` key, which holds every value the check and the JSON depend on."""
    texts = []
    for message in messages:
        frozen = _frozen(message)
        text = _checked.get(frozen) if frozen is not None else None
        if text is None:
            plain = plain_messages([message])
            if plain is None:
                return None
            text = dumps(plain[0])
            if frozen is not None:
                if len(_checked) >= MAX_CHECKED:
                    _checked.pop(next(iter(_checked)))
                _checked[frozen] = text
        texts.append(text)
    return f"[{','.join(texts)}]"


@dataclass(frozen=True)
class BodyTemplate:
    """litellm's body for one route, model, parameters and tools, as JSON text around its slots: the
    messages, and the seed when there is one (it differs per simulation; litellm passes it unchanged)."""

    tools: Any
    """A private copy of the tools it was built for, compared by value: tools from one MCP server's schemas
    never differ only in a number's type (1, 1.0, true), the one difference `==` does not see."""
    slots: tuple[str, ...]
    pieces: tuple[str, ...]
    fitting: dict[int, Any] = field(default_factory=dict, compare=False)
    """Tools lists found equal to `tools`, by id (each held, so its id is not reused): a role sends its own list,
    never changed, on every call (`LLMRequest.of_role`), compared by value once rather than on every call."""

    def fits(self, tools: Any) -> bool:
        """Whether the template was built for these tools."""
        if tools is not None and self.fitting.get(id(tools)) is tools:
            return True
        if self.tools != tools:
            return False
        if tools is not None:
            if len(self.fitting) >= MAX_TEMPLATES:
                self.fitting.pop(next(iter(self.fitting)))
            self.fitting[id(tools)] = tools
        return True

    def render(self, messages: str, params: dict[str, Any]) -> bytes:
        """The body for `messages` (their JSON, `messages_json`) and the call's params."""
        values = {"messages": messages, "seed": str(params.get("seed"))}
        parts = [self.pieces[0]]
        for slot, piece in zip(self.slots, self.pieces[1:], strict=True):
            parts += (values[slot], piece)
        return "".join(parts).encode()


_templates: dict[tuple[str, str, str], list[BodyTemplate]] = {}
_SEED = object()


OWN_PARAMS = ("temperature", "top_p", "stop", "max_tokens", "presence_penalty", "frequency_penalty", "seed", "tools",
              "tool_choice", "parallel_tool_calls")
"""What `own_body` sends besides the model and messages, in litellm's order (its `get_optional_params`
signature's); its hosted_vllm route moves the tools last. `drop_params` is read, never sent."""
_NUMBERS = frozenset({"temperature", "top_p", "max_tokens", "presence_penalty", "frequency_penalty"})
_TOOL_CHOICES = frozenset({"auto", "none", "required"})
_REASONING_SERIES = ("gpt-5", "gpt-6")
"""Names litellm's openai route gives its reasoning-series rules (remapped parameters) whatever the map says."""
_CACHE_MARKS = frozenset({"cache_control", "prompt_cache_breakpoint", "cache_point"})
"""Keys litellm rewrites or strips in tools, wherever they are: such tools are left to it."""


def _own_param(name: str, value: Any) -> bool:
    """Whether litellm passes the parameter through unchanged (its types are the ones it sends as given)."""
    if name in _NUMBERS:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "seed":
        return isinstance(value, int)
    if name == "stop":
        return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    if name == "tool_choice":
        return isinstance(value, str) and value in _TOOL_CHOICES
    return name in ("parallel_tool_calls", "drop_params") and isinstance(value, bool)


def _has_cache_marks(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k in _CACHE_MARKS or _has_cache_marks(v) for k, v in value.items())
    return isinstance(value, list) and any(_has_cache_marks(v) for v in value)


def _without_strictness(schema: Any) -> Any:
    """A copy of a tool as litellm's hosted_vllm route sends it: every `strict` key and every
    `additionalProperties: false` dropped, at any depth."""
    if isinstance(schema, dict):
        return {k: _without_strictness(v) for k, v in schema.items()
                if k != "strict" and not (k == "additionalProperties" and v is False)}
    if isinstance(schema, list):
        return [_without_strictness(v) for v in schema]
    return schema


def _own_tools(tools: list[dict[str, Any]], provider: str) -> list[dict[str, Any]] | None:
    """The tools as litellm sends them, or None when one is not a plain function tool."""
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if tool.get("type") != "function" or not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return None
    if _has_cache_marks(tools):
        return None
    copied = json.loads(dumps(tools))
    return _without_strictness(copied) if provider == "hosted_vllm" else copied


def own_body(request: LLMRequest, provider: str, model: str) -> dict[str, Any] | None:
    """The body litellm's route builds for this call, built without litellm; None when this call's building is
    not one of those known here (litellm builds it). Raises what `dumps` raises."""
    if (provider not in ("openai", "hosted_vllm") or known_model(request.model)
            or any(marker in model for marker in _REASONING_SERIES)):
        return None
    messages = plain_messages(request.messages)
    params = request.params
    if messages is None or not all(_own_param(k, v) for k, v in params.items()):
        return None
    tools = _own_tools(request.tools, provider) if request.tools else None
    if request.tools and tools is None:
        return None
    sent = {**params, **({"tools": tools} if tools else {})}
    if not tools:
        sent.pop("tool_choice", None)  # litellm sends no tool_choice without tools
    body: dict[str, Any] = {"model": model, "messages": messages}
    for name in OWN_PARAMS:
        if name in sent and not (name == "tools" and provider == "hosted_vllm"):
            body[name] = sent[name]
    if tools and provider == "hosted_vllm":
        body["tools"] = tools
    return body


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
    messages = messages_json(request.messages)
    if messages is None:
        return None
    for template in candidates:
        if template.fits(request.tools):
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
