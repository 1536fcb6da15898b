"""GSRT: for each goal shift, agent turns until acknowledgment, first relevant tool, and outcome.

Counting starts at the shift's user message: the first assistant message after it is turn 1. Every
stage counts only what happened after the shift and is searched up to the next shift at a later
message (the goal is no longer current after it; the shifts of one stacked request share their
message and window: `shiftbox.trajectory.goal_spans`, stacked="shared"); not reached = None.
Outcome: the first turn after which every action set of the new goal is met. A set already met before the shift stays met (a read need not be repeated),
but at least one set must be met by a call after it: when all of them were met before the shift
there is nothing to time, and the outcome is not measured (`outcome_before_shift`). A goal without
action sets is not measured either.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from shiftbox_servers.kit import domain_of

from ..tasks import Task, satisfied_actions
from ..trajectory import GoalShift, Message, Trajectory, goal_spans
from ._judges import DeterministicDetector, Judge
from ._model import ShiftRecovery


class ShiftWindow(NamedTuple):
    """A goal shift and the span GSRT times it over: from its message up to the next shift's (or the end)."""

    shift: GoalShift
    end: int
    """The message index the window stops before: the next later shift's message, or the conversation's length."""
    turns: list[Message]
    """The assistant messages inside the window; agent turn k after the shift is `turns[k - 1]`."""


def shift_windows(trajectory: Trajectory) -> list[ShiftWindow]:
    """Each shift's window, in message order (the turn count GSRT stages and the report's badges share): its goal's
    span with a stacked request's shifts sharing its message (`goal_spans`, stacked="shared")."""
    assistants = [m for m in trajectory.messages if m.role == "assistant"]
    return [ShiftWindow(span.shift, span.end, [m for m in assistants if span.start < m.index < span.end])
            for span in goal_spans(trajectory.messages, trajectory.shifts, stacked="shared") if span.shift is not None]


def shift_recoveries(trajectory: Trajectory, task: Task, judge: Judge | None, detector: DeterministicDetector,
                     transfer_tool: str | Collection[str] = "transfer_to_human_agents") -> list[ShiftRecovery]:
    """Each shift's GSRT stages; `transfer_tool` names the tool (or, across domains, the tools) that hand the
    customer to a human."""
    transfers = {transfer_tool} if isinstance(transfer_tool, str) else set(transfer_tool)
    calls = [(c.message_index, (c.name, c.arguments, c.is_error, c.error_kind)) for c in trajectory.tool_calls]
    results = []
    for shift, end, turns in shift_windows(trajectory):
        start = shift.message_index
        goal = shift.to_goal
        relevant = detector.relevant_tools.get(goal, set())
        actions = task.action_sets_for(goal)
        met_before = satisfied_actions(actions, [c for at, c in calls if at < start])
        remaining = [a for a in actions if a.action_id not in met_before]
        ack = tool = outcome = None
        for k, message in enumerate(turns, start=1):
            if ack is None:
                verdict = judge.acknowledges(trajectory, message, goal) if judge else None
                if verdict is None:
                    verdict = detector.acknowledges(trajectory, message, goal)
                ack = k if verdict else None
            if tool is None and any(c.name in relevant for c in message.tool_calls):
                tool = k
            if outcome is None and remaining:
                made = [c for at, c in calls if start < at <= message.index]
                if len(satisfied_actions(remaining, made)) == len(remaining):
                    outcome = k
        transferred = any(c.name in transfers and not c.is_error and start < c.message_index < end
                          for c in trajectory.tool_calls)
        results.append(ShiftRecovery(
            shift_index=shift.shift_index, from_goal=shift.from_goal, to_goal=goal, message_index=start,
            ack=ack, tool=tool, outcome=outcome, outcome_measured=bool(remaining),
            outcome_before_shift=bool(actions) and not remaining,
            recovered=ack is not None and not transferred, transferred=transferred,
            crossed_domains=crossed_domains(shift),
        ))
    return results


def crossed_domains(shift: GoalShift) -> bool | None:
    """Whether a shift moved to another domain's goal (namespaced goals, `airline__booking`); None when neither
    goal is namespaced (a single-domain conversation)."""
    before, after = domain_of(shift.from_goal), domain_of(shift.to_goal)
    return None if before is None and after is None else before != after
