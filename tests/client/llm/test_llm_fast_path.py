"""The fast path for OpenAI-compatible endpoints against the litellm path, both on the fake server: the
same request bodies, the same recorded responses and cassettes, the same error kinds and retries, the
same cost. `fast_path=false` is the litellm path (the openai SDK, which marks its requests with
`x-stainless-*` headers; the fast path sends none)."""

from __future__ import annotations

import json
import re

import pytest

from shiftbox import agent_from_spec, user_from_spec
from shiftbox.errors import LLMError
from shiftbox.llm import (
    Cassette,
    LLMConnection,
    LLMRequest,
    complete,
    use_cassette,
)
from shiftbox.llm._retries import complete_with_retries
from shiftbox.orchestrator import run_simulation, simulation_id
from shiftbox.testing import Reply, fake_openai
from shiftbox.world import open_world
from tests.client.agents.test_litellm_agent import AGENT_SCRIPT, TASKS, USER_SCRIPT

pytestmark = pytest.mark.anyio
PATHS = {"fast": True, "litellm": False}
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look it up.",
                                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                                          "required": ["q"]}}}]
MESSAGES = [
    {"role": "system", "content": "Be kind."},
    {"role": "user", "content": "héllo \u2603"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_1_0", "content": "found"},
]
REQUESTS = [
    {"tools": TOOLS, "params": {"temperature": 0.0, "seed": 7, "max_tokens": 64, "drop_params": True}},
    {"tools": TOOLS, "params": {"temperature": 0.3, "tool_choice": "required", "parallel_tool_calls": False}},
    {"tools": None, "params": {"temperature": 0.0}},
]
SCRIPT = [Reply.tool_call("lookup", {"q": "x"}, content="Checking."), Reply.tools(("lookup", {"q": "a"}),
                                                                                  ("lookup", {"q": "b"})),
          Reply.text("Done \u2603.", finish_reason="length")]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")


async def exchanges(model: str, fast: bool) -> tuple[list[dict], list[dict], list[dict]]:
    """Bodies the server received, headers it saw, responses the boundary returned, for REQUESTS."""
    with fake_openai(list(SCRIPT)) as server:
        connection = LLMConnection(api_base=server.base_url, fast_path=fast)
        responses = [await complete(LLMRequest(role="agent", model=model, messages=MESSAGES, **r), connection)
                     for r in REQUESTS]
    return server.requests, server.headers, responses


@pytest.mark.parametrize("model", ["openai/fake-model", "hosted_vllm/fake-model", "openai/gpt-4o-mini"])
async def test_both_paths_send_the_same_bodies_and_return_the_same_json(model):
    fast_bodies, fast_headers, fast = await exchanges(model, True)
    slow_bodies, slow_headers, slow = await exchanges(model, False)
    assert fast_bodies == slow_bodies
    assert json.dumps(fast) == json.dumps(slow)   # byte for byte, key order included
    assert not any("x-stainless-lang" in h for h in fast_headers)   # the fast path really was taken …
    if model.startswith("openai/"):
        assert all("x-stainless-lang" in h for h in slow_headers)   # … and the litellm path (the SDK) too
    assert [h["authorization"] for h in fast_headers] == [h["authorization"] for h in slow_headers]


async def test_cost_comes_from_the_price_map_for_the_model_named_once():
    _, _, fast = await exchanges("openai/gpt-4o-mini", True)
    _, _, slow = await exchanges("openai/gpt-4o-mini", False)
    costs = [r["shiftbox_cost_usd"] for r in fast]
    assert all(c > 0 for c in costs) and costs == [r["shiftbox_cost_usd"] for r in slow]


async def test_options_other_than_the_known_params_go_through_litellm():
    with fake_openai(["ok", "ok"]) as server:
        for params in ({"temperature": 0.0, "extra_headers": {"X-Test": "1"}}, {"temperature": 0.0}):
            await complete(LLMRequest(role="agent", model="openai/fake-model", messages=MESSAGES[:2], params=params),
                           LLMConnection(api_base=server.base_url))
    assert ["x-stainless-lang" in h for h in server.headers] == [True, False]
    assert server.headers[0]["x-test"] == "1"


def run_pair(agent_base: str, user_base: str, fast: bool):
    options = {"retry_backoff": "0", "fast_path": str(fast).lower()}
    return (agent_from_spec("litellm:openai/fake-model", {"api_base": agent_base, **options}),
            user_from_spec("litellm:openai/fake-model", {"api_base": user_base, **options}))


async def record(task, path, fast: bool):
    with fake_openai(AGENT_SCRIPT) as agent_server, fake_openai(USER_SCRIPT) as user_server:
        agent, sim_user = run_pair(agent_server.base_url, user_server.base_url, fast)
        async with open_world("banking") as world:
            with use_cassette(Cassette(simulation_id(task.id, 0), path, "record")):
                trajectory = await run_simulation(task, 0, 0, agent, sim_user, world)
    return trajectory, agent_server.requests + user_server.requests


async def test_cassettes_are_identical_and_replay_on_the_other_path(tmp_path):
    task = TASKS["hw_banking_001"]
    fast, fast_requests = await record(task, tmp_path / "fast.jsonl", True)
    slow, slow_requests = await record(task, tmp_path / "litellm.jsonl", False)
    assert fast.termination.reason == "user_stop"
    assert fast_requests == slow_requests
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "litellm.jsonl").read_bytes()
    assert fast.canonical_json() == slow.canonical_json()
    for recorded, fast_path in (("fast.jsonl", False), ("litellm.jsonl", True)):
        agent, sim_user = run_pair("http://127.0.0.1:9", "http://127.0.0.1:9", fast_path)   # nothing listens
        async with open_world("banking") as world:
            with use_cassette(Cassette(simulation_id(task.id, 0), tmp_path / recorded, "replay")):
                replayed = await run_simulation(task, 0, 0, agent, sim_user, world)
        assert replayed.canonical_json() == fast.canonical_json()


