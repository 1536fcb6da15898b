"""The VitaBench rubric sliding-window judge against the local fake OpenAI server, as VitaBench's evaluator judges:
windows worked out by hand; every window shown the instruction and every item with its verdict and notes; evidence
carried across windows; an item the agent undoes goes back to false; a run ended by the step limit scores 0 without
a call; tool results whole; unusable answers leave the rubric not judged; cost counted as the judge's; rubric
success feeding pass^k, pass@k and avg@k; calls recorded and replayed."""

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
from shiftbox.testing.fake_brains import ScriptedJudge
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


def trajectory(n: int = 12, sim: str = "t1#0", messages: list[Message] | None = None, ended: str = "user_stop",
               task_id: str = "t1") -> Trajectory:
    return Trajectory(
        simulation_id=sim, task_id=task_id, trial=int(sim.split("#")[1]), domain="nodomain", seed=1, agent="a",
        user="scripted", persona=None, goals=["refund"],
        servers={"nodomain": ServerInfo(name="x", version="0", snapshot="v1", snapshot_sha256="0" * 64)},
        messages=conversation(n) if messages is None else messages, tool_calls=[], shifts=[],
        termination=Termination(reason=ended), final_state={"nodomain": "d"})


def task(items: list[str] = ITEMS, task_id: str = "t1") -> Task:
    return Task(id=task_id, domain="nodomain",
                user_scenario=UserScenario(instructions=Instructions(reason_for_call="You want a refund.",
                                                                     task_instructions="Ask for the refund."),
                                           goal_shifts=GoalShifts(required_shifts=0, goals=["refund"])),
                evaluation_criteria=EvaluationCriteria(communicate_info=["x"], rubric=items))


def chat(*turns: tuple[str, str]) -> list[Message]:
    """Messages from (role, text) turns; role "call" is an assistant calling the tool named by the text, and the
    tool message after it answers that call."""
    messages: list[Message] = []
    for i, (role, text) in enumerate(turns):
        if role == "call":
            messages.append(Message(index=i, role="assistant", agent_turn=i,
                                    tool_calls=[ToolCall(id=f"c{i}", name=text, arguments={})]))
        elif role == "tool":
            messages.append(Message(index=i, role="tool", tool_call_id=f"c{i - 1}", content=text, is_error=False))
        else:
            messages.append(Message(index=i, role=role, content=text, agent_turn=i if role == "assistant" else None))
    return messages


def filler(count: int) -> list[tuple[str, str]]:
    """`count` turns of small talk that concern no rubric item."""
    return [("user" if k % 2 == 0 else "assistant", f"small talk {k}") for k in range(count)]


def judge_for(server: FakeOpenAI, model: str = "openai/fake-model", **kw: Any) -> LLMJudge:
    return LLMJudge(model, api_base=server.base_url, api_key="sk-test", **kw)


def verdicts(*met: bool, **kw: Any) -> Reply:
    return Reply.text(json.dumps({"verdicts": [{"index": i, "met": m, "notes": f"r{i}"}
                                               for i, m in enumerate(met, start=1)]}), **kw)


def rubric_shown(prompt: str) -> list[dict[str, Any]]:
    """The items as the prompt shows them to the judge: one JSON object a line between <rubric> tags."""
    return [json.loads(line) for line in prompt.split("<rubric>\n", 1)[1].split("\n</rubric>", 1)[0].splitlines()]


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


# -- judging window by window, as VitaBench's evaluator does -------------------------------------------------


