"""Shift reports: how often the agent's own goal-shift reports (`log_shift_event`, offered by the
AgentChangeBench-parity tool set) match the ground-truth shifts. A figure beside GSRT, not part of it.

A report matches the latest shift before it, unless an earlier report already matched that shift; a
report before the first shift, or a second report after the same shift, matches nothing. Per simulation:
shifts, reports, matched (shifts with a matching report), precision = matched / reports, recall =
matched / shifts, and each match's delay in messages (report's message index - shift's). Measured only
for simulations whose agent was offered the tool (`Trajectory.shift_reports` is not None).
"""

from __future__ import annotations

from ..trajectory import Trajectory
from ._model import ShiftReportAggregate, ShiftReportScore


def shift_report_score(trajectory: Trajectory) -> ShiftReportScore | None:
    if trajectory.shift_reports is None:
        return None
    shifts = sorted(trajectory.shifts, key=lambda s: s.message_index)
    matched: set[int] = set()
    delays: list[int] = []
    for report in sorted(trajectory.shift_reports, key=lambda r: r.message_index):
        before = [i for i, s in enumerate(shifts) if s.message_index < report.message_index]
        if before and before[-1] not in matched:
            matched.add(before[-1])
            delays.append(report.message_index - shifts[before[-1]].message_index)
    n_reports = len(trajectory.shift_reports)
    return ShiftReportScore(
        shifts=len(shifts), reports=n_reports, matched=len(matched),
        precision=len(matched) / n_reports if n_reports else None,
        recall=len(matched) / len(shifts) if shifts else None, delays=delays)


def aggregate_shift_reports(scores: list[ShiftReportScore | None]) -> ShiftReportAggregate | None:
    """Pooled over the simulations that offered the tool; None when none did."""
    present = [s for s in scores if s is not None]
    if not present:
        return None
    shifts, reports, matched = (sum(getattr(s, k) for s in present) for k in ("shifts", "reports", "matched"))
    delays = sorted(d for s in present for d in s.delays)
    median = None
    if delays:
        mid = len(delays) // 2
        median = float(delays[mid]) if len(delays) % 2 else (delays[mid - 1] + delays[mid]) / 2
    return ShiftReportAggregate(simulations=len(present), shifts=shifts, reports=reports, matched=matched,
                                precision=matched / reports if reports else None,
                                recall=matched / shifts if shifts else None, median_delay=median)
