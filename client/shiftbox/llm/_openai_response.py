"""The fast path's recorded responses: the JSON litellm's conversion (`convert_to_model_response_object`, then
its `ModelResponse` dumped) gives for a chat completion, made without litellm for the common shapes.

`own_response` knows one family of responses: the fields an OpenAI-compatible server sends for plain text and
function tool calls (id, object, created, model, system_fingerprint, choices with index, message, finish_reason
and a null logprobs, and usage with the three token counts). What litellm does to them is fixed: every message
gets `tool_calls`, `function_call` and `provider_specific_fields` (null unless sent), a `refusal` that was sent
stays last, each choice is numbered by its position and gets empty `provider_specific_fields`, a missing finish
reason is "stop" and "stop" with tool calls is "tool_calls", usage gets null token details. Any other field or
type (reasoning text, vLLM's extras, token details, a message in `<think>` tags, text holding a lone surrogate,
which litellm's dump writes in another shape, …) returns None: litellm
converts that response, so nothing is ever converted differently. The tests compare both for many shapes.
"""

from __future__ import annotations

from typing import Any

from ._openai_body import plain_call

TOP_KEYS = frozenset({"id", "object", "created", "model", "system_fingerprint", "choices", "usage"})
CHOICE_KEYS = frozenset({"index", "message", "finish_reason", "logprobs"})
MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "refusal"})
USAGE_KEYS = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})
FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
"""Finish reasons litellm keeps as they are."""
REASONING_TAGS = ("<think", "</think")
"""Text litellm reads reasoning out of (it splits such content)."""
PARALLEL_CALL = "multi_tool_use.parallel"
"""A tool call litellm unpacks into several (OpenAI's hallucinated parallel call)."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _utf8(texts: list[str]) -> bool:
    """Whether the texts are valid Unicode (no lone surrogate, which a JSON escape can carry)."""
    try:
        "".join(texts).encode()
    except UnicodeEncodeError:
        return False
    return True


def _texts(response: dict[str, Any]) -> list[str]:
    """Every text of a response of the known shape that is not one of the fixed names and values the shape checks
    allow (keys, roles, types, finish reasons: ASCII): its id, model, fingerprint and messages' content, refusal
    and tool calls. Checked for lone surrogates alone, rather than serializing the whole response again."""
    texts = [response["id"], response["model"], response["system_fingerprint"] or ""]
    for choice in response["choices"]:
        message = choice["message"]
        texts += (message["content"] or "", message.get("refusal") or "")
        for call in message["tool_calls"] or ():
            texts += (call["id"], call["function"]["name"], call["function"]["arguments"])
    return texts


def _tool_call(call: Any) -> dict[str, Any] | None:
    if not plain_call(call) or call["function"]["name"] == PARALLEL_CALL:
        return None
    function = call["function"]
    return {"function": {"arguments": function["arguments"], "name": function["name"]}, "id": call["id"],
            "type": "function"}


def _message(message: Any) -> dict[str, Any] | None:
    if not isinstance(message, dict) or not message.keys() <= MESSAGE_KEYS or message.get("role") != "assistant":
        return None
    content, calls = message.get("content"), message.get("tool_calls")
    if not (content is None or (isinstance(content, str) and not any(t in content for t in REASONING_TAGS))):
        return None
    if calls is not None:
        if not isinstance(calls, list) or not calls:
            return None
        calls = [_tool_call(call) for call in calls]
        if any(call is None for call in calls):
            return None
    out = {"content": content, "role": "assistant", "tool_calls": calls, "function_call": None,
           "provider_specific_fields": None}
    if "refusal" in message:
        if not isinstance(message["refusal"], str | None):
            return None
        out["refusal"] = message["refusal"]
    return out


def _choice(choice: Any, index: int) -> dict[str, Any] | None:
    if not isinstance(choice, dict) or not choice.keys() <= CHOICE_KEYS or choice.get("logprobs") is not None:
        return None
    if not isinstance(choice.get("index"), int | None) or isinstance(choice.get("index"), bool):
        return None
    message = _message(choice.get("message"))
    finish = choice.get("finish_reason")
    if message is None or not (finish is None or finish in FINISH_REASONS):
        return None
    if finish is None or (finish == "stop" and message["tool_calls"]):
        finish = "tool_calls" if message["tool_calls"] else "stop"
    out = {"finish_reason": finish, "index": index, "message": message, "provider_specific_fields": {}}
    if "logprobs" in choice:
        out["logprobs"] = None
    return out


def own_response(data: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON of litellm's `ModelResponse` for this response, or None when its shape is not the one known here."""
    if not data.keys() <= TOP_KEYS or not (data.keys() >= {"id", "created", "model", "choices"}):
        return None
    if not (isinstance(data["id"], str) and data["id"] and _count(data["created"]) and isinstance(data["model"], str)
            and data.get("object", "chat.completion") == "chat.completion"
            and isinstance(data.get("system_fingerprint"), str | None)):
        return None
    choices = data["choices"]
    if not isinstance(choices, list) or not choices:
        return None
    converted = [_choice(choice, n) for n, choice in enumerate(choices)]
    if any(choice is None for choice in converted):
        return None
    out = {"id": data["id"], "created": data["created"], "model": data["model"], "object": "chat.completion",
           "system_fingerprint": data.get("system_fingerprint"), "choices": converted}
    if not _utf8(_texts(out)):
        return None
    if "usage" in data:
        usage = data["usage"]
        if not (isinstance(usage, dict) and usage.keys() == USAGE_KEYS and all(map(_count, usage.values()))):
            return None
        out["usage"] = {"completion_tokens": usage["completion_tokens"], "prompt_tokens": usage["prompt_tokens"],
                        "total_tokens": usage["total_tokens"], "completion_tokens_details": None,
                        "prompt_tokens_details": None}
    return out