def test_every_window_is_shown_the_instruction_and_every_item_with_its_verdict_and_notes() -> None:
    # windows of 5, stride 3 over 12 messages: [0-4], [3-7], [6-10], [9-11] (worked out above)
    script = [verdicts(False, False, False),   # window 1: nothing
              verdicts(False, True, False),    # window 2: item 2 met
              verdicts(True, True, False),     # window 3: item 1 met
              verdicts(True, True, False)]     # window 4: nothing new
    with fake_openai(script) as server:
        score = rubric_score(trajectory(), task(), judge_for(server, rubric_window=5, rubric_stride=3))
    assert score is not None
    assert [indices_in(prompt_of(r)) for r in server.requests] == [
        [0, 1, 2, 3, 4], [3, 4, 5, 6, 7], [6, 7, 8, 9, 10], [9, 10, 11]]
    shown = [rubric_shown(prompt_of(r)) for r in server.requests]
    assert [[s["item"] for s in window] for window in shown] == [ITEMS] * 4   # every item, every window
    # each window sees the verdicts and notes the previous answer gave, the first window none
    assert [[(s["met"], s["notes"]) for s in window] for window in shown] == [
        [(False, ""), (False, ""), (False, "")],
        [(False, "r1"), (False, "r2"), (False, "r3")],
        [(False, "r1"), (True, "r2"), (False, "r3")],
        [(True, "r1"), (True, "r2"), (False, "r3")]]
    assert all(r["messages"][0] == {"role": "system", "content": RUBRIC_SYSTEM_PROMPT} for r in server.requests)
    assert all("Reason for the call: You want a refund.\nWhat the user was told to do: Ask for the refund.\n"
               "The user's goals, in order: refund" in prompt_of(r) for r in server.requests)
    assert "Window 3 of 4: messages 6 to 10" in prompt_of(server.requests[2])
    assert score.status == "judged" and score.judged_windows == 4
    assert score.windows == [(0, 4), (3, 7), (6, 10), (9, 11)]
    assert [(v.met, v.window, v.messages, v.reason, v.trail) for v in score.items] == [
        (True, 2, (6, 10), "r1", [False, False, True, True]),
        (True, 1, (3, 7), "r2", [False, True, True, True]),
        (False, None, None, "r3", [False, False, False, False])]
    assert score.success is False and (score.window_size, score.stride) == (5, 3)


def test_every_window_is_asked_even_once_every_item_is_met() -> None:
    # a later window may take an item back, so meeting every item early does not end the judging
    with fake_openai([verdicts(True, True, True), verdicts(True, True, True), verdicts(True, True, True),
                      verdicts(True, True, True)]) as server:
        score = rubric_score(trajectory(), task(), judge_for(server, rubric_window=5, rubric_stride=3))
    assert score is not None and len(server.requests) == 4 and score.judged_windows == 4
    assert score.success is True and [v.window for v in score.items] == [0, 0, 0]


def test_an_item_a_later_window_takes_back_ends_false() -> None:
    with fake_openai([verdicts(True, True, True), verdicts(True, False, True)]) as server:
        score = rubric_score(trajectory(), task(), judge_for(server))   # windows [0-9], [8-11]
    assert score is not None and score.success is False
    assert [(v.met, v.window, v.trail) for v in score.items] == [
        (True, 0, [True, True]), (False, 1, [True, False]), (True, 0, [True, True])]


def test_a_short_conversation_is_one_window_and_tool_results_keep_their_tool_name() -> None:
    with fake_openai([verdicts(True, True, True)]) as server:
        score = rubric_score(trajectory(4), task(), judge_for(server))
    assert score is not None and score.windows == [(0, 3)] and score.success is True
    prompt = prompt_of(server.requests[0])
    assert '[2] assistant calls tool get_order({"n":2})' in prompt and "[3] tool result get_order: result 3" in prompt
    assert "Window 1 of 1: messages 0 to 3" in prompt


def test_no_rubric_items_no_score_and_no_call() -> None:
    with fake_openai([]) as server:
        assert rubric_score(trajectory(), task([]), judge_for(server)) is None
    assert server.requests == []


def test_without_a_judge_the_rubric_is_not_judged() -> None:
    score = rubric_score(trajectory(), task(), None)
    assert score is not None and score.status == "not_judged" and score.success is None
    assert score.judged_windows == 0 and [v.met for v in score.items] == [None, None, None]
    assert score.windows == [(0, 9), (8, 11)]   # the default windows: 10 messages, stride 8


