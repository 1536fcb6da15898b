"""Retention and drop: how much of a clean (single-goal) run's performance survives goal shifts.

retention = metric_shifted / metric_clean, drop = metric_clean - metric_shifted, for TSR and TUE,
overall and per domain and persona (only slices present in both runs).
"""

from __future__ import annotations

from pydantic import BaseModel

from ._model import Breakdown, RunMetrics


class Retention(BaseModel):
    metric: str
    slice: str
    shifted: float | None
    clean: float | None
    retention: float | None
    drop: float | None


def _pair(metric: str, slice_: str, shifted: float | None, clean: float | None) -> Retention:
    both = shifted is not None and clean is not None
    return Retention(metric=metric, slice=slice_, shifted=shifted, clean=clean,
                     retention=shifted / clean if both and clean else None,
                     drop=clean - shifted if both else None)


def retention(shifted: RunMetrics, clean: RunMetrics) -> list[Retention]:
    rows = [_pair("tsr", "all", shifted.tsr.mean, clean.tsr.mean),
            _pair("tue", "all", shifted.tue.tue, clean.tue.tue)]
    for kind, a, b in (("domain", shifted.by_domain, clean.by_domain),
                       ("persona", shifted.by_persona, clean.by_persona)):
        for key in sorted(a.keys() & b.keys()):
            x: Breakdown = a[key]
            y: Breakdown = b[key]
            rows += [_pair("tsr", f"{kind}={key}", x.tsr, y.tsr), _pair("tue", f"{kind}={key}", x.tue, y.tue)]
    return rows