TAKEN = re.compile(r"time taken=[0-9.]+ seconds")
FAILURES = {
    "429": [Reply.rate_limit(headers={"retry-after-ms": "1"})],
    "500": [Reply.error(500, "upstream exploded")],
    "502": [Reply.error(502, "bad gateway")],
    "503": [Reply.error(503, "busy", headers={"retry-after": "0"})],
    "504": [Reply.error(504, "gateway timeout")],
    "401": [Reply.error(401, "bad key")],
    "403": [Reply.error(403, "forbidden")],
    "404": [Reply.error(404, "no such model")],
    "400": [Reply.error(400, "context too long")],
    "422": [Reply.error(422, "unprocessable")],
    "timeout": [Reply.text("late").delayed(1.0)],
    "not json": [Reply(status=200, body="this is not JSON")],
}


async def failure(script: list[Reply] | None, fast: bool, retries: int, content: str = "hi",
                  params: dict | None = None) -> tuple[str, str, int, str]:
    """(error class, cause, requests made, message) of one call that fails, with `retries` retries. Only the
    timeout script gets the short timeout: under load it cut other calls short, so the server had seen 1 or 2
    requests when counted (a flaky 429 case in CI)."""
    timeout_s = 0.3 if script is FAILURES["timeout"] else 30
    with fake_openai((script or []) * (retries + 1)) as server:
        base = server.base_url
        if script is None:
            server.stop()   # connection refused
        connection = LLMConnection(api_base=base, fast_path=fast, timeout_s=timeout_s)
        request = LLMRequest(role="agent", model="openai/fake-model", messages=[{"role": "user", "content": content}],
                             params=params or {})
        with pytest.raises(LLMError) as caught:
            await complete_with_retries(request, connection, retries=retries, backoff_s=0.0)
        made = len(server.requests)
    return type(caught.value).__name__, caught.value.cause, made, str(caught.value).replace(base, "BASE")  # auth names it


@pytest.mark.parametrize("case", [*FAILURES, "connection refused", "lone surrogate"])
async def test_errors_map_to_the_same_kinds_and_retries(case):
    script = FAILURES.get(case, ["never sent"] if case == "lone surrogate" else None)
    retries = 0 if case == "timeout" else 1
    content = "\ud83d" if case == "lone surrogate" else "hi"   # cannot be sent as UTF-8 by either path
    fast, slow = await failure(script, True, retries, content), await failure(script, False, retries, content)
    if case == "lone surrogate":   # the detail differs (position in the body)
        fast, slow = (*fast[:3], fast[3].split(" - ")[0]), (*slow[:3], slow[3].split(" - ")[0])
    if case == "timeout":   # both say how long it took, which differs
        fast, slow = (*fast[:3], TAKEN.sub("", fast[3])), (*slow[:3], TAKEN.sub("", slow[3]))
        assert "timeout value=0.3" in fast[3]
    assert fast == slow, case


NAMED_422 = [Reply(status=422, body=json.dumps({"error": {"message": json.dumps(
    {"detail": [{"loc": ["body", "seed"], "msg": "not supported"}]})}}))]


@pytest.mark.parametrize("case", ["422", "422 naming a param", "timeout"])
async def test_errors_map_the_same_with_drop_params(case):
    """shiftbox's options send drop_params, with which litellm's openai code would drop the parameters a
    422 names and send again; litellm's path does not (one request), so neither does the fast path."""
    retries = 0 if case == "timeout" else 1
    script = NAMED_422 if case == "422 naming a param" else FAILURES[case]
    params = {"drop_params": True, "seed": 3}
    fast = await failure(script, True, retries, params=params)
    slow = await failure(script, False, retries, params=params)
    fast, slow = (*fast[:3], TAKEN.sub("", fast[3])), (*slow[:3], TAKEN.sub("", slow[3]))
    assert fast == slow, case


async def test_a_transient_error_is_retried_then_succeeds_on_the_fast_path():
    with fake_openai([Reply.error(500, "once", headers={"retry-after-ms": "1"}), "ok"]) as server:
        response = await complete_with_retries(
            LLMRequest(role="agent", model="openai/fake-model", messages=MESSAGES[:2]),
            LLMConnection(api_base=server.base_url), retries=1, backoff_s=0.0)
    assert response["choices"][0]["message"]["content"] == "ok"
    assert len(server.requests) == 2 and server.requests[0] == server.requests[1]
    assert not any("x-stainless-lang" in h for h in server.headers)


async def test_the_litellm_path_takes_the_cost_litellm_computed_and_prices_nothing_again(monkeypatch):
    from shiftbox.llm import import_litellm

    def priced_again(*args):
        raise AssertionError("priced a second time")

    monkeypatch.setattr("shiftbox.llm._litellm.price_usd", priced_again)
    _, _, slow = await exchanges("openai/gpt-4o-mini", False)
    litellm = import_litellm()
    expected = [sum(litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=r["usage"]["prompt_tokens"],
                                           completion_tokens=r["usage"]["completion_tokens"])) for r in slow]
    assert [r["shiftbox_cost_usd"] for r in slow] == pytest.approx(expected) and all(c > 0 for c in expected)