# -- the scenarios of VitaBench's data, with the scripted judge (fake_brains.ScriptedJudge) ---------------------

RESTAURANT = 'The agent orders from the restaurant it found ("Golden Dragon") by calling "place_order".'
ORDER_KEPT = 'The agent places the order ("place_order") unless it cancels it ("cancel_order").'


def split_evidence() -> list[Message]:
    """The restaurant found in window 1 (message 3), the order placed in window 3 (message 20): 25 messages, so
    the default windows (10, stride 8) are [0-9], [8-17], [16-24] and no window shows both."""
    return chat(("user", "I want dinner delivered."), ("assistant", "Let me look."),
                ("call", "search_restaurants"), ("tool", '{"name": "Golden Dragon", "cuisine": "Sichuan"}'),
                ("assistant", "I found one."), *filler(15),
                ("call", "place_order"), ("tool", '{"order_id": "o1", "status": "placed"}'),
                ("assistant", "Your order is placed."), ("user", "Thanks."), ("assistant", "Bye."))


def test_evidence_split_across_windows_passes() -> None:
    messages = split_evidence()
    assert len(messages) == 25 and "Golden Dragon" in (messages[3].content or "")
    assert messages[20].tool_calls[0].name == "place_order"
    with fake_openai(ScriptedJudge()) as server:
        score = rubric_score(trajectory(messages=messages), task([RESTAURANT]), judge_for(server))
    assert score is not None and score.windows == [(0, 9), (8, 17), (16, 24)]
    # the restaurant seen in window 1 reaches window 3 through the notes the judge is shown again
    assert rubric_shown(prompt_of(server.requests[2]))[0]["notes"] == "seen: Golden Dragon"
    [verdict] = score.items
    assert (verdict.met, verdict.window, verdict.trail) == (True, 2, [False, False, True])
    assert verdict.reason == "seen: Golden Dragon; place_order" and score.success is True


def done_then_undone() -> list[Message]:
    """The order placed in window 1 (message 1) and cancelled by the agent in window 3 (message 18)."""
    return chat(("user", "Order it."), ("call", "place_order"), ("tool", '{"status": "placed"}'),
                ("assistant", "Placed."), *filler(14), ("call", "cancel_order"), ("tool", '{"status": "cancelled"}'),
                ("assistant", "I cancelled it."), ("user", "Oh."))


def test_an_item_done_then_undone_ends_false() -> None:
    with fake_openai(ScriptedJudge()) as server:
        score = rubric_score(trajectory(messages=done_then_undone()), task([ORDER_KEPT]), judge_for(server))
    assert score is not None and score.windows == [(0, 9), (8, 17), (16, 21)]
    [verdict] = score.items
    assert (verdict.met, verdict.window, verdict.trail) == (False, 2, [True, True, False])
    assert score.success is False


@pytest.mark.parametrize("ended", ["max_steps", "too_many_tool_errors", "agent_error"])
def test_a_run_ended_early_scores_0_and_the_judge_is_never_called(ended: str) -> None:
    with fake_openai(ScriptedJudge()) as server:
        judge = judge_for(server)
        score = rubric_score(trajectory(messages=split_evidence(), ended=ended), task([RESTAURANT]), judge)
    assert server.requests == [] and judge.log == []
    assert score is not None and score.status == "ended_early" and score.ended_by == ended
    assert score.success is False and score.judged_windows == 0 and [v.met for v in score.items] == [False]
    assert score.usage.calls == 0


def test_a_run_ended_early_scores_0_even_without_a_judge() -> None:
    score = rubric_score(trajectory(ended="max_steps"), task(), None)
    assert score is not None and score.status == "ended_early" and score.success is False


