"""The per-mission protocol (MMTB's teacher forcing): each goal a scored simulation of its own, started from the gold
conversation of the earlier goals; recorded and replayed byte-identically, with the scripted agent and an LLM agent."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.errors import RunPlanError
from shiftbox.runs import mission_tasks, plan_run
from shiftbox.tasks import Task, load_task_file
from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.testing.fake_openai import fake_openai
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN

runner = CliRunner()


def _action(action_id: str, goal: str, tool: str, depends_on: list[str], **params) -> dict:
    return {"action_id": action_id, "goal": goal, "depends_on": depends_on,
            "allowed_tools": [{"function_name": tool, "params": params}]}


def three_goal_task() -> Task:
    """Goals a (one call), b (two independent calls after a's), c (a chain of two), in a domain not installed."""
    return Task.model_validate({
        "id": "t1", "domain": "nowhere",
        "user_scenario": {
            "persona": "EASY_1",
            "instructions": {"reason_for_call": "You want a.", "known_info": "You are Ann Lee.",
                             "task_instructions": "Raise one request at a time, in this order:\n"
                                                  "1. You want a.\n2. You want b.\n3. You want c."},
            "goal_shifts": {"required_shifts": 2, "goals": ["goal_a", "goal_b", "goal_c"],
                            "action_types": {"goal_a": "single", "goal_b": "parallel", "goal_c": "serial"}}},
        "evaluation_criteria": {
            "action_sets": [_action("a1", "goal_a", "find", [], name="Ann"),
                            _action("b1", "goal_b", "get_x", ["a1"], id="1"),
                            _action("b2", "goal_b", "get_y", ["a1"], id="2"),
                            _action("c1", "goal_c", "make", ["a1"], n=1),
                            _action("c2", "goal_c", "confirm", ["c1"], n=2)],
            "communicate_info": ["X-1", "Y-2", "whole"],
            "communicate_info_by_goal": {"goal_b": ["X-1", "Y-2"]},
            "nl_assertions": ["The agent was polite."],
            "expected_state_digest": "abc"}})


def test_a_task_becomes_one_mission_per_goal_with_the_gold_conversation_of_the_earlier_goals():
    missions = mission_tasks(three_goal_task())
    assert [m.id for m in missions] == ["t1~m1", "t1~m2", "t1~m3"]
    assert [m.goals for m in missions] == [["goal_a"], ["goal_b"], ["goal_c"]]
    assert [m.user_scenario.goal_shifts.required_shifts for m in missions] == [0, 0, 0]
    assert [m.action_types for m in missions] == [{"goal_a": "single"}, {"goal_b": "parallel"}, {"goal_c": "serial"}]
    # the numbered step of each goal is what the user is asked for
    assert [m.user_scenario.instructions.reason_for_call for m in missions] == ["You want a.", "You want b.",
                                                                             "You want c."]
    # mission 3 starts after a's and b's gold exchanges; b's two calls depend on a's only: one message, together
    turns = missions[2].initial_state.gold_dialogue
    assert [t.goal for t in turns] == ["goal_a", "goal_b"]
    assert [[[c.function_name for c in level] for level in t.calls] for t in turns] == [[["find"]],
                                                                                        [["get_x", "get_y"]]]
    assert turns[0].request == "I need help with goal a."  # the domain is not installed: the plain request
    assert turns[1].answer == "Your goal b request is taken care of. What I found: X-1; Y-2."
    assert missions[0].initial_state.gold_dialogue == [] and missions[1].initial_state.gold_dialogue == turns[:1]
    # only the mission's goal is scored: its sets, dependencies on earlier goals' sets dropped (the gold made them)
    c = missions[2].evaluation_criteria
    assert [(a.action_id, a.depends_on) for a in c.action_sets] == [("c1", []), ("c2", ["c1"])]
    assert [a.action_id for a in missions[1].evaluation_criteria.action_sets] == ["b1", "b2"]
    assert missions[1].evaluation_criteria.communicate_info == ["X-1", "Y-2"]
    assert missions[0].evaluation_criteria.communicate_info == []
    assert c.communicate_info == ["whole"]  # the whole task's item, where the task ends
    assert c.nl_assertions == [] and c.expected_state_digest is None


def test_an_unknown_protocol_is_refused_naming_the_choices(tmp_path):
    with pytest.raises(RunPlanError, match=r"--protocol 'teacher' is not one of live, per-mission"):
        plan_run(HANDWRITTEN, tmp_path / "run", protocol="teacher")


def test_the_live_protocol_is_the_default_and_is_not_written_to_run_json(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id",
                              "hw_banking_005", "--out", str(tmp_path / "live")])
    assert res.exit_code == 0, res.output
    assert "protocol" not in json.loads((tmp_path / "live" / "run.json").read_text())["config"]
    assert [t.simulation_id for t in read_trajectories(tmp_path / "live")] == ["hw_banking_005#0"]


