"""The task validator: every check on small hand-made files, and the known defects of the reference data."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from shiftbox.agentchangebench import import_agentchangebench
from shiftbox.tasks import (
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    InitialState,
    Instructions,
    Task,
    TaskFile,
    ToolCallSpec,
    UserScenario,
    validate_tasks,
)
from shiftbox_servers.banking import import_agentchangebench as import_acb_snapshot
from shiftbox_servers.kit import domain_names
from tests.conftest import require_acb


@pytest.fixture(scope="module")
def acb_snapshot(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("acb-snapshot")
    import_acb_snapshot(require_acb("banking", "db.toml"), directory)
    return directory


def call(name: str, **params) -> ToolCallSpec:
    return ToolCallSpec(function_name=name, params=params)


def task(task_id: str = "t1", *sets: ActionSet, goals=("cards",), shifts: int | None = None,
         known: str = "", communicate=(), initial=(), nl=(), by_goal=None) -> Task:
    return Task(
        id=task_id, domain="banking",
        user_scenario=UserScenario(
            instructions=Instructions(reason_for_call="r", known_info=known),
            goal_shifts=GoalShifts(required_shifts=len(goals) - 1 if shifts is None else shifts, goals=list(goals))),
        initial_state=InitialState(tool_calls=list(initial)),
        evaluation_criteria=EvaluationCriteria(action_sets=list(sets), communicate_info=list(communicate),
                                               nl_assertions=list(nl), **({"communicate_info_by_goal": by_goal}
                                                                          if by_goal is not None else {})),
    )


def action(action_id: str, *calls: ToolCallSpec, goal: str | None = "cards", depends_on=()) -> ActionSet:
    return ActionSet(action_id=action_id, goal=goal, allowed_tools=list(calls), depends_on=list(depends_on))


def tasks(*items: Task, domain: str = "banking") -> TaskFile:
    return TaskFile(domain=domain, source="test", tasks=list(items))


def fields(findings) -> list[tuple[str, str, str]]:
    return [(f.task_id, f.field, f.severity) for f in findings]


def test_a_clean_file_has_no_findings():
    assert validate_tasks(tasks(task("t1", action("a", call("lock_card", card_id="c1"))))) == []


def test_repeated_task_ids_are_counted_in_file_order_for_validate_and_run_alike(tmp_path):
    """One rule (`repeated_task_ids`) for `tasks validate` and `shiftbox run`'s planning."""
    from shiftbox.errors import RunPlanError
    from shiftbox.runs import plan_run
    from shiftbox.tasks import repeated_task_ids

    file = tasks(task("t2"), task("t1"), task("t2"), task("t3"), task("t1"), task("t2"))
    assert repeated_task_ids(file) == {"t2": 3, "t1": 2}  # by hand: t2 three times, t1 twice, t3 once
    assert [(f.task_id, f.problem) for f in validate_tasks(file) if f.field == "id"] == [
        ("t1", "task id 't1' is used by 2 tasks"), ("t2", "task id 't2' is used by 3 tasks")]
    with pytest.raises(RunPlanError, match="uses these task ids more than once: t1, t2;"):
        plan_run(file, tmp_path / "run")


def test_unknown_tool_names_a_tool_that_takes_the_params():
    found = validate_tasks(tasks(task("t1", action("a", call("get_account", account_id="x"),
                                                          call("lock_kard", card_id="c", reason="lost")))))
    assert fields(found) == [("t1", "evaluation_criteria.action_sets[0].allowed_tools[1].function_name", "error")]
    assert "lock_kard" in found[0].problem and "lock_card" in found[0].fix


def test_params_outside_the_schema_and_values_the_tool_rejects():
    found = validate_tasks(tasks(task("t1", action("a", call("get_statements", account_id="a", colour="red",
                                                                  limit="5")))))
    at = "evaluation_criteria.action_sets[0].allowed_tools[0].params"
    assert fields(found) == [("t1", f"{at}.colour", "error"), ("t1", f"{at}.limit", "error")]
    assert "account_id, limit" in found[0].fix
    # partial gold specs are fine: a missing required param is not reported without a snapshot
    assert validate_tasks(tasks(task("t1", action("a", call("file_dispute", tx_id="tx_1"))))) == []