def test_tool_results_reach_the_judge_whole() -> None:
    long_result = "x" * 1500 + ' "Golden Dragon" ' + "y" * 500   # the fact far past the other judges' 600 chars
    messages = chat(("user", "Dinner?"), ("call", "search_restaurants"), ("tool", long_result),
                    ("call", "place_order"), ("tool", "ok"), ("assistant", "Ordered."))
    with fake_openai(ScriptedJudge()) as server:
        score = rubric_score(trajectory(messages=messages), task([RESTAURANT]), judge_for(server))
    assert f"[2] tool result search_restaurants: {long_result}\n" in prompt_of(server.requests[0])
    assert score is not None and score.success is True


def test_the_scenarios_are_recorded_and_replay_without_a_server(tmp_path) -> None:
    trajectories = [trajectory(messages=split_evidence(), sim="split#0", task_id="split"),
                    trajectory(messages=done_then_undone(), sim="undone#0", task_id="undone"),
                    trajectory(messages=split_evidence(), sim="limited#0", task_id="split", ended="max_steps")]
    tasks = {"split": task([RESTAURANT], "split"), "undone": task([ORDER_KEPT], "undone")}
    with fake_openai(ScriptedJudge()) as server:
        recorded = judge_for(server, cassettes=lambda sim: Cassette(sim, tmp_path / f"{sim}.jsonl", "record"))
        _, before = compute_run_metrics(trajectories, tasks, judge=recorded)
    assert len(server.requests) == 6   # 3 windows each; the step-limited run is never asked
    replaying = LLMJudge("openai/fake-model",   # no server: every answer comes from the cassettes
                         cassettes=lambda sim: Cassette(sim, tmp_path / f"{sim}.jsonl", "replay"))
    _, after = compute_run_metrics(trajectories, tasks, judge=replaying)
    assert [s.rubric for s in after] == [s.rubric for s in before]
    assert {s.simulation_id: (s.rubric.status, s.rubric.success) for s in after} == {
        "limited#0": ("ended_early", False), "split#0": ("judged", True), "undone#0": ("judged", False)}


# -- unusable answers, as the NL-assertion judge handles them ------------------------------------------


@pytest.mark.parametrize("answer", [
    verdicts(True),                                   # one verdict for three items
    Reply.text("The first item is met."),             # no JSON
    Reply.text('{"verdicts": [{"index": 1, "met": "maybe"}, {"index": 2, "met": true}, {"index": 3, "met": true}]}'),
    Reply.text(""),
    Reply.error(500, "boom"),
])
def test_an_unusable_window_leaves_the_rubric_not_judged(answer: Reply) -> None:
    with fake_openai([verdicts(False, True, False), answer]) as server:
        judge = judge_for(server, rubric_window=5, rubric_stride=3, max_retries=0)
        score = rubric_score(trajectory(), task(), judge)
    assert score is not None and len(server.requests) == 2   # judging stops at the unusable window
    assert score.status == "not_judged" and score.success is None and score.judged_windows == 2
    assert [(v.met, v.trail) for v in score.items] == [(None, [False]), (None, [True]), (None, [False])]
    assert judge.log[1]["kind"] == "rubric_window" and judge.log[1]["error"]


def test_not_judged_simulations_are_left_out_of_the_pass_rate_and_ended_early_ones_fail() -> None:
    trajectories = [trajectory(sim="t1#0"), trajectory(sim="t1#1"), trajectory(sim="t1#2"),
                    trajectory(sim="t1#3", ended="max_steps")]
    # the default windows over 12 messages: [0-9] and [8-11]; answers scripted per simulation, in order
    script = [verdicts(True, True, True), verdicts(True, True, True),    # t1#0: all met -> passes
              verdicts(True, False, False), verdicts(True, False, False),  # t1#1: item 1 only -> fails
              Reply.text("no idea")]                                       # t1#2: unusable -> not judged
    with fake_openai(script) as server:            # t1#3 hit the step limit: 0, never asked
        run, sims = compute_run_metrics(trajectories, {"t1": task()}, judge=judge_for(server, max_retries=0))
    assert len(server.requests) == 5
    assert [s.rubric.status for s in sims] == ["judged", "judged", "not_judged", "ended_early"]
    r = run.rubric
    assert r is not None
    assert (r.simulations, r.judged, r.ended_early, r.passed) == (4, 2, 1, 1)
    assert r.pass_rate == 1 / 3                     # 1 pass of t1#0, t1#1 and t1#3
    assert (r.items, r.items_met, r.item_rate) == (6, 4, 4 / 6)   # items of the judged t1#0 and t1#1
    assert any("rubric not judged" in n for n in run.notes)


