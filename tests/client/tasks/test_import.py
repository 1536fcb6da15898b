"""Importing AgentChangeBench / tau2 task lists, assigning goals, and loading any task file."""

from __future__ import annotations

import json

import pytest

from shiftbox.agentchangebench import assign_goals, import_agentchangebench
from shiftbox.tasks import (
    GoalShifts,
    Instructions,
    Task,
    TaskFile,
    UserScenario,
    load_task_file,
)
from tests.conftest import require_acb

FILES = ["banking/tasks.json", "retail/tasks.json", "retail/tasks-new.json", "airline/tasks.json",
         "airline/tasks_new.json"]


def _raw(name: str) -> list[dict]:
    return json.loads(require_acb(*name.split("/")).read_text())


@pytest.mark.parametrize("name", FILES)
def test_every_reference_file_imports_with_its_tasks_and_action_sets(name):
    raw = _raw(name)
    tf = import_agentchangebench(require_acb(*name.split("/")))
    assert [t.id for t in tf.tasks] == [str(t["id"]) for t in raw]
    domain = name.split("/")[0]
    assert tf.domain == domain and all(t.domain == domain for t in tf.tasks)
    assert tf.source == f"agentchangebench {name}"
    for task, ref in zip(tf.tasks, raw, strict=True):
        criteria = ref["evaluation_criteria"]
        expected = [a["action_id"] for a in (criteria.get("action_sets") or criteria.get("actions") or [])]
        assert [a.action_id for a in task.evaluation_criteria.action_sets] == expected
        assert task.user_scenario.persona == ref["user_scenario"]["persona"]
        assert task.evaluation_criteria.nl_assertions == (criteria["nl_assertions"] or [])
        assert task.evaluation_criteria.communicate_info == (criteria["communicate_info"] or [])
        assert task.goals == ref["user_scenario"]["goal_shifts"]["goals"]
        assert all(a.goal in task.goals for a in task.evaluation_criteria.action_sets)


@pytest.mark.parametrize(("name", "snapshot"), [("banking/tasks.json", "banking/acb-v1"),
                                                ("retail/tasks.json", "retail/acb-v1"),
                                                ("airline/tasks_new.json", "airline/v1")])
def test_snapshot_of_reference_tasks(name, snapshot):
    assert import_agentchangebench(require_acb(*name.split("/"))).snapshot == snapshot


def test_banking_task_1_goals_follow_the_goal_table():
    tf = import_agentchangebench(require_acb("banking", "tasks.json"))
    task = next(t for t in tf.tasks if t.id.startswith("1_"))
    assert [(a.action_id, a.goal) for a in task.evaluation_criteria.action_sets] == [
        ("identify_customer", "authentication"), ("review_transactions", "transactions"),
        ("file_dispute", "dispute")]
    # action_sets format keeps required_parameters; the ticket lands in the notes
    assert task.evaluation_criteria.action_sets[0].required_parameters == ["phone_number"]
    raw = next(t for t in _raw("banking/tasks.json") if t["id"] == task.id)
    assert task.description.notes.endswith(f"Ticket: {raw['ticket']}")
    assert task.description.notes.startswith(raw["description"]["notes"])
    assert task.initial_state.data == {k: raw["initial_state"][k]
                                       for k in ("initialization_data", "message_history")}


def test_tau2_actions_become_a_chain_of_single_tool_sets():
    raw = next(t for t in _raw("retail/tasks.json") if t["evaluation_criteria"]["actions"])
    tf = import_agentchangebench(require_acb("retail", "tasks.json"))
    task = next(t for t in tf.tasks if t.id == str(raw["id"]))
    actions = raw["evaluation_criteria"]["actions"]
    sets = task.evaluation_criteria.action_sets
    assert [(s.allowed_tools[0].function_name, s.allowed_tools[0].params) for s in sets] == [
        (a["name"], a["arguments"]) for a in actions]
    assert all(len(s.allowed_tools) == 1 and s.required_parameters is None for s in sets)
    assert sets[0].depends_on == []
    assert [s.depends_on for s in sets[1:]] == [[a["action_id"]] for a in actions[:-1]]
    assert task.initial_state.data is None and task.initial_state.tool_calls == []
    assert task.user_scenario.instructions.unknown_info == (raw["user_scenario"]["instructions"]["unknown_info"] or "")


def test_user_initialization_actions_are_kept_as_data():
    raw = _raw("retail/tasks-new.json")[0]
    task = import_agentchangebench(require_acb("retail", "tasks-new.json")).tasks[0]
    assert [a["env_type"] for a in raw["initial_state"]["initialization_actions"]] == ["user"]
    assert task.initial_state.tool_calls == []
    assert task.initial_state.data["initialization_actions"] == raw["initial_state"]["initialization_actions"]
    assert task.initial_state.data["initialization_data"] == raw["initial_state"]["initialization_data"]


def _reference_task(**overrides) -> dict:
    task = {
        "id": 7,
        "user_scenario": {"persona": None, "instructions": {"domain": "banking", "reason_for_call": "x",
                                                            "known_info": None},
                          "goal_shifts": {"required_shifts": 1, "goals": ["cards", "statements"]}},
        "initial_state": {"initialization_actions": [
            {"env_type": "assistant", "func_name": "lock_card", "arguments": {"card_id": "card_1"}},
            {"env_type": "user", "func_name": "set_user_info", "arguments": {"name": "A"}}]},
        "evaluation_criteria": {"actions": [
            {"action_id": "a", "name": "get_statements", "arguments": {"account_id": "acc_1"}, "info": None},
            {"action_id": "b", "name": "unlock_card", "arguments": {"card_id": "card_1"}, "info": None}],
            "communicate_info": None, "nl_assertions": None},
    }
    task.update(overrides)
    return task


