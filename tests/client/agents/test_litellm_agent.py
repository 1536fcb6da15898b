"""The LLM agent against the local fake OpenAI server: requests it sends, replies it builds, failures,
and full simulations (with the LLM user simulator) recorded and replayed through cassettes."""

from __future__ import annotations

import json

import pytest

from shiftbox import SpecError, agent_from_spec
from shiftbox.agents import (
    INVALID_JSON_KEY,
    AgentContext,
    LiteLLMAgent,
    parse_arguments,
    tool_schema,
)
from shiftbox.errors import LLMRequestRejected, LLMUnavailable
from shiftbox.llm import Cassette, use_cassette
from shiftbox.orchestrator import run_simulation, simulation_id
from shiftbox.testing import Reply, ToolCallReply, fake_openai
from shiftbox.trajectory import Message, ToolCall
from shiftbox.world import InfrastructureError, open_world
from tests.client.harness import handwritten

pytestmark = pytest.mark.anyio
TASKS = {t.id: t for t in handwritten().tasks}
MODEL = "openai/fake-model"
POLICY = "# Test policy\nAlways be kind."
TOOLS = [
    {"name": "lookup", "description": "Look something up.",
     "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"],
                     "additionalProperties": False}},
    {"name": "ping", "inputSchema": {"type": "object", "properties": {}}},
]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")


def opts(server, **extra: str) -> dict[str, str]:
    """Options pointing at a fake server (or at its former address, a str, once it is stopped)."""
    base = server if isinstance(server, str) else server.base_url
    return {"api_base": base, "retry_backoff": "0", **extra}


def agent_for(server, **extra: str) -> LiteLLMAgent:
    return agent_from_spec(f"litellm:{MODEL}", opts(server, **extra))


async def started(server, one_tool_per_turn=False, tools=TOOLS, seed=11, **extra: str) -> LiteLLMAgent:
    agent = agent_for(server, **extra)
    await agent.start(AgentContext(domain="banking", policy=POLICY, tools=tools, seed=seed,
                                   one_tool_per_turn=one_tool_per_turn))
    return agent


def user(content: str, index: int = 0) -> Message:
    return Message(index=index, role="user", content=content)


# -- what the agent sends -----------------------------------------------------------------------------


async def test_tool_schemas_sent_match_the_mcp_tools():
    async with open_world("banking") as world:
        tools = world.tools
        policy = world.domain.policy
    with fake_openai(["Hello!"]) as server:
        agent = agent_for(server)
        await agent.start(AgentContext(domain="banking", policy=policy, tools=tools, seed=5))
        reply = await agent.respond([user("hi")])
    assert reply.content == "Hello!" and reply.tool_calls == []
    sent = server.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == [t["name"] for t in tools]
    for schema, tool in zip(sent["tools"], tools, strict=True):
        assert schema == {"type": "function", "function": {
            "name": tool["name"], "description": tool["description"], "parameters": tool["inputSchema"]}}
    system = sent["messages"][0]
    assert system["role"] == "system" and policy.strip() in system["content"]
    assert sent["messages"][1:] == [{"role": "user", "content": "hi"}]
    # determinism: temperature and the simulation's seed go with every request
    assert sent["temperature"] == 0.0 and sent["seed"] == 5
    assert "parallel_tool_calls" not in sent


async def test_agents_started_on_one_tools_list_send_one_schema_list():
    """Regression: every simulation's agent built its own copy of the tool schemas, and the body templates know a
    tools list by identity for 64 lists at most; with more simulations in flight (256) nearly every agent call
    compared its 20 schemas by value again. Agents started on the same tools (a world's, every simulation of a
    run) now send the same list."""
    import copy

    with fake_openai(["ok"]) as server:
        agents = [await started(server, seed=i) for i in range(100)]
        other = await started(server, tools=copy.deepcopy(TOOLS))  # other schema objects: its own list, equal
    sent = [agent.request([user("hi")]).tools for agent in agents]
    assert len({id(tools) for tools in sent}) == 1
    assert sent[0] == [tool_schema(t) for t in TOOLS]
    assert other.request([user("hi")]).tools == sent[0] and other.request([user("hi")]).tools is not sent[0]


