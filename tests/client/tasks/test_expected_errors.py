"""A gold call that is expected to fail (`ToolCallSpec.expected_error`): reference scenarios make some
lookups fail on purpose (the user gives a wrong email first). The task model states it, the validator
checks it against the snapshot, and matching (scripted user, TSR, GSRT) counts the expected failure as the
action done — and only that failure."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shiftbox.tasks import (
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    Instructions,
    Task,
    TaskFile,
    ToolCallSpec,
    UserScenario,
    satisfied_actions,
    validate_tasks,
)
from shiftbox.trajectory import ToolCallRecord
from shiftbox_servers.retail import DOMAIN

SNAPSHOT = DOMAIN.default_snapshot_dir()
WRONG_EMAIL = {"email": "nobody.here@example.com"}
RIGHT_EMAIL = {"email": "maya.santos1081@example.com"}


def _set(action_id: str, tool: str, params: dict, expected_error: str | None = None) -> ActionSet:
    return ActionSet(action_id=action_id, goal="order_tracking",
                     allowed_tools=[ToolCallSpec(function_name=tool, params=params, expected_error=expected_error)])


def _file(*sets: ActionSet) -> TaskFile:
    task = Task(id="t1", domain="retail",
                user_scenario=UserScenario(instructions=Instructions(reason_for_call="r"),
                                           goal_shifts=GoalShifts(required_shifts=0, goals=["order_tracking"])),
                evaluation_criteria=EvaluationCriteria(action_sets=list(sets)))
    return TaskFile(domain="retail", source="test", tasks=[task])


def test_the_model_states_an_expected_error_kind_and_omits_it_when_none():
    spec = ToolCallSpec(function_name="find_user_id_by_email", params=WRONG_EMAIL, expected_error="not_found")
    assert ToolCallSpec.model_validate_json(spec.model_dump_json()) == spec
    # files without the field are unchanged: None is not written
    assert "expected_error" not in ToolCallSpec(function_name="calculate").model_dump_json()
    with pytest.raises(ValidationError, match="expected_error"):
        ToolCallSpec(function_name="calculate", expected_error="boom")


def test_validator_accepts_a_gold_call_failing_as_expected_and_reports_every_other_outcome():
    found = validate_tasks(_file(
        _set("a", "find_user_id_by_email", WRONG_EMAIL, "not_found"),  # fails as expected: nothing to report
        _set("b", "find_user_id_by_email", RIGHT_EMAIL, "not_found"),  # succeeds although expected to fail
        _set("c", "get_order_details", {"order_id": "#W1054757"}, "precondition_failed"),  # succeeds too
        _set("d", "cancel_pending_order", {"order_id": "#W1037640", "reason": "no longer needed"}, "not_found"),
        _set("e", "find_user_id_by_email", WRONG_EMAIL),  # not expected to fail: a missing id, as before
    ), SNAPSHOT)
    errors = {f.field.split(".")[1]: f.problem for f in found if f.severity == "error"}
    assert set(errors) == {"action_sets[1]", "action_sets[2]", "action_sets[3]", "action_sets[4]"}
    assert "expected to fail with not_found, but it succeeds" in errors["action_sets[1]"]
    assert "fails with precondition_failed, not the expected not_found" in errors["action_sets[3]"]
    assert "missing from the snapshot" in errors["action_sets[4]"]


def _call(name: str, arguments: dict, is_error: bool, kind: str | None = None) -> ToolCallRecord:
    return ToolCallRecord(call_id=f"c{name}{is_error}", message_index=1, agent_turn=0, domain="retail", name=name,
                          arguments=arguments, result={}, is_error=is_error, error_kind=kind)


def test_an_expected_failure_satisfies_its_action_and_a_success_does_not():
    expecting = _set("a", "find_user_id_by_email", WRONG_EMAIL, "not_found")
    plain = _set("b", "find_user_id_by_email", RIGHT_EMAIL)
    failed = ("find_user_id_by_email", WRONG_EMAIL, True, "not_found")
    assert satisfied_actions([expecting, plain], [failed]) == {"a"}
    assert satisfied_actions([expecting], [("find_user_id_by_email", WRONG_EMAIL, False, None)]) == set()
    assert satisfied_actions([expecting], [("find_user_id_by_email", WRONG_EMAIL, True, "invalid_arguments")]) == set()
    # three-element calls (no kind known, e.g. a reference results file): any failure counts
    assert satisfied_actions([expecting], [("find_user_id_by_email", WRONG_EMAIL, True)]) == {"a"}
    assert satisfied_actions([plain], [("find_user_id_by_email", RIGHT_EMAIL, False)]) == {"b"}

