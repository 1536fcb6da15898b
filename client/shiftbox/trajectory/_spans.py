"""When each goal of a conversation is current: the one rule GSRT, path evaluation and Inspect's shift events share.

A goal is current from the message that raised it (the first goal: from the first message) up to the next goal's
start, which it does not include. What differs between readers is only where a stacked request's later goals start
(`goal_spans`' `stacked`), and whether the starts come from the harness's shift records or, while the conversation
is still running, from the user messages' goals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from ._model import GoalShift, Message

StackedRule = Literal["shared", "turned_to"]


class GoalSpan(NamedTuple):
    """A goal and the messages while it was current: indexes `start` to `end - 1` (empty when they are equal)."""

    goal: str | None
    start: int
    end: int
    from_goal: str | None = None
    """The goal current before it; None for the opening goal."""
    shift: GoalShift | None = None
    """The recorded shift that raised it; None for the opening goal and for spans read off the messages."""


def goal_spans(messages: Sequence[Message], shifts: Sequence[GoalShift] | None, *, goals: Sequence[str] = (),
               stacked: StackedRule = "turned_to") -> list[GoalSpan]:
    """The opening goal's span, then one span per shift, in message order.

    `shifts`: the trajectory's shift records; None reads the goal changes off the user messages instead (a user
    message whose goal differs from the previous user message's, when that one had a goal), as a live observer
    must (Inspect's agent writes its shift events before the harness's records exist); there every change is
    a message of its own, so `stacked` does not matter. `goals`: the task's goal sequence, which names the spans
    in turn (a shift past it is named by its `to_goal`) and which `turned_to` needs.

    `stacked`: the shifts of one stacked request share its message, and the readers deliberately differ on when
    the later goals start. "shared" (GSRT): each starts at the request, and all of them end at the next later
    shift, because recovery is timed from the moment the user asked. "turned_to" (path evaluation): goal i starts
    at the first user message after goal i-1's start that has goal i (the conversation's end if none), because
    each call is judged against one goal at a time, and the calls made for the first goal are not the second's.
    """
    n = len(messages)
    if shifts is None:
        return _read_off(messages)
    ordered = sorted(shifts, key=lambda s: s.message_index)
    raised: list[GoalShift | None] = ([None] if messages else []) + list(ordered)
    starts = [0 if s is None else s.message_index for s in raised]
    if stacked == "turned_to":
        for i in range(1, min(len(starts), len(goals))):
            if starts[i] <= starts[i - 1]:  # a stacked request's later goal: current once the user turns to it
                starts[i] = next((m.index for m in messages if m.role == "user" and m.index > starts[i - 1]
                                  and m.goal == goals[i]), n)
        ends = starts[1:] + [n] if starts else []
    else:
        ends = [next((later for later in starts[i + 1:] if later > start), n) for i, start in enumerate(starts)]
    opening = _first_goal(messages)
    return [GoalSpan(goals[i] if i < len(goals) else shift.to_goal if shift else opening, start, end,
                     shift.from_goal if shift else None, shift)
            for i, (shift, start, end) in enumerate(zip(raised, starts, ends, strict=True))]


def _first_goal(messages: Sequence[Message]) -> str | None:
    return next((m.goal for m in messages if m.role == "user" and m.goal is not None), None)


def _read_off(messages: Sequence[Message]) -> list[GoalSpan]:
    """Spans from the user messages' goals: a change wherever a user message's goal differs from the previous
    user message's known goal."""
    changes: list[tuple[int, str, str | None]] = []
    previous: str | None = None
    for m in messages:
        if m.role != "user":
            continue
        if previous is not None and m.goal != previous:
            changes.append((m.index, previous, m.goal))
        previous = m.goal
    if not messages:
        return []
    starts = [0] + [at for at, _, _ in changes]
    ends = starts[1:] + [len(messages)]
    return [GoalSpan(_first_goal(messages), 0, ends[0])] + [
        GoalSpan(goal, at, end, before) for (at, before, goal), end in zip(changes, ends[1:], strict=True)]