async def test_options_become_request_params():
    with fake_openai(["ok"]) as server:
        agent = await started(server, temperature="0.3", seed="42", max_tokens="64",
                              **{"extra.top_p": "0.5", "extra.presence_penalty": "0.25"})
        await agent.respond([user("hi")])
    sent = server.requests[0]
    assert (sent["temperature"], sent["seed"], sent["max_tokens"], sent["top_p"], sent["presence_penalty"]) == (
        0.3, 42, 64, 0.5, 0.25)
    assert agent.name == f"litellm:{MODEL}"
    assert agent.usage.calls == 1 and agent.usage.prompt_tokens > 0


async def test_tool_without_description_or_schema_still_converts():
    with fake_openai(["ok"]) as server:
        agent = await started(server, tools=[{"name": "bare"}])
        await agent.respond([user("hi")])
    assert server.requests[0]["tools"] == [{"type": "function", "function": {
        "name": "bare", "description": "", "parameters": {"type": "object", "properties": {}}}}]


async def test_conversation_is_converted_with_the_harness_ids():
    history = [
        user("find x", 0),
        Message(index=1, role="assistant", agent_turn=0, content="Looking.", tool_calls=[
            ToolCall(id="call_0_0", name="lookup", arguments={"q": "x"}),
            ToolCall(id="call_0_1", name="ping", arguments={})]),
        Message(index=2, role="tool", tool_call_id="call_0_0", content='{"found": true}'),
        Message(index=3, role="tool", tool_call_id="call_0_1", content='{"pong": 1}', is_error=False),
        Message(index=4, role="assistant", agent_turn=1, content="Found it."),
        user("thanks", 5),
    ]
    with fake_openai(["You're welcome."]) as server:
        agent = await started(server)
        await agent.respond(history)
    assert server.requests[0]["messages"][1:] == [
        {"role": "user", "content": "find x"},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "call_0_0", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}},
            {"id": "call_0_1", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_0_0", "content": '{"found": true}'},
        {"role": "tool", "tool_call_id": "call_0_1", "content": '{"pong": 1}'},
        {"role": "assistant", "content": "Found it."},
        {"role": "user", "content": "thanks"},
    ]


# -- what the agent returns ---------------------------------------------------------------------------


async def test_tool_call_ids_come_from_the_turn_not_the_provider():
    script = [Reply.tools(ToolCallReply(name="lookup", arguments={"q": "a"}, id="provider-random-77"),
                          ToolCallReply(name="ping", arguments={}, id="provider-random-78"))]
    history = [user("hi"), Message(index=1, role="assistant", agent_turn=0, content="Hello"),
               Message(index=2, role="user", content="go"),
               Message(index=3, role="assistant", agent_turn=1, content="Sure"), user("now", 4)]
    with fake_openai(script * 2) as server:
        first = await (await started(server)).respond(history)
        again = await (await started(server)).respond(history)
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_2_0", "lookup", {"q": "a"}), ("call_2_1", "ping", {})]
    assert first == again


async def test_invalid_json_arguments_are_kept_for_the_server_to_reject():
    with fake_openai([Reply.tool_call("lookup", '{"q": "unterminated')]) as server:
        reply = await (await started(server)).respond([user("hi")])
    assert reply.tool_calls == [ToolCall(id="call_0_0", name="lookup",
                                         arguments={INVALID_JSON_KEY: '{"q": "unterminated'})]
    assert parse_arguments("") == {} and parse_arguments(None) == {}
    assert parse_arguments("[1, 2]") == {INVALID_JSON_KEY: "[1, 2]"}
    assert parse_arguments('{"a": 1}') == {"a": 1}


