"""LLMJudge against the local fake OpenAI server: prompts, answer parsing, failures as None, usage."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shiftbox.llm import Cassette, Usage, use_cassette
from shiftbox.metrics import Judge, LLMJudge, NLVerdicts
from shiftbox.metrics._llm_judge import (
    ACK_SYSTEM_PROMPT,
    NL_SYSTEM_PROMPT,
    parse_acknowledges,
    parse_verdicts,
    render_transcript,
)
from shiftbox.testing import FakeOpenAI, Reply, count_tokens, fake_openai
from shiftbox.trajectory import (
    GoalShift,
    Message,
    ServerInfo,
    Termination,
    ToolCall,
    Trajectory,
)

ASSERTIONS = [
    "The agent verified the user's identity before changing the address.",
    "The agent told the user the new delivery date.",
    "The agent did not offer a refund.",
]


def trajectory() -> Trajectory:
    messages = [
        Message(index=0, role="assistant", content="Hi! How can I help you today?", agent_turn=0),
        Message(index=1, role="user", content="I need to change the address on order W123.",
                goal="change_address"),
        Message(index=2, role="assistant", content="Sure, let me look up the order.", agent_turn=1,
                tool_calls=[ToolCall(id="t1_0", name="get_order_details", arguments={"order_id": "W123"})]),
        Message(index=3, role="tool", tool_call_id="t1_0", content='{"status": "pending", "zip": "10001"}',
                is_error=False),
        Message(index=4, role="assistant", content="Done: the address is updated.", agent_turn=2),
        Message(index=5, role="user", content="Also, can you cancel order W456 instead?",
                goal="cancel_order"),
        Message(index=6, role="assistant", content="Of course, cancelling W456 now.", agent_turn=3,
                tool_calls=[ToolCall(id="t3_0", name="cancel_pending_order",
                                     arguments={"order_id": "W456", "reason": "no longer needed"})]),
        Message(index=7, role="tool", tool_call_id="t3_0", content="order not found: W456", is_error=True),
        Message(index=8, role="assistant", content="I could not find W456. ###TRANSFER###", agent_turn=4),
    ]
    return Trajectory(
        simulation_id="sim-1", task_id="retail_1", trial=0, domain="retail", seed=7,
        agent="scripted", user="scripted", persona="hurried", goals=["change_address", "cancel_order"],
        servers={"retail": ServerInfo(name="retail", version="0.1.0", snapshot="v1", snapshot_sha256="0" * 64)},
        messages=messages, tool_calls=[],
        shifts=[GoalShift(shift_index=1, from_goal="change_address", to_goal="cancel_order", message_index=5)],
        termination=Termination(reason="agent_transfer"), final_state={"retail": "abc"},
    )


def judge_for(server: FakeOpenAI, **kw: Any) -> LLMJudge:
    return LLMJudge("openai/fake-model", api_base=server.base_url, api_key="sk-test", **kw)


def verdicts(*met: bool) -> str:
    return json.dumps({"verdicts": [{"index": i, "met": m, "reason": "because"}
                                    for i, m in enumerate(met, start=1)]})


def prompt_of(request: dict[str, Any]) -> str:
    return request["messages"][-1]["content"]


def test_llm_judge_satisfies_the_protocol() -> None:
    judge: Judge = LLMJudge("openai/fake-model")
    assert judge.name == "llm:openai/fake-model"


def test_prompt_has_every_assertion_and_the_transcript() -> None:
    with fake_openai([verdicts(True, False, True)]) as server:
        result = judge_for(server).nl_assertions(trajectory(), ASSERTIONS)
    assert result is not None
    assert result.met == [True, False, True]
    request = server.requests[0]
    assert request["model"] == "fake-model"
    assert request["temperature"] == 0.0
    assert request["messages"][0] == {"role": "system", "content": NL_SYSTEM_PROMPT}
    prompt = prompt_of(request)
    for i, assertion in enumerate(ASSERTIONS, start=1):
        assert f"{i}. {assertion}" in prompt
    for text in ("[1] user: I need to change the address on order W123.",
                 "[2] assistant: Sure, let me look up the order.",
                 '[2] assistant calls tool get_order_details({"order_id":"W123"})',
                 '[3] tool result get_order_details: {"status": "pending", "zip": "10001"}',
                 "[7] tool result cancel_pending_order (error): order not found: W456",
                 "[8] assistant: I could not find W456. ###TRANSFER###"):
        assert text in prompt
    assert "(3 in\ntotal)" in prompt


def test_usage_is_recorded_per_call_and_accumulates() -> None:
    with fake_openai([verdicts(True, True, True), Reply.text(verdicts(False, False, False))]) as server:
        judge = judge_for(server)
        first = judge.nl_assertions(trajectory(), ASSERTIONS)
        second = judge.nl_assertions(trajectory(), ASSERTIONS)
    assert first is not None and second is not None
    expected_prompt = count_tokens(json.dumps({"messages": server.requests[0]["messages"], "tools": []},
                                              sort_keys=True, separators=(",", ":")))
    assert first.usage == Usage(prompt_tokens=expected_prompt,
                                completion_tokens=count_tokens(verdicts(True, True, True)),
                                cost_usd=0.0, calls=1)
    assert second.met == [False, False, False]
    assert judge.usage.calls == 2
    assert judge.usage.prompt_tokens == first.usage.prompt_tokens + second.usage.prompt_tokens
    assert judge.usage.completion_tokens == (first.usage.completion_tokens
                                             + second.usage.completion_tokens)
    assert [entry["kind"] for entry in judge.log] == ["nl_assertions", "nl_assertions"]
    assert judge.log[0]["result"]["reasons"] == ["because"] * 3


def test_explicit_usage_from_the_server_is_used() -> None:
    with fake_openai([Reply.text(verdicts(True, True, True), prompt_tokens=1234, completion_tokens=56)]) as server:
        result = judge_for(server).nl_assertions(trajectory(), ASSERTIONS)
    assert result is not None
    assert result.usage.prompt_tokens == 1234 and result.usage.completion_tokens == 56


def test_json_in_code_fence_with_prose() -> None:
    answer = "Here is my evaluation:\n```json\n" + verdicts(False, True, False) + "\n```\nHope that helps."
    with fake_openai([answer]) as server:
        result = judge_for(server).nl_assertions(trajectory(), ASSERTIONS)
    assert result is not None and result.met == [False, True, False]
    assert isinstance(result, NLVerdicts) and result.judge == "llm:openai/fake-model"


@pytest.mark.parametrize("answer", [
    verdicts(True, True),                      # one verdict missing
    verdicts(True, True, True, True),          # one too many
    '{"verdicts": [{"met": true}, {"met": true}]}',  # positional, one missing
    "I think they are all met.",               # no JSON
    '{"verdicts": [{"index": 1, "met": "maybe"}, {"index": 2, "met": true}, {"index": 3, "met": true}]}',
    '{"verdicts": [{"index": 1, "met": true}, {"index": 1, "met": true}, {"index": 3, "met": true}]}',
    '{"verdicts": "all met"}',
    "",
])
def test_unusable_answer_gives_none(answer: str) -> None:
    with fake_openai([answer]) as server:
        judge = judge_for(server)
        assert judge.nl_assertions(trajectory(), ASSERTIONS) is None
    assert judge.log[0]["error"]
    assert judge.usage.calls == 1  # the call still cost tokens


@pytest.mark.parametrize("reply", [Reply.error(500, "boom"), Reply.rate_limit(), Reply.error(400, "bad")])
def test_server_error_gives_none_and_never_raises(reply: Reply) -> None:
    with fake_openai([reply] * 3) as server:
        judge = judge_for(server, max_retries=0)
        assert judge.nl_assertions(trajectory(), ASSERTIONS) is None
        assert judge.acknowledges(trajectory(), trajectory().messages[6], "cancel_order") is None
    assert len(server.requests) == 2
    assert judge.usage.calls == 0
    assert all("Error" in entry["error"] for entry in judge.log)


def test_retries_are_used_before_giving_up() -> None:
    with fake_openai([Reply.error(503, "busy", headers={"retry-after-ms": "10"}),
                      verdicts(True, True, True)]) as server:
        result = judge_for(server, max_retries=1).nl_assertions(trajectory(), ASSERTIONS)
    assert result is not None and len(server.requests) == 2


def test_unreachable_server_gives_none() -> None:
    with fake_openai([]) as server:
        base = server.base_url
    judge = LLMJudge("openai/fake-model", api_base=base, api_key="sk-test", max_retries=0,
                     extra={"timeout": 2})
    assert judge.nl_assertions(trajectory(), ASSERTIONS) is None
    assert "Error" in judge.log[0]["error"]


def test_no_assertions_needs_no_call() -> None:
    with fake_openai([]) as server:
        result = judge_for(server).nl_assertions(trajectory(), [])
    assert result is not None and result.met == []
    assert server.requests == []


def test_extra_kwargs_reach_the_request() -> None:
    with fake_openai([verdicts(True, True, True)]) as server:
        judge_for(server, extra={"max_tokens": 300, "seed": 3}).nl_assertions(trajectory(), ASSERTIONS)
    assert server.requests[0]["max_tokens"] == 300 and server.requests[0]["seed"] == 3


# -- acknowledgment ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("answer", "expected"), [
    ('{"acknowledges": true}', True),
    ('```json\n{"acknowledges": false}\n```', False),
    ('Sure. {"acknowledges": true} is my answer.', True),
    ("yes", None),
    ('{"acknowledges": "perhaps"}', None),
])
def test_acknowledges(answer: str, expected: bool | None) -> None:
    traj = trajectory()
    with fake_openai([answer]) as server:
        judge = judge_for(server)
        assert judge.acknowledges(traj, traj.messages[6], "cancel_order") is expected
    request = server.requests[0]
    assert request["messages"][0] == {"role": "system", "content": ACK_SYSTEM_PROMPT}
    prompt = prompt_of(request)
    assert "The user's new goal: cancel_order" in prompt
    assert "the assistant message [6]" in prompt
    assert '[6] assistant calls tool cancel_pending_order({"order_id":"W456","reason":"no longer needed"})' in prompt
    assert "[5] user: Also, can you cancel order W456 instead?" in prompt
    assert "I could not find W456" not in prompt  # nothing after the message under review
    assert judge.usage.calls == 1 and judge.log[0]["kind"] == "acknowledges"


# -- pure helpers --------------------------------------------------------------------------------------


def test_parse_verdicts_reorders_by_index() -> None:
    text = '{"verdicts": [{"index": 2, "met": false}, {"index": 1, "met": true}]}'
    assert parse_verdicts(text, 2) == ([True, False], ["", ""])


def test_parse_verdicts_without_indices_is_positional() -> None:
    assert parse_verdicts('{"verdicts": [{"met": false}, {"met": "true"}]}', 2) == ([False, True], ["", ""])


def test_parse_verdicts_skips_other_json_objects() -> None:
    text = 'Scratch: {"note": 1}. Final: {"verdicts": [{"index": 1, "met": true, "reason": "ok"}]}'
    assert parse_verdicts(text, 1) == ([True], ["ok"])


def test_parse_acknowledges_requires_the_key() -> None:
    assert parse_acknowledges('{"ack": true}') is None
    assert parse_acknowledges('{"acknowledges": false}') is False


def test_transcript_cuts_long_tool_results() -> None:
    traj = trajectory()
    traj.messages[3].content = "x" * 5000
    text = render_transcript(traj, tool_max_chars=100)
    assert "x" * 100 + "... [4900 more chars]" in text
    assert render_transcript(traj, upto=1).splitlines() == [
        "[0] assistant: Hi! How can I help you today?",
        "[1] user: I need to change the address on order W123."]


def test_judge_calls_are_recorded_and_replayed_at_the_llm_boundary(tmp_path) -> None:
    path = tmp_path / "judge.jsonl"
    with fake_openai([verdicts(True, False, True)]) as server:
        with use_cassette(Cassette("judge", path, "record")):
            recorded = judge_for(server).nl_assertions(trajectory(), ASSERTIONS)
    assert recorded is not None and recorded.met == [True, False, True]
    [interaction] = Cassette("judge", path, "replay").interactions
    assert interaction.request.role == "judge" and interaction.request.params == {"temperature": 0.0}
    with use_cassette(Cassette("judge", path, "replay")):  # no server: the answer comes from the recording
        replayed = LLMJudge("openai/fake-model").nl_assertions(trajectory(), ASSERTIONS)
    assert replayed == recorded


def test_a_replay_that_differs_from_the_recording_is_raised_not_taken_for_not_judged(tmp_path) -> None:
    """A cassette miss means the replay does not repeat the recording: scoring must stop and say so, not go on
    with the part quietly "not judged" (which would change the metrics without a word)."""
    from shiftbox.errors import CassetteMiss

    path = tmp_path / "judge.jsonl"
    with fake_openai([verdicts(True, False, True)]) as server:
        with use_cassette(Cassette("judge", path, "record")):
            judge_for(server).nl_assertions(trajectory(), ASSERTIONS)
    with use_cassette(Cassette("judge", path, "replay")), pytest.raises(CassetteMiss, match="request differs"):
        LLMJudge("openai/fake-model").nl_assertions(trajectory(), ASSERTIONS[:2])
