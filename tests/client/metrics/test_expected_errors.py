"""TSR's action channel counts a gold call expected to fail (`ToolCallSpec.expected_error`) as done only when it
failed with that kind (the task model and validator side: tests/client/tasks/test_expected_errors.py)."""

from __future__ import annotations

from shiftbox.metrics._tsr import action_score
from shiftbox.trajectory import Trajectory
from tests.client.tasks.test_expected_errors import RIGHT_EMAIL, WRONG_EMAIL, _call, _set


def test_tsr_action_channel_credits_the_expected_failure():
    sets = [_set("a", "find_user_id_by_email", WRONG_EMAIL, "not_found"), _set("b", "find_user_id_by_email",
                                                                                RIGHT_EMAIL)]
    trajectory = Trajectory.model_construct(tool_calls=[
        _call("find_user_id_by_email", WRONG_EMAIL, True, "not_found"),
        _call("find_user_id_by_email", RIGHT_EMAIL, False)])
    assert action_score(trajectory, sets) == 1.0
    only_success = Trajectory.model_construct(tool_calls=[_call("find_user_id_by_email", RIGHT_EMAIL, False)])
    assert action_score(only_success, sets) == 0.5  # 'a' counts only calls with its outcome: a not_found failure