def test_initial_state_calls_are_checked_too():
    found = validate_tasks(tasks(task("t1", action("a", call("lock_card", card_id="c1")),
                                      initial=[call("freeze_everything")])))
    assert fields(found) == [("t1", "initial_state.tool_calls[0].function_name", "error")]


def test_structure_checks():
    file = tasks(
        task("t1", action("a", goal="cards"), action("b", goal="dispute"), action("a", goal=None, depends_on=["z"]),
             goals=("cards", "payments"), shifts=2, known="My card is card_303, phone 555", communicate=["CARD_303", "55"]),
        task("t1"),
    )
    found = validate_tasks(file)
    sets = "evaluation_criteria.action_sets"
    assert fields(found) == [
        ("t1", f"{sets}[1].goal", "error"),
        ("t1", f"{sets}[2].action_id", "error"),
        ("t1", f"{sets}[2].depends_on[0]", "error"),
        ("t1", f"{sets}[2].goal", "warning"),
        ("t1", "evaluation_criteria.communicate_info[0]", "error"),
        ("t1", "id", "error"),
        ("t1", "user_scenario.goal_shifts.goals[0]", "warning"),  # the second t1: no action set at all
        ("t1", "user_scenario.goal_shifts.goals[1]", "warning"),  # payments: no action set serves it
        ("t1", "user_scenario.goal_shifts.required_shifts", "error"),
    ]
    # "55" is part of "555", not a value the user said
    assert "'CARD_303'" in found[4].problem and "set required_shifts to 1" in found[8].fix


def test_a_goal_with_only_an_nl_assertion_is_a_warning_naming_task_goal_and_fix():
    """Without a judge nothing measures such a goal, so an agent that skips it loses nothing."""
    found = validate_tasks(tasks(task("t1", action("a", call("lock_card", card_id="c1")), goals=("cards", "insights"),
                                      nl=["Agent gave general budgeting tips"])))
    assert fields(found) == [("t1", "user_scenario.goal_shifts.goals[1]", "warning")]
    assert "'insights'" in found[0].problem and "no deterministic check" in found[0].problem
    assert "action set" in found[0].fix and "communicate_info_by_goal" in found[0].fix


def test_communicate_info_attributed_to_a_goal_is_its_deterministic_check():
    lock = action("a", call("lock_card", card_id="c1"))
    assert validate_tasks(tasks(task("t1", lock, goals=("cards", "insights"), communicate=["Starbucks"],
                                     by_goal={"insights": ["Starbucks"]}))) == []
    # unattributed items belong to no goal of a multi-goal task ...
    found = validate_tasks(tasks(task("t1", lock, goals=("cards", "insights"), communicate=["Starbucks"])))
    assert fields(found) == [("t1", "user_scenario.goal_shifts.goals[1]", "warning")]
    # ... but to the only goal of a one-goal task
    assert validate_tasks(tasks(task("t1", goals=("insights",), communicate=["Starbucks"]))) == []


def test_communicate_info_by_goal_names_goals_and_items_of_the_task():
    found = validate_tasks(tasks(task("t1", action("a", call("lock_card", card_id="c1")), goals=("cards",),
                                      communicate=["Locked", "tx_1"],
                                      by_goal={"cards": ["Locked", "tx_9"], "payments": ["tx_1"],
                                               "dispute": ["Locked"]})))
    by_goal = "evaluation_criteria.communicate_info_by_goal"
    assert fields(found) == [
        ("t1", f"{by_goal}.cards[1]", "error"),
        ("t1", f"{by_goal}.dispute", "error"),
        ("t1", f"{by_goal}.payments", "error"),
    ]
    assert "'tx_9' is not in communicate_info" in found[0].problem
    assert "goal 'dispute', which is not in the goal list" in found[1].problem
    # one item may serve two goals (said once, it counts for both)
    assert validate_tasks(tasks(task("t1", goals=("cards", "dispute"), communicate=["Locked"],
                                     by_goal={"cards": ["Locked"], "dispute": ["Locked"]}))) == []


