"""The goal-shift recovery rate has one formula, the catalog's `recovery` metric: GSRT's aggregate (a run's, a
slice's, the HTML plots') reads that declaration rather than dividing on its own."""

from __future__ import annotations

import dataclasses

import pytest

from shiftbox.metrics import ShiftRecovery, aggregate_gsrt
from shiftbox.metrics._catalog import _CATALOG


def _shift(index: int, recovered: bool) -> ShiftRecovery:
    return ShiftRecovery(shift_index=index, from_goal="a", to_goal="b", message_index=2 * index, ack=1,
                         tool=None, outcome=None, recovered=recovered, transferred=False)


def test_gsrt_recovery_rate_is_the_catalog_recovery_formula(monkeypatch):
    shifts = [_shift(1, True), _shift(2, False), _shift(3, True)]
    assert aggregate_gsrt(shifts).recovery_rate == pytest.approx(2 / 3)  # 2 of 3 shifts recovered
    assert aggregate_gsrt([]).recovery_rate is None  # no shift: nothing to divide by
    declared = _CATALOG["recovery"]
    monkeypatch.setitem(_CATALOG, "recovery",
                        dataclasses.replace(declared, pooled=lambda c: c["recovered"] / (c["shifts"] + 1)))
    assert aggregate_gsrt(shifts).recovery_rate == pytest.approx(2 / 4)  # the changed declaration, by hand
