"""Compat TCRR: the reference's windowed count (A and B as in the package notes).

  * Only calls in assistant messages. The turn counter counts every assistant message, greeting
    included, starting at 1 (= shiftbox agent_turn + 1).
  * A call's identity is (name, arguments normalized: keys sorted, dict values recursively, list values
    sorted, or stringified items when unsortable; if the identity is still unhashable, (name,
    str(arguments))).
  * window: a call of turn t is redundant when its identity occurs in turns max(1, t-3) .. t-1
    (the same turn is not looked at); 3 is shiftbox's `metrics.WINDOW`.
  * batch: in a turn, calls to one tool beyond the first 2 (`metrics.BATCH`) add (count - 2), independently
    of the window rule — the two counts add up, so one call may be counted twice and the ratio can exceed 1.
  * Aggregate: all calls of all simulations are pooled and grouped by turn number across
    conversations, then counted as one conversation. A: 38/84 = 0.452381 (21 window + 17 batch),
    B: 22/78 = 0.282051 (13 window + 9 batch). Per simulation (each simulation counted alone): A 1/84,
    B 3/78 redundant — reported per simulation and as `mean` (the mean of per-simulation ratios over
    the simulations with calls).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..metrics import BATCH, WINDOW, TCRRScore
from ..trajectory import ToolCall, Trajectory


def _normalized(params: dict[str, Any]) -> tuple:
    items = []
    for key, value in sorted(params.items()):
        if isinstance(value, dict):
            items.append((key, _normalized(value)))
        elif isinstance(value, list):
            try:
                items.append((key, tuple(sorted(value))))
            except TypeError:
                items.append((key, tuple(str(v) for v in value)))
        else:
            items.append((key, value))
    return tuple(items)


def _identity(name: str, arguments: dict[str, Any]) -> tuple:
    try:
        identity = (name, _normalized(arguments))
        hash(identity)
    except TypeError:
        identity = (name, str(arguments))
    return identity


def turn_calls(trajectory: Trajectory) -> list[tuple[int, ToolCall]]:
    """(reference assistant-turn number, call) for calls in assistant messages; greeting = turn 1."""
    out, turn = [], 0
    for m in trajectory.messages:
        if m.role == "assistant":
            turn += 1
            out.extend((turn, c) for c in m.tool_calls)
    return out


def windowed_redundancy(calls: Iterable[tuple[int, ToolCall]], window: int = WINDOW,
                        batch: int = BATCH) -> tuple[int, int, int]:
    """(calls, window-rule count, batch-rule count) — the reference's count; the two add up."""
    by_turn: dict[int, list[ToolCall]] = defaultdict(list)
    total = 0
    for turn, call in calls:
        by_turn[turn].append(call)
        total += 1
    by_window = by_batch = 0
    for turn in sorted(by_turn):
        seen = {_identity(c.name, c.arguments)
                for prev in range(max(1, turn - window), turn) for c in by_turn.get(prev, ())}
        by_window += sum(_identity(c.name, c.arguments) in seen for c in by_turn[turn])
        counts: dict[str, int] = defaultdict(int)
        for c in by_turn[turn]:
            counts[c.name] += 1
        by_batch += sum(n - batch for n in counts.values() if n > batch)
    return total, by_window, by_batch


def pooled_tcrr(trajectories: list[Trajectory]) -> tuple[int, int, int]:
    """`windowed_redundancy` of every simulation's calls pooled by turn number, as the reference aggregates."""
    return windowed_redundancy(c for t in trajectories for c in turn_calls(t))


def compat_tcrr(trajectory: Trajectory) -> TCRRScore:
    calls, by_window, by_batch = windowed_redundancy(turn_calls(trajectory))
    redundant = by_window + by_batch
    return TCRRScore(calls=calls, redundant=redundant, window=by_window, batch=by_batch,
                     ratio=redundant / calls if calls else None)