def test_agent_initialization_actions_become_tool_calls(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([_reference_task()]))
    task = import_agentchangebench(path).tasks[0]
    assert task.id == "7"
    assert [(c.function_name, c.params) for c in task.initial_state.tool_calls] == [("lock_card", {"card_id": "card_1"})]
    assert [a["func_name"] for a in task.initial_state.data["initialization_actions"]] == ["set_user_info"]
    assert task.user_scenario.instructions.known_info == ""
    assert task.evaluation_criteria.nl_assertions == [] and task.evaluation_criteria.communicate_info == []
    # get_statements is not a "cards" tool but "statements" comes later: the pointer moves there;
    # unlock_card is a "cards" tool, but the pointer never moves back
    assert [a.goal for a in task.evaluation_criteria.action_sets] == ["statements", "statements"]


def test_assign_goals_pointer_rules():
    table = {"a": ("t1",), "b": ("t2",), "c": ("t1", "t3")}
    assert assign_goals([["x"], ["t2"], ["t1"], ["x"], ["t3"]], ["a", "b", "c"], table) == ["a", "b", "c", "c", "c"]
    # earliest match at or after the pointer wins: t1 belongs to both a and c, a comes first
    assert assign_goals([["t1"], ["t3"]], ["a", "c"], table) == ["a", "c"]
    # no table (domain not installed): every set stays with the first goal
    assert assign_goals([["t1"], ["t2"]], ["a", "b"], {}) == ["a", "a"]
    assert assign_goals([["t1"]], [], table) == [None]


def test_domain_is_taken_from_the_tasks_or_given(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([_reference_task()]))
    with pytest.raises(ValueError, match="not 'retail'"):
        import_agentchangebench(path, "retail")
    nameless = _reference_task()
    del nameless["user_scenario"]["instructions"]["domain"]
    path.write_text(json.dumps([nameless]))
    with pytest.raises(ValueError, match="cannot tell the domain"):
        import_agentchangebench(path)
    assert import_agentchangebench(path, "banking").domain == "banking"


def _tau2_task(task_id: str, *names: str) -> dict:
    """A task in tau2's own format: no goal_shifts (only AgentChangeBench adds them)."""
    args = {"find_user_id_by_email": {"email": "a@example.com"}, "get_user_details": {"user_id": "a_1"},
            "get_order_details": {"order_id": "#W1"}, "cancel_pending_order": {"order_id": "#W1",
                                                                               "reason": "no longer needed"},
            "transfer_to_human_agents": {"summary": "s"}, "modify_user_address": {"user_id": "a_1"}}
    return {"id": task_id, "user_scenario": {"persona": None, "instructions": {"domain": "retail",
                                                                              "reason_for_call": "r"}},
            "evaluation_criteria": {"actions": [{"action_id": f"{task_id}_{i}", "name": n, "arguments": args[n]}
                                                for i, n in enumerate(names)]}}


def test_a_task_without_goal_shifts_is_a_single_goal_task(tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([
        _tau2_task("0", "find_user_id_by_email", "get_order_details", "cancel_pending_order", "modify_user_address"),
        _tau2_task("1", "find_user_id_by_email", "get_user_details", "get_order_details"),
        _tau2_task("2", "find_user_id_by_email", "transfer_to_human_agents"),
        _tau2_task("3"),
    ]))
    tf = import_agentchangebench(path)
    for task in tf.tasks:
        assert task.user_scenario.goal_shifts.required_shifts == 0 and len(task.goals) == 1
        assert all(a.goal == task.goals[0] for a in task.evaluation_criteria.action_sets)
    # the goal whose tools include the first state-changing gold call; with none, the goal whose tools
    # include the most gold calls (the first such in the domain's table); with no gold call, "request"
    assert [t.goals[0] for t in tf.tasks] == ["order_cancellation", "order_tracking", "order_tracking", "request"]
    assert load_task_file(path) == tf


def _native() -> TaskFile:
    scenario = UserScenario(instructions=Instructions(reason_for_call="r"),
                            goal_shifts=GoalShifts(required_shifts=0, goals=["cards"]))
    return TaskFile(domain="banking", source="test", tasks=[Task(id="t1", domain="banking", user_scenario=scenario)])


def test_load_native_and_reference_files(tmp_path):
    native = tmp_path / "native.json"
    native.write_text(_native().model_dump_json(indent=2))
    assert load_task_file(native) == _native()
    loaded = load_task_file(require_acb("banking", "tasks.json"))
    assert loaded == import_agentchangebench(require_acb("banking", "tasks.json"))


@pytest.mark.parametrize(("content", "expected"), [
    ("{not json", "not JSON (line 1, column 2"),
    ('"tasks"', "got a JSON string"),
    ('{"task": []}', 'got an object without "tasks"'),
    ('{"domain": "banking", "source": "s", "tasks": [{"id": "t1"}]}', "tasks[0].domain: Field required"),
    ('[{"id": "x", "user_scenario": {}}]', "[0].user_scenario.instructions: Field required"),
])
def test_load_errors_name_the_file_and_the_problem(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError) as info:
        load_task_file(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_load_missing_file(tmp_path):
    with pytest.raises(ValueError, match="cannot read the file"):
        load_task_file(tmp_path / "nope.json")
