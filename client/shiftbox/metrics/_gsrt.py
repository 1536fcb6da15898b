"""GSRT: for each goal shift, agent turns until acknowledgment, first relevant tool, and outcome.

Counting starts at the shift's user message: the first assistant message after it is turn 1. A
stage is searched up to the next shift (the goal is no longer current after it); not reached =
None. Outcome: the first turn after which every action set of the new goal is satisfied by
successful calls (made at any time up to that turn); a goal without action sets is "not measured".
"""

from __future__ import annotations

from ..tasks import Task, satisfied_actions
from ..trajectory import Trajectory
from ._judges import DeterministicDetector, Judge
from ._model import ShiftRecovery


def shift_recoveries(trajectory: Trajectory, task: Task, judge: Judge | None, detector: DeterministicDetector,
                     transfer_tool: str = "transfer_to_human_agents") -> list[ShiftRecovery]:
    shifts = sorted(trajectory.shifts, key=lambda s: s.message_index)
    assistants = [m for m in trajectory.messages if m.role == "assistant"]
    results = []
    for i, shift in enumerate(shifts):
        end = shifts[i + 1].message_index if i + 1 < len(shifts) else len(trajectory.messages)
        turns = [m for m in assistants if shift.message_index < m.index < end]
        goal = shift.to_goal
        relevant = detector.relevant_tools.get(goal, set())
        actions = task.action_sets_for(goal)
        ack = tool = outcome = None
        for k, message in enumerate(turns, start=1):
            if ack is None:
                verdict = judge.acknowledges(trajectory, message, goal) if judge else None
                if verdict is None:
                    verdict = detector.acknowledges(trajectory, message, goal)
                ack = k if verdict else None
            if tool is None and any(c.name in relevant for c in message.tool_calls):
                tool = k
            if outcome is None and actions:
                made = [(c.name, c.arguments, c.is_error) for c in trajectory.tool_calls
                        if c.message_index <= message.index]
                if len(satisfied_actions(actions, made)) == len(actions):
                    outcome = k
        transferred = any(c.name == transfer_tool and not c.is_error and shift.message_index < c.message_index < end
                          for c in trajectory.tool_calls)
        results.append(ShiftRecovery(
            shift_index=shift.shift_index, from_goal=shift.from_goal, to_goal=goal,
            message_index=shift.message_index, ack=ack, tool=tool, outcome=outcome,
            outcome_measured=bool(actions), recovered=ack is not None and not transferred, transferred=transferred,
        ))
    return results
