"""The rubric sliding-window judge (VitaBench, arXiv 2509.26490): a task's rubric items judged window by window.

The conversation is cut into windows of `Judge.rubric_window` messages, each starting `Judge.rubric_stride`
messages after the previous one; the last window is the first that reaches the end (VitaBench's windows).
Each window's judge call is asked only the items no earlier window met, and an item met in any window stays
met — VitaBench's evaluator shows the judge every item with its current verdict and lets a later window
reset it; shiftbox follows the issue instead (docs/metrics.md). Once every item is met no more calls are
made. A failed call or an unreadable answer leaves the rubric not judged, as NL assertions are.
"""

from __future__ import annotations

from .._usage import Usage
from ..tasks import Task
from ..trajectory import Trajectory
from ._judges import RUBRIC_STRIDE, RUBRIC_WINDOW, Judge
from ._model import RubricAggregate, RubricItemVerdict, RubricScore
from ._ratios import ratio


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
    before = judge.usage if judge is not None and judge.usage is not None else Usage()
    met: dict[int, tuple[int, str]] = {}  # item position -> (window, reason)
    judged, asked = judge is not None, 0
    for number, (a, b) in enumerate(spans):
        todo = [i for i in range(len(items)) if i not in met]
        if not judged or not todo:
            break
        verdicts = judge.rubric_verdicts(trajectory, messages[a:b], [items[i] for i in todo], number, len(spans))
        asked += 1
        if verdicts is None or len(verdicts.met) != len(todo):
            judged = False
            break
        reasons = verdicts.reasons if len(verdicts.reasons) == len(todo) else [""] * len(todo)
        met.update((i, (number, reason)) for i, ok, reason in zip(todo, verdicts.met, reasons, strict=True) if ok)
    after = judge.usage if judge is not None and judge.usage is not None else before
    verdicts_out = [
        RubricItemVerdict(item=item, met=True, window=met[i][0], messages=windows[met[i][0]], reason=met[i][1])
        if i in met else RubricItemVerdict(item=item, met=False if judged else None)
        for i, item in enumerate(items)]
    return RubricScore(status="judged" if judged else "not_judged", window_size=size, stride=stride, windows=windows,
                       judged_windows=asked, items=verdicts_out, success=len(met) == len(items) if judged else None,
                       usage=_spent(before, after))


def aggregate_rubric(scores: list[RubricScore]) -> RubricAggregate | None:
    """The rubric pass rate over judged simulations, with the share of items met; None without rubric items."""
    if not scores:
        return None
    judged = [s for s in scores if s.status == "judged"]
    items = sum(len(s.items) for s in judged)
    items_met = sum(v.met is True for s in judged for v in s.items)
    passed = sum(bool(s.success) for s in judged)
    return RubricAggregate(simulations=len(scores), judged=len(judged), passed=passed,
                           pass_rate=ratio(passed, len(judged)), items=items, items_met=items_met,
                           item_rate=ratio(items_met, items))
