"""The fast path's body templates (`shiftbox.llm._openai_body`): for every route, model, parameters, tools and
messages, the bytes posted from a template are the bytes litellm's own request building gives, and a call
litellm must build (messages that are not plain) is built by litellm."""

from __future__ import annotations

import copy

import pytest

from shiftbox.llm import LLMRequest, _openai_body
from shiftbox.llm._openai_body import cached_body, dumps, messages_json, plain_messages
from shiftbox.llm._openai_http import encoded_body, request_body

pytestmark = pytest.mark.anyio
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look it up. \u2603",
                                           "parameters": {"type": "object", "additionalProperties": False,
                                                          "properties": {"q": {"type": "string", "minLength": 1}},
                                                          "required": ["q"], "strict": True}}},
         {"type": "function", "function": {"name": "nothing", "description": "",
                                           "parameters": {"type": "object", "properties": {}}}}]
CONVERSATION = [
    {"role": "system", "content": "Be kind. <policy>x</policy>"},
    {"role": "user", "content": "héllo \u2603 \"quoted\" \\ back"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\": 1}"}},
                    {"id": "call_1_1", "type": "function", "function": {"name": "nothing", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_1_0", "content": "found"},
    {"role": "tool", "tool_call_id": "call_1_1", "content": ""},
    {"role": "assistant", "content": "Done."},
    {"role": "user", "content": "<<GOAL:x>> more", "name": "customer"},
    {"role": "system", "content": "Reminder."},
]
NOT_PLAIN = [
    [{"role": "user", "content": [{"type": "text", "text": "parts", "cache_control": {"type": "ephemeral"}}]}],
    [{"role": "user", "content": "hi", "cache_control": {"type": "ephemeral"}}],
    [{"content": "no role"}],
    [{"role": "developer", "content": "dev"}],
    [{"role": "assistant", "content": "", "tool_calls": []}],
    [{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                              "function": {"name": "f", "arguments": {"q": 1}}}]}],
]
PARAMS = [{"temperature": 0.0, "seed": 7, "drop_params": True},
          {"temperature": 0.0, "seed": 123456789, "drop_params": True, "parallel_tool_calls": False},
          {"temperature": 0.3, "seed": 7, "max_tokens": 64, "tool_choice": "required"},
          {"temperature": 1, "seed": True, "top_p": 0.5, "stop": ["x"]},
          {"temperature": 0.0}]
REBUILT = {"openai/o3-mini"}
"""Routes whose messages litellm rewrites (an o-series model's system prompt): litellm builds every call."""
MODELS = ["openai/fake-model", "hosted_vllm/fake-model", "openai/gpt-4o-mini", "openai/o3-mini", "openai/gpt-5"]


@pytest.fixture(autouse=True)
def _fresh_templates(monkeypatch):
    monkeypatch.setattr("shiftbox.llm._openai_body._templates", {})
    monkeypatch.setattr("shiftbox.llm._openai_body._checked", {})


async def litellm_bytes(request: LLMRequest, provider: str, model: str) -> bytes | str:
    """litellm's body as bytes, or the name of the error its building raised."""
    try:
        return dumps(await request_body(copy.deepcopy(request), provider, model)).encode()
    except Exception as exc:
        return type(exc).__name__


async def fast_bytes(request: LLMRequest, provider: str, model: str) -> bytes | str:
    try:
        return await encoded_body(request, provider, model)
    except Exception as exc:
        return type(exc).__name__


@pytest.mark.parametrize("route", MODELS)
async def test_templated_bytes_are_litellms_for_every_call_of_a_conversation(route):
    provider, _, model = route.partition("/")
    for params in PARAMS:
        for tools in (TOOLS, None):
            for n in range(1, len(CONVERSATION) + 1):
                for seed_shift in (0, 1):   # the seed changes per simulation: still one template
                    shifted = {**params, "seed": params["seed"] + seed_shift} if type(params.get("seed")) is int \
                        else params
                    request = LLMRequest(role="agent", model=route, messages=CONVERSATION[:n], tools=tools,
                                         params=shifted)
                    fast = await fast_bytes(request, provider, model)
                    assert fast == await litellm_bytes(request, provider, model), (params, n)
            request = LLMRequest(role="agent", model=route, messages=CONVERSATION, tools=tools,
                                 params={**params, "seed": 99} if type(params.get("seed")) is int else params)
            taken = cached_body(request, provider, model) is not None
            assert taken == (route not in REBUILT and isinstance(fast, bytes)), route