async def test_one_tool_per_turn_asks_for_one_and_keeps_only_the_first():
    two = Reply.tools(("lookup", {"q": "a"}), ("ping", {}))
    with fake_openai([two, two]) as server:
        single = await (await started(server, one_tool_per_turn=True)).respond([user("hi")])
        parallel = await (await started(server)).respond([user("hi")])
    assert [c.name for c in single.tool_calls] == ["lookup"]
    assert [c.name for c in parallel.tool_calls] == ["lookup", "ping"]
    assert server.requests[0]["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in server.requests[1]
    assert "at most one tool call per turn" in server.requests[0]["messages"][0]["content"]


# -- failures -----------------------------------------------------------------------------------------


async def test_rate_limit_is_retried_then_succeeds():
    script = [Reply.rate_limit(headers={"retry-after-ms": "1"}), Reply.error(503, "busy"), "Back again."]
    with fake_openai(script) as server:
        reply = await (await started(server, max_retries="2")).respond([user("hi")])
    assert reply.content == "Back again." and len(server.requests) == 3
    assert server.requests[0] == server.requests[2]   # retries resend the same request


async def test_retries_are_bounded_and_the_error_names_the_cause():
    with fake_openai([Reply.rate_limit(headers={"retry-after-ms": "1"})] * 3) as server:
        agent = await started(server, max_retries="1")
        with pytest.raises(LLMUnavailable) as caught:
            await agent.respond([user("hi")])
    assert len(server.requests) == 2
    assert caught.value.cause == "rate_limit" and "rate_limit" in str(caught.value)
    assert "2 attempts" in str(caught.value)
    assert isinstance(caught.value, InfrastructureError)   # not the agent's behaviour


async def test_refused_request_is_not_retried():
    with fake_openai([Reply.error(400, "context too long"), "never"]) as server:
        agent = await started(server, max_retries="3")
        with pytest.raises(LLMRequestRejected, match="bad_request.*context too long"):
            await agent.respond([user("hi")])
    assert len(server.requests) == 1


async def test_connection_refused_is_unavailable():
    with fake_openai([]) as server:
        agent = await started(server, max_retries="1")
    with pytest.raises(LLMUnavailable) as caught:   # the server is gone
        await agent.respond([user("hi")])
    assert caught.value.cause == "connection"


async def test_api_key_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("SHIFTBOX_TEST_LLM_KEY", "sk-named-secret")
    with fake_openai(["ok", "ok"], api_key="sk-named-secret") as server:
        good = await started(server, api_key_env="SHIFTBOX_TEST_LLM_KEY")
        assert (await good.respond([user("hi")])).content == "ok"
        wrong = await started(server, max_retries="3")   # OPENAI_API_KEY: not the one the server wants
        with pytest.raises(LLMUnavailable, match="auth"):
            await wrong.respond([user("hi")])
    assert server.headers[0]["authorization"] == "Bearer sk-named-secret"


@pytest.mark.parametrize(("options", "message"), [
    ({"bogus": "1"}, "unknown option 'bogus'; allowed options: api_base, api_key_env"),
    ({"api_key": "sk-oops"}, "never pass an API key"),
    ({"temperature": "warm"}, "temperature='warm' must be a number"),
    ({"seed": "1.5"}, "seed='1.5' must be an integer"),
    ({"max_retries": "-1"}, "max_retries must be >= 0"),
    ({"api_key_env": "not a name"}, "must name an environment variable"),
    ({"extra.messages": "[]"}, "'extra.messages' is not allowed"),
    ({"drop_params": "maybe"}, "must be true or false"),
])
def test_options_are_validated(options, message):
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        agent_from_spec(f"litellm:{MODEL}", options)


def test_model_is_required():
    with pytest.raises(SpecError, match="needs a model"):
        agent_from_spec("litellm", {})


# -- full simulations (LLM agent + LLM user, each on its own fake server) ------------------------------

AGENT_SCRIPT = [
    Reply.text("Happy to help. What is the phone number on your account?"),
    Reply.tool_call("get_customer_by_phone", {"phone_number": "+15555640027"}, id="prov-a"),
    Reply.text("Thank you, Adrian, you are verified. Is there anything else I can help with?"),
    Reply.tool_call("get_transactions", '{"account_id": "acc_00018"', id="prov-b"),   # malformed JSON
    Reply.tool_call("get_transactions", {"account_id": "acc_00018"}, id="prov-c"),
    Reply.text("Your latest transactions include tx_000422."),
    Reply.tool_call("file_dispute", {"account_id": "acc_00018", "tx_id": "tx_000422",
                                     "reason_code": "unauthorized"}, id="prov-d"),
    Reply.text("The dispute is filed. Anything else?"),
]
USER_SCRIPT = [
    "<<GOAL:authentication>> Hello, I need to get into my account.",
    "It is +15555640027.",
    "<<GOAL:transactions>> Yes, could you show me my recent transactions?",
    "Thanks. <<GOAL:dispute>> I want to dispute tx_000422, I never made it.",
    "Thank you, that's everything. ###STOP###",
]


def make_pair(agent_server, user_server, **agent_extra: str):
    from shiftbox import user_from_spec

    return (agent_from_spec(f"litellm:{MODEL}", opts(agent_server, **agent_extra)),
            user_from_spec(f"litellm:{MODEL}", opts(user_server)))


async def test_simulation_with_llm_agent_and_llm_user():
    task = TASKS["hw_banking_001"]
    with fake_openai(AGENT_SCRIPT) as agent_server, fake_openai(USER_SCRIPT) as user_server:
        agent, sim_user = make_pair(agent_server, user_server)
        async with open_world("banking") as world:
            t = await run_simulation(task, 0, 0, agent, sim_user, world)
        assert agent_server.errors == [] and user_server.errors == []
    assert t.termination.reason == "user_stop"
    assert [(c.name, c.error_kind) for c in t.tool_calls] == [
        ("get_customer_by_phone", None), ("get_transactions", "invalid_arguments"),
        ("get_transactions", None), ("file_dispute", None)]
    # ids derived from the agent turn, never the provider's
    for call in t.tool_calls:
        asked = t.messages[call.message_index]
        assert call.call_id == f"call_{asked.agent_turn}_0"
    assert t.tool_calls[1].arguments == {INVALID_JSON_KEY: '{"account_id": "acc_00018"'}
    # shifts recorded at the user messages that carried the tokens
    users = [m for m in t.messages if m.role == "user"]
    assert [m.goal for m in users] == ["authentication", "authentication", "transactions", "dispute", "dispute"]
    assert [(s.from_goal, s.to_goal, s.message_index) for s in t.shifts] == [
        ("authentication", "transactions", users[2].index), ("transactions", "dispute", users[3].index)]
    assert users[3].content == "Thanks. I want to dispute tx_000422, I never made it."
    # the agent never saw a control token, in the trajectory or in any request its model received
    assert not any("GOAL" in (m.content or "") for m in t.messages)
    for request in agent_server.requests:
        assert "<<" not in json.dumps(request) and "GOAL:" not in json.dumps(request)
        ids = [c["id"] for m in request["messages"] for c in m.get("tool_calls", [])]
        assert not any(i.startswith("prov-") for i in ids)
    # the agent's model got the tool results under the harness ids
    last = agent_server.requests[-1]["messages"]
    tool_ids = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert tool_ids == ["call_1_0", "call_3_0", "call_4_0", "call_6_0"]
    # the user's model saw the agent's texts as "user" and no tool traffic
    seen = user_server.requests[-1]["messages"]
    assert [m["role"] for m in seen] == ["system"] + ["user", "assistant"] * 4 + ["user"]
    assert not any("tx_000422" in m["content"] and m["role"] == "tool" for m in seen)


async def test_timing_splits_the_wall_time_into_llm_and_mcp():
    """llm_s covers every completion (each scripted reply waits 0.05 s), mcp_s every tool call and state read."""
    task = TASKS["hw_banking_001"]
    delay = 0.05
    with fake_openai([r.delayed(delay) for r in AGENT_SCRIPT]) as agent_server, \
            fake_openai([Reply.text(u).delayed(delay) for u in USER_SCRIPT]) as user_server:
        agent, sim_user = make_pair(agent_server, user_server)
        async with open_world("banking") as world:
            t = await run_simulation(task, 0, 0, agent, sim_user, world)
        completions = len(agent_server.requests) + len(user_server.requests)
    assert t.termination.reason == "user_stop"
    timing = t.timing
    assert timing["llm_s"] >= completions * delay
    assert timing["mcp_s"] > 0 and sum(c.timing["latency_ms"] for c in t.tool_calls) / 1000 <= timing["mcp_s"]
    assert timing["llm_s"] + timing["mcp_s"] <= timing["wall_s"]


async def test_persistent_server_error_ends_the_simulation_with_a_reason():
    task = TASKS["hw_banking_001"]
    failing = lambda body: Reply.error(500, "upstream exploded", headers={"retry-after-ms": "1"})  # noqa: E731
    with fake_openai(failing) as agent_server, fake_openai(USER_SCRIPT) as user_server:
        agent, sim_user = make_pair(agent_server, user_server, max_retries="2")
        async with open_world("banking") as world:
            t = await run_simulation(task, 0, 0, agent, sim_user, world)   # no exception escapes
    assert len(agent_server.requests) == 3
    assert t.termination.reason in ("agent_error", "infrastructure_error")
    assert t.termination.blame == ("agent" if t.termination.reason == "agent_error" else "infrastructure")
    assert "server_error" in t.termination.detail and "3 attempts" in t.termination.detail
    assert "upstream exploded" in t.termination.detail
    assert [m.role for m in t.messages] == ["user"]


async def test_record_then_replay_gives_the_same_trajectory_without_the_servers(tmp_path):
    task = TASKS["hw_banking_001"]
    sim = simulation_id(task.id, 0)
    path = tmp_path / "c.jsonl"
    with fake_openai(AGENT_SCRIPT) as agent_server, fake_openai(USER_SCRIPT) as user_server:
        agent_server, user_server = agent_server.base_url, user_server.base_url
        agent, sim_user = make_pair(agent_server, user_server)
        async with open_world("banking") as world:
            with use_cassette(Cassette(sim, path, "record")):
                recorded = await run_simulation(task, 0, 0, agent, sim_user, world)
    assert recorded.termination.reason == "user_stop"
    text = path.read_text()
    assert len(text.splitlines()) == len(AGENT_SCRIPT) + len(USER_SCRIPT)
    assert "sk-test-key" not in text and agent_server not in text   # no keys, no endpoints

    # both fake servers are stopped now: every answer must come from the cassette
    agent, sim_user = make_pair(agent_server, user_server)
    async with open_world("banking") as world:
        with use_cassette(Cassette(sim, path, "replay")):
            replayed = await run_simulation(task, 0, 0, agent, sim_user, world)
    assert replayed.canonical_json() == recorded.canonical_json()

    # a different agent setting asks for something the recording does not have: a clear mismatch
    agent, sim_user = make_pair(agent_server, user_server, temperature="0.7")
    async with open_world("banking") as world:
        with use_cassette(Cassette(sim, path, "replay")):
            diverged = await run_simulation(task, 0, 0, agent, sim_user, world)
    assert diverged.termination.reason == "replay_mismatch"
    assert "request differs in params.temperature" in diverged.termination.detail


async def test_each_message_is_converted_once_per_conversation_and_requests_stay_the_conversation(monkeypatch):
    """The agent's request for turn n converts only the messages new since its last request (not the whole
    conversation again on every call); a conversation that is not the one sent before is converted afresh."""
    from shiftbox.agents import _litellm as module

    converted: list[Message] = []
    original = module.to_openai_messages
    monkeypatch.setattr(module, "to_openai_messages", lambda ms: converted.extend(ms) or original(ms))
    agent = await started("http://127.0.0.1:9")
    conversation = [user("hi", 0),
                    Message(index=1, role="assistant", content=None, agent_turn=0,
                            tool_calls=[ToolCall(id="call_0_0", name="lookup", arguments={"q": "x", "a": [1]})]),
                    Message(index=2, role="tool", content="found", tool_call_id="call_0_0"),
                    Message(index=3, role="assistant", content="Found it.", agent_turn=1),
                    user("thanks", 4)]
    system = {"role": "system", "content": agent.system_prompt}
    for n in range(1, len(conversation) + 1):
        assert agent.request(list(conversation[:n])).messages == [system, *original(conversation[:n])]
    assert converted == conversation   # each once, not 1 + 2 + ... + n
    other = [user("another conversation", 0)]
    assert agent.request(other).messages == [system, *original(other)]
    assert agent.request(conversation[:2]).messages == [system, *original(conversation[:2])]