def test_each_goal_is_a_simulation_started_from_the_real_gold_conversation(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id",
                              "hw_banking_005", "--protocol", "per-mission", "--out", str(tmp_path / "pm")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "pm" / "run.json").read_text())["config"]["protocol"] == "per-mission"
    first, second = sorted(read_trajectories(tmp_path / "pm"), key=lambda t: t.simulation_id)
    assert (first.simulation_id, second.simulation_id) == ("hw_banking_005~m1#0", "hw_banking_005~m2#0")
    assert (first.goals, second.goals) == (["authentication"], ["payments"])
    # mission 2 opens with authentication's gold exchange: request, the gold lookup with its real result, answer
    gold = second.messages[:4]
    assert [(m.role, m.agent_turn, m.goal) for m in gold] == [("user", None, "authentication"),
                                                              ("assistant", None, None), ("tool", None, None),
                                                              ("assistant", None, None)]
    assert [c.name for c in gold[1].tool_calls] == ["get_customer_by_phone"]
    [made] = second.setup_calls
    assert (made.call_id, made.message_index, made.is_error) == ("gold_0_0_0", 1, False)
    [task] = [t for t in load_task_file(HANDWRITTEN).tasks if t.id == "hw_banking_005"]
    [identify] = task.action_sets_for("authentication")
    assert made.arguments == identify.allowed_tools[0].params and made.result["customer_id"]
    assert json.loads(gold[2].content) == made.result
    # then the live goal: the agent's own calls are payments' three, nothing of the gold conversation
    assert second.messages[4].role == "user" and second.messages[4].goal == "payments"
    assert [c.name for c in second.tool_calls] == ["create_payment_request", "authorize_payment_request",
                                                   "make_payment"]
    assert first.setup_calls == [] and [c.name for c in first.tool_calls] == ["get_customer_by_phone"]
    res = runner.invoke(app, ["metrics", str(tmp_path / "pm"), "--json"])
    assert res.exit_code == 0, res.output
    sims = json.loads((tmp_path / "pm" / "metrics.json").read_text())["simulations"]
    assert sorted((s["simulation_id"], s["tsr"]["score"]) for s in sims) == [("hw_banking_005~m1#0", 1.0),
                                                                    ("hw_banking_005~m2#0", 1.0)]


def test_a_failure_on_one_goal_does_not_reach_the_next(tmp_path):
    """An agent that transfers at the first goal shift loses every later goal live; per mission, each goal starts
    from the gold conversation, so each is played (and solved) on its own."""
    args = ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "hw_banking_001",
            "--agent", "scripted:transfer_on_shift"]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "live")]).exit_code == 0
    assert runner.invoke(app, [*args, "--protocol", "per-mission", "--out", str(tmp_path / "pm")]).exit_code == 0
    [live] = read_trajectories(tmp_path / "live")
    assert live.termination.reason == "agent_transfer"
    assert [c.name for c in live.tool_calls] == ["get_customer_by_phone", "transfer_to_human_agents"]
    missions = sorted(read_trajectories(tmp_path / "pm"), key=lambda t: t.simulation_id)
    assert [t.termination.reason for t in missions] == ["user_stop"] * 3
    assert [[c.name for c in t.tool_calls] for t in missions] == [["get_customer_by_phone"], ["get_transactions"],
                                                                  ["file_dispute"]]


