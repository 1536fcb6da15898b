"""The two divisions every metric shares: a ratio that is None with nothing to divide by, and a mean of present values."""

from __future__ import annotations

from collections.abc import Iterable


def ratio(num: float, den: float) -> float | None:
    """num / den, or None when there is nothing to divide by (every headline ratio of metrics)."""
    return num / den if den else None


def mean_of_present(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None, or None when none is (every per-simulation mean of metrics)."""
    present = [v for v in values if v is not None]
    return ratio(sum(present), len(present))