def test_rubric_success_feeds_pass_hat_k_pass_at_k_and_avg_at_k() -> None:
    # task a: trials pass, fail, pass (n=3, c=2); task b: fail, fail, fail (n=3, c=0); one window per trial
    # pass^1 = (2/3 + 0) / 2 = 1/3; pass^2 = (C(2,2)/C(3,2) + 0) / 2 = (1/3) / 2 = 1/6; pass^3 = 0
    # pass@1 = 1/3; pass@2 = (1 - C(1,2)/C(3,2) + 0) / 2 = 1/2; pass@3 = (1 + 0) / 2 = 1/2
    # avg@k = (2/3 + 0) / 2 = 1/3 for every k
    trajectories = [trajectory(4, sim=f"{t}#{k}", task_id=t) for t in ("a", "b") for k in range(3)]
    script = [verdicts(True), verdicts(False), verdicts(True), verdicts(False), verdicts(False), verdicts(False)]
    with fake_openai(script) as server:
        run, _ = compute_run_metrics(trajectories, {t: task(["The agent refunds."], t) for t in ("a", "b")},
                                     judge=judge_for(server))
    r = run.rubric
    assert r is not None and r.passed == 2
    assert r.pass_hat_k == pytest.approx({1: 1 / 3, 2: 1 / 6, 3: 0.0})
    assert r.pass_at_k == pytest.approx({1: 1 / 3, 2: 1 / 2, 3: 1 / 2})
    assert r.avg_at_k == pytest.approx({1: 1 / 3, 2: 1 / 3, 3: 1 / 3})


def test_runs_without_rubric_items_have_no_rubric_in_their_metrics() -> None:
    run, sims = compute_run_metrics([trajectory()], {"t1": task([])})
    assert run.rubric is None and sims[0].rubric is None
    assert "rubric" not in run.model_dump(mode="json") and "rubric" not in sims[0].model_dump(mode="json")


# -- cost and recording ----------------------------------------------------------------------------------


def test_every_window_call_is_counted_as_judge_cost() -> None:
    # gpt-4o-mini in litellm's price map: $0.15 per million prompt tokens, $0.60 per million completion tokens,
    # so a call of 1000 + 100 tokens costs 0.00015 + 0.00006 = 0.00021 and the two windows 0.00042
    script = [verdicts(True, False, False, prompt_tokens=1000, completion_tokens=100),
              verdicts(True, True, True, prompt_tokens=1000, completion_tokens=100)]
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
    script = [verdicts(False, True, False), verdicts(True, True, False)]
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


def test_the_scripted_judge_reads_an_item_holding_unicode_line_separators_as_one_line() -> None:
    """The rubric prompt lists one item a line in JSON, written with U+2028 raw inside its strings: the scripted judge
    reads a line to its "\\n", not torn where `str.splitlines()` would end it."""
    item = 'say "one\u2028two" unless "three\x85four"'
    lines = json.dumps({"index": 1, "item": item, "met": False, "notes": ""}, ensure_ascii=False)
    assert ScriptedJudge.rubric("she did say one\u2028two", lines) == [
        {"index": 1, "met": True, "notes": "seen: one\u2028two"}]