def test_rubric_items_must_be_written_and_not_repeated():
    """Each rubric item is one verdict: a blank one checks nothing, a repeated one counts twice."""
    lock = action("a", call("lock_card", card_id="c1"))
    base = task("t1", lock)
    ok = base.model_copy(update={"evaluation_criteria": base.evaluation_criteria.model_copy(
        update={"rubric": ["The agent locks the card.", "The agent confirms the lock."]})})
    assert validate_tasks(tasks(ok)) == []
    bad = base.model_copy(update={"evaluation_criteria": base.evaluation_criteria.model_copy(
        update={"rubric": ["The agent locks the card.", "  ", "the agent  locks the card."]})})
    found = validate_tasks(tasks(bad))
    assert fields(found) == [("t1", "evaluation_criteria.rubric[1]", "error"),
                             ("t1", "evaluation_criteria.rubric[2]", "error")]
    assert "blank" in found[0].problem and "repeats item [0]" in found[1].problem


def test_a_task_without_rubric_items_is_written_as_before():
    """The field is optional and written only when set: task files and their digests do not change."""
    plain = task("t1", action("a", call("lock_card", card_id="c1")))
    assert "rubric" not in plain.model_dump(mode="json")["evaluation_criteria"]
    assert "rubric" not in plain.model_dump_json()
    graded = plain.model_copy(update={"evaluation_criteria": plain.evaluation_criteria.model_copy(
        update={"rubric": ["The agent locks the card."]})})
    data = json.loads(tasks(graded).model_dump_json())
    assert data["tasks"][0]["evaluation_criteria"]["rubric"] == ["The agent locks the card."]
    assert TaskFile.model_validate(data).tasks[0] == graded


def test_findings_are_sorted_in_natural_task_order():
    file = tasks(*(task(f"{n}_x", goals=(), shifts=0) for n in (10, 2, 1)))
    assert [f.task_id for f in validate_tasks(file)] == ["1_x", "2_x", "10_x"]


def test_replay_reports_missing_ids_schema_failures_and_other_failures(acb_snapshot):
    gold = task("t1",
                action("find", call("get_customer_by_id", customer_id="cust_999")),
                action("dispute", call("file_dispute", account_id="acc_001", tx_id="tx_101", reason_code="other")),
                action("again", call("file_dispute", account_id="acc_001", tx_id="tx_101", reason_code="other")),
                action("partial", call("get_account"), call("lock_kard")),  # only the first alternative runs
                action("unknown", call("lock_kard", card_id="x")))  # reported statically, not replayed
    other = task("t2", action("dispute", call("file_dispute", account_id="acc_001", tx_id="tx_101",
                                                reason_code="other")))
    found = validate_tasks(tasks(gold, other), acb_snapshot)
    sets = "evaluation_criteria.action_sets"
    assert fields(found) == [
        ("t1", f"{sets}[0].allowed_tools[0].params.customer_id", "error"),
        ("t1", f"{sets}[2].allowed_tools[0]", "warning"),
        ("t1", f"{sets}[3].allowed_tools[0]", "error"),
        ("t1", f"{sets}[3].allowed_tools[1].function_name", "error"),
        ("t1", f"{sets}[4].allowed_tools[0].function_name", "error"),
    ]  # t2 repeats t1's dispute, but on a fresh episode, so it succeeds
    assert "'cust_999' is missing from the snapshot banking/acb-v1" in found[0].problem
    assert "conflict" in found[1].problem
    assert "doesn't match the tool's schema" in found[2].problem and "account_id" in found[2].problem


def test_snapshot_of_another_domain_is_refused(acb_snapshot):
    with pytest.raises(ValueError, match="is for domain 'banking'"):
        validate_tasks(tasks(domain="echo"), acb_snapshot)


# -- the reference data -------------------------------------------------------------------------


def _acb(name: str) -> tuple[list[dict], TaskFile]:
    path = require_acb(*name.split("/"))
    return json.loads(path.read_text()), import_agentchangebench(path)


def test_banking_unknown_tool_is_exactly_customer_detailsrequest():
    raw, file = _acb("banking/tasks.json")
    expected = {t["id"] for t in raw for a in t["evaluation_criteria"]["action_sets"]
                for tool in a["allowed_tools"] if tool["function_name"] == "customer_detailsrequest"}
    assert {i.split("_")[0] for i in expected} == {"8", "46", "47", "48", "50"}
    unknown = [f for f in validate_tasks(file) if f.field.endswith(".function_name")]
    assert {f.task_id for f in unknown} == expected and len(unknown) == len(expected)
    assert all("customer_detailsrequest" in f.problem and "create_payment_request" in f.fix for f in unknown)


