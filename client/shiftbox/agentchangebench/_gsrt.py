"""Compat GSRT from the GSRT judge's output: stored in `reward_info.info.gsrt_v2` of a reference results file,
or asked now (`_gsrt_judge`, `--judge`) for a simulation without it (a shiftbox run). A and B as in the package
notes.

  * A shift's time base is the judge's `turn` (a message index); ack / tool / outcome are
    `acknowledgment_turn` / `tool_turn` / `outcome_turn` minus it — message-index differences, not
    agent turns — kept only when the judge's turn is after the shift (B, task 5: tool_turn 7 before the
    shift at 9 -> no tool time). The older judge format in A (`agent_turn` only) has no
    acknowledgment_turn, so the reference finds no acknowledgment there.
  * recovered iff acknowledgment_turn is after the shift and the judge did not mark
    `transferred_to_human`; transferred = that flag.
  * Aggregate: if any simulation has no judge output (stored: neither `gsrt_v2` nor `gsrt_enhanced` in
    `reward_info.info`; asked: no readable answer), the reference's GSRT aggregate fails and reports -1;
    here every rate and median is None and `shifts` stays a count (B: the simulations of tasks 13 and 14
    have none). The same with no simulations at all (the reference's aggregate needs a non-empty cache,
    else -1). Otherwise shifts = the judge's shift count; recovery and transfer rates over shifts (0.0
    when there is none, as the reference prints); medians of the message-index differences as the
    reference's `gsrt.py` aggregate takes them: ack over the recovered shifts only (a transferred shift's
    acknowledgment is no recovery time), tool and outcome over every shift that reached them (its `tau2
    metrics` aggregate reads a key no judge writes and leaves them None); never_* = share of shifts
    without that stage.
"""

from __future__ import annotations

import statistics

from ..metrics import GSRTAggregate, ShiftRecovery, SimulationMetrics
from ..trajectory import Trajectory
from ._stored import as_int, judge_shifts


def compat_gsrt(trajectory: Trajectory) -> list[ShiftRecovery]:
    """The shifts of the judge output stored in an imported simulation (none without it)."""
    return shift_recoveries_of(judge_shifts(trajectory.source_data) or [])


def shift_recoveries_of(judged: list[dict]) -> list[ShiftRecovery]:
    """The judge's `user_goal_shifts` scored: message-index deltas after each shift, recovered, transferred."""
    out = []
    for k, shift in enumerate(judged, start=1):
        turn = as_int(shift.get("turn")) or 0

        def after(key: str, turn: int = turn, shift: dict = shift) -> int | None:
            value = as_int(shift.get(key))
            return value - turn if value is not None and value > turn else None

        ack = after("acknowledgment_turn")
        transferred = bool(shift.get("transferred_to_human"))
        out.append(ShiftRecovery(
            shift_index=k, from_goal=str(shift.get("from") or ""), to_goal=str(shift.get("to") or ""),
            message_index=turn, ack=ack, tool=after("tool_turn"), outcome=after("outcome_turn"),
            recovered=ack is not None and not transferred, transferred=transferred))
    return out


def _median(values: list[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def gsrt_aggregate(sims: list[SimulationMetrics]) -> GSRTAggregate:
    """The run's GSRT over simulations scored with `gsrt_judged` set (undefined unless every one is judged)."""
    shifts = [r for s in sims for r in s.gsrt]
    if not sims or not all(s.gsrt_judged for s in sims):
        # undefined, as in the reference (which prints -1); the count stays a count
        return GSRTAggregate(shifts=len(shifts), recovery_rate=None, transfer_rate=None, median_ack=None,
                             median_tool=None, median_outcome=None)
    n = len(shifts)
    return GSRTAggregate(
        shifts=n,
        recovery_rate=sum(r.recovered for r in shifts) / n if n else 0.0,
        transfer_rate=sum(r.transferred for r in shifts) / n if n else 0.0,
        median_ack=_median([r.ack for r in shifts if r.recovered and r.ack is not None]),
        median_tool=_median([r.tool for r in shifts if r.tool is not None]),
        median_outcome=_median([r.outcome for r in shifts if r.outcome is not None]),
        never_ack=_share(sum(r.ack is None for r in shifts), n),
        never_tool=_share(sum(r.tool is None for r in shifts), n),
        never_outcome=_share(sum(r.outcome is None for r in shifts), n),
    )
