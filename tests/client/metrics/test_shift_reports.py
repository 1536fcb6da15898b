"""How the agent's own shift reports (`log_shift_event`) are matched to the ground-truth shifts (the tool set that
records them: tests/client/orchestrator/test_shift_reports.py)."""

from __future__ import annotations

from shiftbox.metrics._shift_reports import shift_report_score
from shiftbox.trajectory import GoalShift, ShiftReport, Trajectory


def test_matching_rule_on_a_hand_built_trajectory():
    """A report matches the latest shift before it, if no earlier report matched that shift; a report before
    the first shift or a second one for the same shift matches nothing."""
    t = Trajectory.model_validate({
        "simulation_id": "s#0", "task_id": "s", "trial": 0, "domain": "banking", "seed": 0, "agent": "a",
        "user": "u", "persona": None, "goals": ["a", "b", "c"], "servers": {}, "messages": [],
        "tool_calls": [], "termination": {"reason": "user_stop"}, "final_state": {},
        "shifts": [GoalShift(shift_index=1, from_goal="a", to_goal="b", message_index=5).model_dump(),
                   GoalShift(shift_index=2, from_goal="b", to_goal="c", message_index=12).model_dump()],
        "shift_reports": [ShiftReport(message_index=i, agent_turn=None, turn_no=0, from_class="x", to_class="y",
                                      trigger_terms=[], requires_reauth=False).model_dump() for i in (3, 6, 8, 20)],
    })
    s = shift_report_score(t)
    assert (s.shifts, s.reports, s.matched, s.precision, s.recall) == (2, 4, 2, 0.5, 1.0)
    assert s.delays == [1, 8]        # messages from each shift to its matching report