def test_banking_findings_without_a_snapshot_are_the_tool_and_communicate_info_defects():
    raw, file = _acb("banking/tasks.json")
    repeated = {(t["id"], f"evaluation_criteria.communicate_info[{k}]") for t in raw
                for k, v in enumerate(t["evaluation_criteria"]["communicate_info"] or [])
                if v.lower() in t["user_scenario"]["instructions"]["known_info"].lower()}
    found = [f for f in validate_tasks(file) if "no deterministic check" not in f.problem]
    assert {(f.task_id, f.field) for f in found if "communicate_info" in f.field} == repeated
    assert len(found) == len(repeated) + 5 and all(f.severity == "error" for f in found)


@pytest.mark.parametrize("name", ["banking/tasks.json", "retail/tasks.json", "retail/tasks-new.json",
                                  "airline/tasks.json", "airline/tasks_new.json"])
def test_reference_goals_without_a_deterministic_check_are_warnings(name):
    """The reference tasks still import; each goal that no action set serves (their communicate_info is never
    attributed to a goal, and they have no one-goal task with communicate_info) gets one warning."""
    raw, file = _acb(name)
    expected = set()
    for t in file.tasks:
        expected |= {(t.id, f"user_scenario.goal_shifts.goals[{i}]") for i, g in enumerate(t.goals)
                     if not t.action_sets_for(g) and not (len(t.goals) == 1 and t.evaluation_criteria.communicate_info)}
    assert expected and len(file.tasks) == len(raw)
    found = [f for f in validate_tasks(file) if "no deterministic check" in f.problem]
    assert {(f.task_id, f.field) for f in found} == expected and len(found) == len(expected)
    assert all(f.severity == "warning" for f in found)


def test_retail_new_has_25_shift_count_mismatches():
    raw, file = _acb("retail/tasks-new.json")
    expected = {t["id"] for t in raw
                if t["user_scenario"]["goal_shifts"]["required_shifts"] != len(t["user_scenario"]["goal_shifts"]["goals"]) - 1}
    assert len(expected) == 25
    found = [f for f in validate_tasks(file) if f.field == "user_scenario.goal_shifts.required_shifts"]
    assert {f.task_id for f in found} == expected and len(found) == 25


def test_uninstalled_domain_gets_one_file_level_warning_and_no_tool_checks():
    """The reference's retail tasks under a domain name no package installs (retail itself always is): one warning
    for the file, and none of the tool checks an installed domain gets."""
    _, file = _acb("retail/tasks-new.json")
    absent = "retail_not_installed"
    assert absent not in domain_names()
    file = file.model_copy(update={"domain": absent,
                                   "tasks": [t.model_copy(update={"domain": absent}) for t in file.tasks]})
    found = validate_tasks(file)
    skipped = [f for f in found if f.task_id == "*"]
    assert len(skipped) == 1 and skipped[0].severity == "warning" and "isn't installed" in skipped[0].problem
    assert found[0] == skipped[0]
    assert not any(".allowed_tools" in f.field for f in found)


def test_banking_not_found_findings_name_ids_missing_from_db_toml(acb_snapshot):
    raw, file = _acb("banking/tasks.json")
    db = tomllib.loads(require_acb("banking", "db.toml").read_text())
    known = {v for rows in db.values() for row in rows for k, v in row.items() if k.endswith("_id")}
    # by hand: id-valued params of each task's gold path (first allowed tool) that db.toml lacks
    expected = {(t["id"], v) for t in raw for a in t["evaluation_criteria"]["action_sets"]
                for k, v in a["allowed_tools"][0]["params"].items()
                if k.endswith("_id") and v not in known and a["allowed_tools"][0]["function_name"] != "customer_detailsrequest"}
    assert expected  # the data does have such ids
    found = [f for f in validate_tasks(file, acb_snapshot) if "missing from the snapshot" in f.problem]
    named = {(f.task_id, re.search(r"id '([^']+)'", f.problem).group(1)) for f in found}
    assert named == expected
    by_id = {t["id"]: t for t in raw}
    for f in found:  # the field path points at the value named
        i, param = re.search(r"action_sets\[(\d+)\]\.allowed_tools\[0\]\.params\.(\w+)$", f.field).groups()
        value = by_id[f.task_id]["evaluation_criteria"]["action_sets"][int(i)]["allowed_tools"][0]["params"][param]
        assert f"'{value}'" in f.problem