async def test_messages_that_are_not_plain_are_built_by_litellm():
    warm = LLMRequest(role="agent", model="openai/fake-model", messages=CONVERSATION[:2], tools=TOOLS,
                      params=PARAMS[0])
    await encoded_body(warm, "openai", "fake-model")
    for messages in NOT_PLAIN:
        assert plain_messages(messages) is None
        request = LLMRequest(role="agent", model="openai/fake-model", messages=[*CONVERSATION[:2], *messages],
                             tools=TOOLS, params=PARAMS[0])
        assert cached_body(request, "openai", "fake-model") is None
        assert await encoded_body(request, "openai", "fake-model") == await litellm_bytes(request, "openai",
                                                                                           "fake-model")


async def test_other_tools_or_params_get_their_own_template():
    first = LLMRequest(role="agent", model="openai/fake-model", messages=CONVERSATION[:2], tools=TOOLS,
                       params=PARAMS[0])
    await encoded_body(first, "openai", "fake-model")
    other_tools = copy.deepcopy(TOOLS)
    other_tools[0]["function"]["description"] = "Something else."
    for request in (first.model_copy(update={"tools": other_tools}),
                    first.model_copy(update={"params": {**PARAMS[0], "temperature": 0}}),   # 0, not 0.0
                    first.model_copy(update={"model": "openai/other"})):
        assert cached_body(request, "openai", request.model.partition("/")[2]) is None


class Text(str):
    """A str subclass: equal to the text, yet not a message `_frozen` vouches for."""


def variants(message: dict) -> list[dict]:
    """Messages equal (==) or nearly equal to `message` whose JSON or plainness differ: keys reordered, a value
    changed in place deep down, a str subclass, a number, a tuple for a list, a key added."""
    out = [dict(reversed(message.items())), {**message, "content": Text(message.get("content") or "")},
           {**message, "content": 1}, {**message, "extra": "x"}, {**message, "role": "developer"}]
    if message.get("tool_calls"):
        calls = copy.deepcopy(message["tool_calls"])
        calls[0]["function"]["arguments"] += " "
        reordered = copy.deepcopy(message["tool_calls"])
        reordered[0] = dict(reversed(reordered[0].items()))
        out += [{**message, "tool_calls": calls}, {**message, "tool_calls": reordered},
                {**message, "tool_calls": tuple(message["tool_calls"])}]
    return out


def test_messages_json_is_the_plain_messages_json_whatever_was_checked_before():
    """A message seen before is not checked again, yet a message that differs from it in anything its JSON or its
    plainness depends on (key order, a value's type, a deep change made in place) is never taken for it."""
    expected = lambda messages: None if plain_messages(messages) is None else dumps(plain_messages(messages))  # noqa: E731
    for n in range(1, len(CONVERSATION) + 1):
        assert messages_json(CONVERSATION[:n]) == expected(CONVERSATION[:n])
    for message in CONVERSATION:
        for variant in variants(message):
            messages = [*CONVERSATION[:2], variant]
            assert messages_json(messages) == expected(messages), variant
            assert messages_json(messages) == expected(messages), variant  # and once it was seen
    mutated = copy.deepcopy(CONVERSATION)
    assert messages_json(mutated) == expected(CONVERSATION)
    mutated[2]["tool_calls"][1]["function"]["name"] = "lookup"   # changed in place after it was seen
    assert messages_json(mutated) == expected(mutated) != expected(CONVERSATION)


def test_a_conversations_earlier_messages_are_checked_once(monkeypatch):
    checked = []
    original = _openai_body.plain_messages
    monkeypatch.setattr(_openai_body, "plain_messages", lambda messages: checked.extend(messages) or original(messages))
    for n in range(1, len(CONVERSATION) + 1):
        messages_json(copy.deepcopy(CONVERSATION[:n]))   # each call's messages are new dicts, as LLMRequest makes them
    assert checked == CONVERSATION


def test_a_roles_own_tools_list_is_compared_by_value_once():
    compared = []

    class Tools(list):
        def __eq__(self, other):
            compared.append(1)
            return list.__eq__(self, other)

        def __ne__(self, other):
            return not self.__eq__(other)

    tools = Tools(copy.deepcopy(TOOLS))
    request = lambda n: LLMRequest.of_role("agent", "openai/fake-model", CONVERSATION[:n], tools,  # noqa: E731
                                           {"temperature": 0.0, "seed": 7})
    own = _openai_body.own_body(request(2), "openai", "fake-model")
    _openai_body.remember(request(2), "openai", "fake-model", own)
    bodies = [cached_body(request(n), "openai", "fake-model") for n in range(2, len(CONVERSATION) + 1)]
    assert len(compared) == 1
    assert bodies[0] == dumps(own).encode()
    other = copy.deepcopy(TOOLS)
    other[1]["function"]["description"] = "another"
    assert cached_body(LLMRequest.of_role("agent", "openai/fake-model", CONVERSATION[:2], other,
                                          {"temperature": 0.0, "seed": 7}), "openai", "fake-model") is None
