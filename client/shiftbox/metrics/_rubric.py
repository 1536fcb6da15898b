"""The rubric sliding-window judge (VitaBench, arXiv 2509.26490): a task's rubric items judged window by window.

As VitaBench's evaluator does: the conversation is cut into windows of `Judge.rubric_window` messages, each
starting `Judge.rubric_stride` messages after the previous one (the last window is the first that reaches the
end); every window's judge call is shown the user's instruction and *every* item with its verdict and notes so
far, and answers every item's new verdict and notes, so evidence seen in one window carries into the next and an
item the agent undoes goes back to false; the verdicts after the last window count. A run ended early (step
limit, too many tool errors, an agent error) scores 0 and the judge is not called. Departure: a failed call or
an unreadable answer leaves the rubric not judged, as NL assertions are (VitaBench keeps the states it had).
"""

from __future__ import annotations

from collections import defaultdict

from .._usage import Usage
from ..tasks import Task
from ..trajectory import Trajectory
from ._judges import RUBRIC_STRIDE, RUBRIC_WINDOW, Judge, RubricState
from ._model import RubricAggregate, RubricItemVerdict, RubricScore
from ._passk import pass_family
from ._ratios import ratio

ENDED_EARLY = frozenset({"max_steps", "too_many_tool_errors", "agent_error"})
"""Terminations VitaBench scores 0 without judging: its step limit, too many errors, an invalid agent message."""


def rubric_windows(count: int, size: int, stride: int) -> list[tuple[int, int]]:
    """The windows over `count` messages as (start, end) positions, end excluded: starts 0, stride, 2·stride, …
    up to the first window that reaches the last message; one window when everything fits, none when empty."""
    if size < 1 or not 1 <= stride <= size:
        raise ValueError(f"window {size}, stride {stride}: need a window of 1+ messages and a stride of 1 to {size}")
    spans: list[tuple[int, int]] = []
    start = 0
    while start < count:
        spans.append((start, min(start + size, count)))
        if start + size >= count:
            break
        start += stride
    return spans


def rubric_instruction(task: Task) -> str:
    """The user's full instruction as the judge reads it (VitaBench shows its task's instruction): why the user
    calls, what they know, what they were told to do, and their goals in order."""
    said = task.user_scenario.instructions
    parts = [f"Reason for the call: {said.reason_for_call}", f"What the user knows: {said.known_info}",
             f"What the user was told to do: {said.task_instructions}",
             f"The user's goals, in order: {', '.join(task.goals)}"]
    return "\n".join(p for p in parts if not p.endswith(": "))


def _spent(before: Usage, after: Usage) -> Usage:
    """What a judge spent between two readings of its running total."""
    return Usage(prompt_tokens=after.prompt_tokens - before.prompt_tokens,
                 completion_tokens=after.completion_tokens - before.completion_tokens,
                 cost_usd=after.cost_usd - before.cost_usd, calls=after.calls - before.calls)


def rubric_score(trajectory: Trajectory, task: Task, judge: Judge | None) -> RubricScore | None:
    """The task's rubric over the trajectory's windows; None when the task has no rubric items."""
    items = task.evaluation_criteria.rubric
    if not items:
        return None
    size, stride = (judge.rubric_window, judge.rubric_stride) if judge else (RUBRIC_WINDOW, RUBRIC_STRIDE)
    messages = trajectory.messages
    spans = rubric_windows(len(messages), size, stride)
    windows = [(messages[a].index, messages[b - 1].index) for a, b in spans]
    shape = {"window_size": size, "stride": stride, "windows": windows}
    ended = trajectory.termination.reason
    if ended in ENDED_EARLY:
        return RubricScore(status="ended_early", ended_by=ended, judged_windows=0, success=False, **shape,
                           items=[RubricItemVerdict(item=item, met=False) for item in items])
    before = judge.usage if judge is not None and judge.usage is not None else Usage()
    states = [RubricState(item=item) for item in items]
    changed: list[int | None] = [None] * len(items)   # the window that last changed each item's verdict
    trails: list[list[bool]] = [[] for _ in items]
    judged, asked = judge is not None, 0
    for number, (a, b) in enumerate(spans):
        if not judged or judge is None:
            break
        answer = judge.rubric_verdicts(trajectory, rubric_instruction(task), messages[a:b], states, number, len(spans))
        asked += 1
        if answer is None or len(answer.met) != len(items):
            judged = False
            break
        notes = answer.reasons if len(answer.reasons) == len(items) else [s.notes for s in states]
        for i, (state, met, note) in enumerate(zip(states, answer.met, notes, strict=True)):
            if met != state.met:
                changed[i] = number
            states[i] = RubricState(item=state.item, met=met, notes=note)
            trails[i].append(met)
    after = judge.usage if judge is not None and judge.usage is not None else before
    verdicts = [RubricItemVerdict(item=s.item, met=s.met if judged else None, window=w,
                                  messages=None if w is None else windows[w], reason=s.notes, trail=trail)
                for s, w, trail in zip(states, changed, trails, strict=True)]
    return RubricScore(status="judged" if judged else "not_judged", judged_windows=asked, items=verdicts,
                       success=all(s.met for s in states) if judged else None, usage=_spent(before, after), **shape)


def aggregate_rubric(scores: list[tuple[str, RubricScore]]) -> RubricAggregate | None:
    """The rubric pass rate over (task id, rubric) of the scored simulations, with the share of items met and
    rubric success's pass^k, pass@k and avg@k per task; None without rubric items. A run ended early counts as a
    failure; a rubric not judged is left out."""
    if not scores:
        return None
    decided = [(task, s) for task, s in scores if s.success is not None]
    judged = [s for _, s in decided if s.status == "judged"]
    items = sum(len(s.items) for s in judged)
    items_met = sum(v.met is True for s in judged for v in s.items)
    passed = sum(bool(s.success) for _, s in decided)
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for task, s in decided:
        outcomes[task].append(bool(s.success))
    hat, at, avg = pass_family(outcomes)
    return RubricAggregate(simulations=len(scores), judged=len(judged), ended_early=len(decided) - len(judged),
                           passed=passed, pass_rate=ratio(passed, len(decided)), items=items, items_met=items_met,
                           item_rate=ratio(items_met, items), pass_hat_k=hat, pass_at_k=at, avg_at_k=avg)
