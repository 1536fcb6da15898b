"""Compat GSRT asked of a judge (`compat_run_metrics(..., judge=...)`): the question the reference's judge gets,
how its answers are read (malformed ones are "not judged", never zero shifts), and the run's GSRT computed by hand
from given answers."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest

from shiftbox.agentchangebench import (
    GSRT_SYSTEM_PROMPT,
    compat_run_metrics,
    gsrt_prompt,
    parse_gsrt_answer,
)
from shiftbox.metrics import Judge, LLMJudge
from shiftbox.testing import Reply, fake_openai
from tests.client.metrics.build import Builder, task


def shift(turn, ack=None, tool=None, outcome=None, transferred=False, frm="a", to="b") -> dict:
    return {"turn": turn, "from": frm, "to": to, "type": "GOAL_SHIFT", "agent_responded": True, "agent_turn": None,
            "acknowledgment_turn": ack, "tool_turn": tool, "outcome_turn": outcome,
            "transferred_to_human": transferred}


def answer(*shifts: dict) -> str:
    return json.dumps({"start_goal": {"turn": 0, "goal": "a"}, "user_goal_shifts": list(shifts)})


class Answers(Judge):
    """A judge answering the GSRT question of each simulation with a fixed text; counts the questions."""

    name = "answers"

    def __init__(self, texts: dict[str, str]):
        self.texts, self.current, self.asked = texts, None, []

    @contextlib.contextmanager
    def judging(self, simulation_id: str) -> Iterator[None]:
        self.current = simulation_id
        yield

    def ask(self, kind, system, prompt, parse):
        self.asked.append((kind, self.current))
        return parse(self.texts[self.current])


def conversation(task_id: str, shift_at: tuple[int, ...] = ()):
    """12 messages alternating user / assistant (a shiftbox run's trajectory: no stored judge output); the harness
    records a shift at each index of `shift_at` (user messages)."""
    b = Builder()
    for index in range(0, 12, 2):
        b.user(f"user {index}", goal="b" if index in shift_at else "a", shift_from="a" if index in shift_at else None)
        b.agent(f"agent {index + 1}")
    return b.build(task_id=task_id)


TASKS = {"t1": task(goals=("a", "b", "c"), task_id="t1"), "t2": task(goals=("a", "b", "c"), task_id="t2")}


def test_the_question_shows_goals_required_shifts_and_every_message_as_index_role_content():
    b = Builder().user("I need my balance", goal="a").agent(None, calls=[("get_accounts", {"id": "c1"})])
    b.tool('{"balance": 3}').agent("Your balance is 3.").user("Now block my card", goal="b", shift_from="a")
    prompt = gsrt_prompt(b.build(), task(goals=("a", "b")))
    assert "Goals of the task, in order: [a, b]\nMaximum number of shifts: 1\n" in prompt
    # tool calls are not shown (the reference's judge sees message content only); a tool result is a tool line
    assert ("<conversation>\n0:user:I need my balance\n1:assistant:\n2:tool:{\"balance\": 3}\n"
            "3:assistant:Your balance is 3.\n4:user:Now block my card\n</conversation>") in prompt
    assert '"start_goal"' in GSRT_SYSTEM_PROMPT and '"user_goal_shifts"' in GSRT_SYSTEM_PROMPT


@pytest.mark.parametrize("text", [
    answer(shift(3, ack=5)),
    "Here you are:\n```json\n" + answer(shift(3, ack=5)) + "\n```",
    "The shifts: " + answer(shift(3, ack=5)) + " That is all.",
])
def test_a_readable_answer_in_any_wrapping(text):
    parsed = parse_gsrt_answer(text)
    assert parsed["start_goal"] == {"turn": 0, "goal": "a"}
    assert [(s["turn"], s["acknowledgment_turn"], s["tool_turn"], s["transferred_to_human"])
            for s in parsed["user_goal_shifts"]] == [(3, 5, None, False)]


def test_missing_stages_are_null_and_a_missing_transfer_flag_is_false():
    parsed = parse_gsrt_answer(json.dumps({"start_goal": {}, "user_goal_shifts": [{"turn": 4, "tool_turn": 6}]}))
    s = parsed["user_goal_shifts"][0]
    assert (s["acknowledgment_turn"], s["tool_turn"], s["outcome_turn"], s["transferred_to_human"]) == (
        None, 6, None, False)


@pytest.mark.parametrize("text", [
    "",
    "The user changed goals twice.",
    json.dumps({"user_goal_shifts": []}),                                     # no start_goal
    json.dumps({"start_goal": {}, "user_goal_shifts": {"turn": 3}}),          # not a list
    json.dumps({"start_goal": {}, "user_goal_shifts": [{"from": "a"}]}),      # no turn
    answer(shift("3", ack=5)),                                                # turn not an int
    answer(shift(True, ack=5)),                                               # a bool is no turn
    answer(shift(3, ack="5")),                                                # stage not an int
    answer(shift(3, ack=5, transferred="no")),                                # flag not a bool
    answer(shift(3, ack=5), "not a shift"),                                   # one unreadable shift
    '{"start_goal": {}, "user_goal_shifts": [',                              # cut off
])
def test_an_unreadable_answer_is_none(text):
    assert parse_gsrt_answer(text) is None


def test_the_runs_gsrt_by_hand_from_the_judges_answers():
    """t1: shift at 3 (ack 5, tool 4, outcome 8) -> (2, 1, 5) recovered; shift at 9 (ack 8 is before it, tool 11)
    -> (None, 2, None) not recovered. t2: shift at 2 (ack 4, tool 4, outcome 7, transferred) -> (2, 2, 5), not
    recovered; shift at 6 (ack 10, outcome 9) -> (4, None, 3) recovered.
    4 shifts: recovery 2/4, transfer 1/4; median ack over the recovered shifts [2, 4] = 3 (the transferred
    shift's ack 2 is no recovery time); median tool [1, 2, 2] = 2; median outcome [5, 5, 3] = 5; each stage is
    missing in one shift of four."""
    judge = Answers({"t1#0": answer(shift(3, ack=5, tool=4, outcome=8), shift(9, ack=8, tool=11)),
                     "t2#0": answer(shift(2, ack=4, tool=4, outcome=7, transferred=True), shift(6, ack=10, outcome=9))})
    run, sims = compat_run_metrics([conversation("t1", (2, 8)), conversation("t2", (2, 6))], TASKS, judge=judge)
    assert judge.asked == [("agentchangebench_gsrt", "t1#0"), ("agentchangebench_gsrt", "t2#0")]
    assert [[(r.ack, r.tool, r.outcome, r.recovered, r.transferred) for r in s.gsrt] for s in sims] == [
        [(2, 1, 5, True, False), (None, 2, None, False, False)],
        [(2, 2, 5, False, True), (4, None, 3, True, False)]]
    assert [s.gsrt_judged for s in sims] == [True, True]
    g = run.gsrt
    assert (g.shifts, g.recovery_rate, g.transfer_rate) == (4, 0.5, 0.25)
    assert (g.median_ack, g.median_tool, g.median_outcome) == (3.0, 2.0, 5.0)
    assert (g.never_ack, g.never_tool, g.never_outcome) == (0.25, 0.25, 0.25)
    assert run.judge == {"name": "answers", "usage": {}}
    assert "GSRT: on 2 simulations of a shiftbox run the judge located 4 shifts; the harness recorded 4" in " ".join(
        run.notes)


def test_a_malformed_answer_is_not_judged_never_zero_shifts():
    judge = Answers({"t1#0": answer(shift(3, ack=5)), "t2#0": "There were two goal shifts, both handled."})
    run, sims = compat_run_metrics([conversation("t1", (2,)), conversation("t2", (2, 6))], TASKS, judge=judge)
    assert [s.gsrt_judged for s in sims] == [True, False] and sims[1].gsrt == []
    g = run.gsrt
    assert g.shifts == 1  # t1's, counted; every rate and median undefined, as the reference's -1
    assert (g.recovery_rate, g.transfer_rate, g.median_ack, g.never_ack) == (None, None, None, None)
    note = next(n for n in run.notes if n.startswith("GSRT: 1 of 2 simulations have no judge output"))
    assert "could not be read for t2#0" in note and "the harness recorded 2 shifts in them" in note
    assert run.by_domain["banking"].gsrt.recovery_rate is None


def test_an_answer_with_no_shift_is_judged_zero_shifts():
    judge = Answers({"t1#0": answer()})
    run, sims = compat_run_metrics([conversation("t1")], TASKS, judge=judge)
    assert sims[0].gsrt_judged is True and sims[0].gsrt == []
    assert (run.gsrt.shifts, run.gsrt.recovery_rate, run.gsrt.transfer_rate) == (0, 0.0, 0.0)


def test_stored_judge_output_is_used_and_not_asked_again():
    stored = conversation("t1")
    stored.source_data = {"info": {"gsrt_v2": json.loads(answer(shift(4, ack=7, outcome=9)))}}
    judge = Answers({"t2#0": answer(shift(2, ack=3))})
    run, sims = compat_run_metrics([stored, conversation("t2", (2,))], TASKS, judge=judge)
    assert judge.asked == [("agentchangebench_gsrt", "t2#0")]
    assert [[(r.message_index, r.ack, r.outcome) for r in s.gsrt] for s in sims] == [[(4, 3, 5)], [(2, 1, None)]]
    assert (run.gsrt.shifts, run.gsrt.recovery_rate, run.gsrt.median_ack) == (2, 1.0, 2.0)


def test_a_judge_that_cannot_answer_leaves_the_run_not_judged():
    class Silent(Judge):
        name = "silent"

    run, sims = compat_run_metrics([conversation("t1", (2,))], TASKS, judge=Silent())
    assert sims[0].gsrt_judged is False and run.gsrt.recovery_rate is None


def test_through_the_llm_boundary_fenced_json_is_read_and_prose_is_not_judged():
    """The LLM judge against the local fake server: one completion per simulation, role judge, temperature 0,
    the system prompt and the question; a prose answer is logged as unreadable."""
    replies = iter([Reply.text("```json\n" + answer(shift(2, ack=3, tool=3, outcome=5)) + "\n```"),
                    Reply.text("Two shifts, both handled well.")])
    seen = []

    def script(body):
        seen.append(body)
        return next(replies)

    with fake_openai(script) as server:
        judge = LLMJudge("openai/fake-model", api_base=server.base_url, api_key="sk-test")
        run, sims = compat_run_metrics([conversation("t1", (2,)), conversation("t2", (2,))], TASKS, judge=judge)
    assert [s.gsrt_judged for s in sims] == [True, False]
    assert [(r.ack, r.tool, r.outcome) for r in sims[0].gsrt] == [(1, 1, 3)]
    assert len(seen) == 2 and seen[0]["temperature"] == 0.0
    assert seen[0]["messages"][0] == {"role": "system", "content": GSRT_SYSTEM_PROMPT}
    assert seen[1]["messages"][1]["content"] == gsrt_prompt(conversation("t2", (2,)), TASKS["t2"])
    assert [e["kind"] for e in judge.log] == ["agentchangebench_gsrt"] * 2
    assert judge.log[1]["error"] == "could not read the agentchangebench_gsrt answer"
    assert run.judge["usage"]["prompt_tokens"] > 0
