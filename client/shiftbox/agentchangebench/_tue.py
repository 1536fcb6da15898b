"""Compat TUE, pooled over every tool call of every simulation, any role (A and B as in the package notes).

  * T = calls whose tool message has no error (a call without a tool message counts as correct).
    A: 78/84, B: 68/78 (6 and 10 errored calls).
  * P = calls *not* flagged invalid, where a call is flagged only when its tool message is an error whose
    lowercased text contains "invalid parameter", "missing parameter", "parameter error", "bad
    parameter", "invalid argument" or "missing argument". None of the 16 error texts in A and B does
    (they are "Error: DISPUTED", "Customer ... not found", a datetime comparison bug, ...), so P = 1.0.
  * TUE = shiftbox's formula of T and P (`metrics.tue_value`, 0.6 T + 0.4 P). With no calls the reference
    reports 0.0 for T, P and TUE.
"""

from __future__ import annotations

from typing import NamedTuple

from ..metrics import TUEScore, tue_value
from ..trajectory import Trajectory
from ._conversation import all_calls, tool_results

PARAM_ERROR_PHRASES = ("invalid parameter", "missing parameter", "parameter error", "bad parameter",
                       "invalid argument", "missing argument")


class CallFlags(NamedTuple):
    correct: bool
    params_valid: bool


class TUEFigures(NamedTuple):
    calls: int
    executed: int
    valid: int
    t: float | None
    p: float | None
    tue: float | None


def call_flags(trajectory: Trajectory) -> list[CallFlags]:
    """(correct, params_valid) for every tool call of the conversation, any role."""
    results = tool_results(trajectory)
    flags = []
    for call in all_calls(trajectory):
        answer = results.get(call.id)
        failed = bool(answer and answer.is_error)
        text = (answer.content or "").lower() if answer else ""
        invalid = failed and bool(text) and any(p in text for p in PARAM_ERROR_PHRASES)
        flags.append(CallFlags(not failed, not invalid))
    return flags


def tue_figures(flags: list[CallFlags], empty: float | None) -> TUEFigures:
    """Counts, T, P and TUE of these calls; `empty` for the three ratios when there is none."""
    calls = len(flags)
    executed = sum(f.correct for f in flags)
    valid = sum(f.params_valid for f in flags)
    if not calls:
        return TUEFigures(0, 0, 0, empty, empty, empty)
    t, p = executed / calls, valid / calls
    return TUEFigures(calls, executed, valid, t, p, tue_value(t, p))


def compat_tue(trajectory: Trajectory) -> TUEScore:
    f = tue_figures(call_flags(trajectory), None)
    return TUEScore(calls=f.calls, executed=f.executed, schema_valid=f.valid, t=f.t, p=f.p, tue=f.tue)