def test_a_per_mission_run_replays_byte_identically(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--agent",
                              "scripted:redundant", "--protocol", "per-mission", "--out", str(tmp_path / "live"),
                              "--record", str(tmp_path / "fixture")])
    assert res.exit_code == 0, res.output
    assert len(read_trajectories(tmp_path / "live")) == 13  # 3 + 3 + 3 + 2 + 2 goals
    res = runner.invoke(app, ["replay", str(tmp_path / "fixture"), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output
    assert "identical to the recording" in res.output
    assert ((tmp_path / "live" / "trajectories.jsonl").read_text().count("gold_0_0_0")
            == (tmp_path / "replayed" / "trajectories.jsonl").read_text().count("gold_0_0_0") > 0)


def test_an_llm_agent_sees_the_gold_conversation_and_its_run_replays_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    tasks = load_task_file(HANDWRITTEN).tasks
    with fake_openai(ScriptedLLM(tasks)) as server:
        res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id",
                                  "hw_banking_001", "--agent", "litellm:openai/fake-model", "--agent-arg",
                                  f"api_base={server.base_url}", "--protocol", "per-mission", "--out",
                                  str(tmp_path / "live"), "--record", str(tmp_path / "fixture")])
        assert res.exit_code == 0, res.output
        requests = list(server.requests)
    # the third mission's first request holds the two earlier goals' gold calls and their results
    seen = [[c["id"] for m in r["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
            for r in requests]
    assert ["gold_0_0_0", "gold_1_0_0"] in seen
    assert len(list((tmp_path / "fixture" / "cassettes").iterdir())) == 3
    monkeypatch.delenv("OPENAI_API_KEY")
    res = runner.invoke(app, ["replay", str(tmp_path / "fixture"), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output
    assert "identical to the recording" in res.output


def _played(mission: Task, live: list[tuple[str | None, list[tuple[str, dict]]]]):
    """A per-mission trajectory by hand: the gold dialogue as the orchestrator plays it (no agent turn, its calls
    setup calls), then the live goal's user message and the agent's replies `live` (text, calls)."""
    from shiftbox.trajectory import Message, Termination, ToolCall, ToolCallRecord, Trajectory

    messages, calls = [], []

    def add(**fields):
        messages.append(Message(index=len(messages), **fields))
        return messages[-1]

    for t, turn in enumerate(mission.initial_state.gold_dialogue):
        add(role="user", content=turn.request, goal=turn.goal)
        for level, specs in enumerate(turn.calls):
            made = [ToolCall(id=f"gold_{t}_{level}_{i}", name=s.function_name, arguments=dict(s.params))
                    for i, s in enumerate(specs)]
            add(role="assistant", tool_calls=made)
            for c in made:
                add(role="tool", content="{}", tool_call_id=c.id)
        add(role="assistant", content=turn.answer)
    add(role="user", content="now this", goal=mission.goals[0])
    for turn, (text, made) in enumerate(live):
        message = add(role="assistant", content=text, agent_turn=turn,
                      tool_calls=[ToolCall(id=f"c{turn}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(made)])
        for c in message.tool_calls:
            calls.append(ToolCallRecord(call_id=c.id, message_index=message.index, agent_turn=turn, domain="nowhere",
                                        name=c.name, arguments=c.arguments, result={}, is_error=False))
            add(role="tool", content="{}", tool_call_id=c.id)
    return Trajectory(simulation_id=f"{mission.id}#0", task_id=mission.id, trial=0, domain="nowhere", seed=0,
                      agent="test", user="test", persona="EASY_1", goals=mission.goals, servers={}, messages=messages,
                      tool_calls=calls, shifts=[], termination=Termination(reason="user_stop", blame="none"),
                      final_state={})


def test_a_per_mission_run_is_scored_as_mmtbs_teacher_forced_table():
    """Each mission's live goal only (not the gold turns before it), at its real place, after its real types."""
    from shiftbox.metrics import compute_run_metrics

    m1, m2, m3 = mission_tasks(three_goal_task())
    trajectories = [
        _played(m1, [(None, [("find", {"name": "Ann"})]), ("Found you.", [])]),  # single: right
        _played(m2, [(None, [("get_x", {"id": "1"}), ("get_y", {"id": "2"})]), ("X-1, Y-2", [])]),  # parallel: right
        _played(m3, [(None, [("make", {"n": 1})]), ("Made.", [])]),  # serial: answers without confirm -> wrong
    ]
    run, sims = compute_run_metrics(trajectories, {m.id: m for m in (m1, m2, m3)})
    verdicts = [v for s in sims for v in s.paths]
    # by hand: goal_a single at 1; goal_b parallel (multiple) at 2, depends on a (one back); goal_c serial
    # (multiple) at 3, depends on a (two back); mission 3's walk: make, then text while confirm is due -> fails
    assert [(v.goal, v.position, v.mission_type, v.relation, v.success) for v in verdicts] == [
        ("goal_a", 1, "single", "none", True), ("goal_b", 2, "multiple", "previous", True),
        ("goal_c", 3, "multiple", "long_term", False)]
    assert [(v.gold_steps, v.matched, v.ending) for v in verdicts] == [(2, 2, "answered"), (3, 3, "answered"),
                                                                       (3, 1, "text_instead_of_call")]
    p = run.paths
    assert {k: (v.goals, v.accuracy) for k, v in p.prefixes.items() if v.goals} == {
        "single": (1, 1.0), "single->multiple": (1, 1.0), "single->multiple->multiple": (1, 0.0)}
    assert {k: v.accuracy for k, v in p.by_position.items()} == {"1": 1.0, "2": 1.0, "3": 0.0}
    assert {k: v.accuracy for k, v in p.by_relation.items()} == {"none": 1.0, "previous": 1.0, "long_term": 0.0}
