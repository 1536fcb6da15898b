"""The VitaBench rubric sliding-window judge against the local fake OpenAI server: windows worked out by hand,
items met once stay met, unusable answers leave the rubric not judged, cost counted as the judge's."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from shiftbox.llm import Cassette, Usage, use_cassette
from shiftbox.metrics import LLMJudge, compute_run_metrics
from shiftbox.metrics._llm_judge import RUBRIC_SYSTEM_PROMPT
from shiftbox.metrics._rubric import rubric_score, rubric_windows
from shiftbox.tasks import EvaluationCriteria, GoalShifts, Instructions, Task, UserScenario
from shiftbox.testing import FakeOpenAI, Reply, fake_openai
from shiftbox.trajectory import Message, ServerInfo, Termination, ToolCall, Trajectory

ITEMS = ["The agent greets the user.", "The agent looks up the order.", "The agent confirms the refund."]


def conversation(n: int = 12) -> list[Message]:
    """n messages repeating: assistant text, user text, an assistant tool call, its result."""
    messages: list[Message] = []
    while len(messages) < n:
        i = len(messages)
        if i % 4 == 0:
            messages.append(Message(index=i, role="assistant", content=f"agent says {i}", agent_turn=i // 2))
        elif i % 4 == 1:
            messages.append(Message(index=i, role="user", content=f"user says {i}"))
        elif i % 4 == 2:
            messages.append(Message(index=i, role="assistant", agent_turn=i // 2, content=None,
                                    tool_calls=[ToolCall(id=f"c{i}", name="get_order", arguments={"n": i})]))
        else:
            messages.append(Message(index=i, role="tool", tool_call_id=f"c{i - 1}", content=f"result {i}",
                                    is_error=False))
    return messages


def trajectory(n: int = 12, sim: str = "t1#0") -> Trajectory:
    return Trajectory(
        simulation_id=sim, task_id="t1", trial=0, domain="nodomain", seed=1, agent="a", user="scripted",
        persona=None, goals=["refund"],
        servers={"nodomain": ServerInfo(name="x", version="0", snapshot="v1", snapshot_sha256="0" * 64)},
        messages=conversation(n), tool_calls=[], shifts=[], termination=Termination(reason="user_stop"),
        final_state={"nodomain": "d"})


def task(items: list[str] = ITEMS) -> Task:
    return Task(id="t1", domain="nodomain",
                user_scenario=UserScenario(instructions=Instructions(reason_for_call="refund"),
                                           goal_shifts=GoalShifts(required_shifts=0, goals=["refund"])),
                evaluation_criteria=EvaluationCriteria(communicate_info=["x"], rubric=items))


def judge_for(server: FakeOpenAI, model: str = "openai/fake-model", **kw: Any) -> LLMJudge:
    return LLMJudge(model, api_base=server.base_url, api_key="sk-test", **kw)


def verdicts(*met: bool, **kw: Any) -> Reply:
    return Reply.text(json.dumps({"verdicts": [{"index": i, "met": m, "reason": f"r{i}"}
                                               for i, m in enumerate(met, start=1)]}), **kw)


def prompt_of(request: dict[str, Any]) -> str:
    return request["messages"][-1]["content"]


def indices_in(prompt: str) -> list[int]:
    window = prompt.split("<window>", 1)[1].split("</window>", 1)[0]
    return sorted({int(i) for i in re.findall(r"^\[(\d+)\]", window, re.MULTILINE)})


# -- the windows -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "size", "stride", "expected"), [
    (12, 5, 3, [(0, 5), (3, 8), (6, 11), (9, 12)]),   # starts 0, 3, 6, 9; the one from 9 reaches the end
    (12, 5, 5, [(0, 5), (5, 10), (10, 12)]),          # no overlap
    (5, 5, 3, [(0, 5)]),                               # everything fits in one window
    (11, 10, 8, [(0, 10), (8, 11)]),                   # the defaults (VitaBench: 10 messages, overlap 2)
    (10, 10, 8, [(0, 10)]),
    (7, 3, 1, [(0, 3), (1, 4), (2, 5), (3, 6), (4, 7)]),
    (0, 5, 3, []),
])
def test_windows_worked_out_by_hand(count: int, size: int, stride: int, expected: list[tuple[int, int]]) -> None:
    assert rubric_windows(count, size, stride) == expected


@pytest.mark.parametrize(("size", "stride"), [(0, 1), (5, 0), (5, 6)])
def test_a_window_that_would_skip_messages_is_refused(size: int, stride: int) -> None:
    with pytest.raises(ValueError):
        rubric_windows(10, size, stride)
    with pytest.raises(ValueError, match="rubric_stride"):
        LLMJudge("openai/fake-model", rubric_window=size, rubric_stride=stride)


def test_defaults_are_vitabench_window_of_ten_and_overlap_of_two() -> None:
    judge = LLMJudge("openai/fake-model")
    assert (judge.rubric_window, judge.rubric_stride) == (10, 8)


# -- judging window by window -------------------------------------------------------------------------


def test_each_window_is_asked_only_the_items_not_yet_met_and_a_met_item_stays_met() -> None:
    # windows of 5, stride 3 over 12 messages: [0-4], [3-7], [6-10], [9-11] (worked out above)
    script = [verdicts(False, False, False),   # window 1: nothing
              verdicts(False, True, False),    # window 2: item 2 met
              verdicts(True, False),           # window 3 asked items 1 and 3: item 1 met (item 2 not asked again)
              verdicts(False)]                 # window 4 asked item 3: not met
    with fake_openai(script) as server:
        score = rubric_score(trajectory(), task(), judge_for(server, rubric_window=5, rubric_stride=3))
    assert score is not None
    assert [indices_in(prompt_of(r)) for r in server.requests] == [
        [0, 1, 2, 3, 4], [3, 4, 5, 6, 7], [6, 7, 8, 9, 10], [9, 10, 11]]
    asked = [re.findall(r"^\d+\. (.*)$", prompt_of(r).split("no earlier window has met:")[1], re.MULTILINE)
             for r in server.requests]
    assert asked == [ITEMS, ITEMS, [ITEMS[0], ITEMS[2]], [ITEMS[2]]]
    assert all(r["messages"][0] == {"role": "system", "content": RUBRIC_SYSTEM_PROMPT} for r in server.requests)
    assert "Window 3 of 4 of the conversation: messages 6 to 10" in prompt_of(server.requests[2])
    assert score.status == "judged" and score.judged_windows == 4
    assert score.windows == [(0, 4), (3, 7), (6, 10), (9, 11)]
    assert [(v.met, v.window, v.messages, v.reason) for v in score.items] == [
        (True, 2, (6, 10), "r1"), (True, 1, (3, 7), "r2"), (False, None, None, "")]
    assert score.success is False and (score.window_size, score.stride) == (5, 3)


def test_no_call_once_every_item_is_met() -> None:
    with fake_openai([verdicts(True, False, True), verdicts(True)]) as server:
        score = rubric_score(trajectory(), task(), judge_for(server, rubric_window=5, rubric_stride=3))
    assert score is not None and len(server.requests) == 2   # windows 3 and 4 are never asked
    assert score.judged_windows == 2 and score.success is True
    assert [v.window for v in score.items] == [0, 1, 0]


def test_a_short_conversation_is_one_window_and_tool_results_keep_their_tool_name() -> None:
    with fake_openai([verdicts(True, True, True)]) as server:
        score = rubric_score(trajectory(4), task(), judge_for(server))
    assert score is not None and score.windows == [(0, 3)] and score.success is True
    prompt = prompt_of(server.requests[0])
    assert '[2] assistant calls tool get_order({"n":2})' in prompt and "[3] tool result get_order: result 3" in prompt
    assert "Window 1 of 1 of the conversation: messages 0 to 3" in prompt


def test_no_rubric_items_no_score_and_no_call() -> None:
    with fake_openai([]) as server:
        assert rubric_score(trajectory(), task([]), judge_for(server)) is None
    assert server.requests == []


def test_without_a_judge_the_rubric_is_not_judged() -> None:
    score = rubric_score(trajectory(), task(), None)
    assert score is not None and score.status == "not_judged" and score.success is None
    assert score.judged_windows == 0 and [v.met for v in score.items] == [None, None, None]
    assert score.windows == [(0, 9), (8, 11)]   # the default windows: 10 messages, stride 8


# -- unusable answers, as the NL-assertion judge handles them ------------------------------------------


@pytest.mark.parametrize("answer", [
    verdicts(True),                                   # one verdict for two items
    Reply.text("The first item is met."),             # no JSON
    Reply.text('{"verdicts": [{"index": 1, "met": "maybe"}, {"index": 2, "met": true}]}'),
    Reply.text(""),
    Reply.error(500, "boom"),
])
def test_an_unusable_window_leaves_the_rubric_not_judged_keeping_what_was_met(answer: Reply) -> None:
    with fake_openai([verdicts(False, True, False), answer]) as server:
        judge = judge_for(server, rubric_window=5, rubric_stride=3, max_retries=0)
        score = rubric_score(trajectory(), task(), judge)
    assert score is not None and len(server.requests) == 2   # judging stops at the unusable window
    assert score.status == "not_judged" and score.success is None and score.judged_windows == 2
    assert [(v.met, v.window) for v in score.items] == [(None, None), (True, 0), (None, None)]
    assert judge.log[1]["kind"] == "rubric_window" and judge.log[1]["error"]


def test_not_judged_simulations_are_left_out_of_the_pass_rate_and_noted() -> None:
    trajectories = [trajectory(sim="t1#0"), trajectory(sim="t1#1"), trajectory(sim="t1#2")]
    for t, trial in zip(trajectories, range(3), strict=True):
        t.trial = trial
    # the default windows over 12 messages: [0-9] and [8-11]; answers scripted per simulation, in order
    script = [verdicts(True, True, True),                       # t1#0: all met in window 1 -> passes
              verdicts(True, False, False), verdicts(False, False),  # t1#1: item 1 only -> fails
              Reply.text("no idea")]                           # t1#2: unusable -> not judged
    with fake_openai(script) as server:
        run, sims = compute_run_metrics(trajectories, {"t1": task()}, judge=judge_for(server, max_retries=0))
    assert [s.rubric.status for s in sims] == ["judged", "judged", "not_judged"]
    assert run.rubric is not None
    assert (run.rubric.simulations, run.rubric.judged, run.rubric.passed) == (3, 2, 1)
    assert run.rubric.pass_rate == 0.5
    assert (run.rubric.items, run.rubric.items_met, run.rubric.item_rate) == (6, 4, 4 / 6)
    assert any("rubric not judged" in n for n in run.notes)


def test_runs_without_rubric_items_have_no_rubric_in_their_metrics() -> None:
    run, sims = compute_run_metrics([trajectory()], {"t1": task([])})
    assert run.rubric is None and sims[0].rubric is None
    assert "rubric" not in run.model_dump(mode="json") and "rubric" not in sims[0].model_dump(mode="json")


# -- cost and recording ----------------------------------------------------------------------------------


def test_every_window_call_is_counted_as_judge_cost() -> None:
    # gpt-4o-mini in litellm's price map: $0.15 per million prompt tokens, $0.60 per million completion tokens,
    # so a call of 1000 + 100 tokens costs 0.00015 + 0.00006 = 0.00021 and the two windows 0.00042
    script = [verdicts(True, False, False, prompt_tokens=1000, completion_tokens=100),
              verdicts(True, True, prompt_tokens=1000, completion_tokens=100)]
    with fake_openai(script) as server:
        judge = judge_for(server, "openai/gpt-4o-mini")
        run, sims = compute_run_metrics([trajectory()], {"t1": task()}, judge=judge)
    rubric = sims[0].rubric
    assert rubric is not None and rubric.success is True
    assert (rubric.usage.prompt_tokens, rubric.usage.completion_tokens, rubric.usage.calls) == (2000, 200, 2)
    assert rubric.usage.cost_usd == pytest.approx(0.00042)
    assert run.judge is not None and run.judge["usage"]["calls"] == 2
    assert run.judge["usage"]["cost_usd"] == pytest.approx(0.00042)


def test_usage_of_a_failed_window_is_still_the_judges() -> None:
    script = [verdicts(False, False, False, prompt_tokens=10, completion_tokens=1),
              Reply.text("unreadable", prompt_tokens=20, completion_tokens=2)]
    with fake_openai(script) as server:
        score = rubric_score(trajectory(), task(), judge_for(server))
    assert score is not None and score.status == "not_judged"
    assert score.usage == Usage(prompt_tokens=30, completion_tokens=3, cost_usd=0.0, calls=2)


def test_rubric_calls_are_recorded_and_replayed_per_simulation(tmp_path) -> None:
    script = [verdicts(False, True, False), verdicts(True, False)]
    with fake_openai(script) as server:
        recorded = judge_for(server, cassettes=lambda sim: Cassette(sim, tmp_path / f"{sim}.jsonl", "record"))
        _, before = compute_run_metrics([trajectory()], {"t1": task()}, judge=recorded)
    [interaction, _] = Cassette("t1#0", tmp_path / "t1#0.jsonl", "replay").interactions
    assert interaction.request.role == "judge"
    replaying = LLMJudge("openai/fake-model",   # no server: every answer comes from the cassette
                         cassettes=lambda sim: Cassette(sim, tmp_path / f"{sim}.jsonl", "replay"))
    _, after = compute_run_metrics([trajectory()], {"t1": task()}, judge=replaying)
    assert after[0].rubric == before[0].rubric and after[0].rubric.items[1].window == 0


def test_a_replay_that_differs_from_the_recording_is_raised_not_dropped(tmp_path) -> None:
    from shiftbox.errors import CassetteMiss

    with fake_openai([verdicts(True, True, True)]) as server:
        judge = judge_for(server)
        with use_cassette(Cassette("t1#0", tmp_path / "c.jsonl", "record")):
            rubric_score(trajectory(4), task(), judge)
    with use_cassette(Cassette("t1#0", tmp_path / "c.jsonl", "replay")), pytest.raises(CassetteMiss):
        rubric_score(trajectory(4), task(ITEMS[:2]), LLMJudge("openai/fake-model"))
