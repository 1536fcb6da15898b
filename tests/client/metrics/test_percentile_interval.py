"""The bootstrap's 95% percentile interval (`percentile_interval`): the 25th and 975th of the 999 cut points of
`statistics.quantiles(..., n=1000, method="inclusive")`, the same floats to the last bit, made without computing the
other 997 (the run's end makes one interval per headline figure, over 1000 resamples each)."""

from __future__ import annotations

import random
import statistics

import pytest

from shiftbox.metrics import _uncertainty
from shiftbox.metrics._uncertainty import inclusive_quantile, percentile_interval


def stdlib_interval(values: list[float]) -> tuple[float, float]:
    """The interval as the standard library's quantiles give it: cut points 25 and 975 of 999, rounded to 12 places."""
    qs = statistics.quantiles(values, n=1000, method="inclusive")
    return round(qs[24], 12), round(qs[974], 12)


def samples() -> list[list[float]]:
    rng = random.Random(11)
    out: list[list[float]] = [[0.5, 0.25], [1, 0], [0.1, 0.2, 0.3], [1.0] * 40, [rng.randint(0, 3) for _ in range(7)]]
    for size in (2, 3, 10, 999, 1000, 1001, 1500):
        out.append([rng.random() for _ in range(size)])
        out.append([round(rng.uniform(-5, 5), 3) for _ in range(size)])  # ties
        out.append([rng.randint(0, 10) / 10 for _ in range(size)])
    return out


@pytest.mark.parametrize("values", samples())
def test_the_interval_is_the_standard_librarys_to_the_last_bit(values):
    interval = percentile_interval(list(values))
    assert (interval.low, interval.high) == stdlib_interval(values)


@pytest.mark.parametrize("values", samples())
def test_each_cut_point_is_the_standard_librarys(values):
    cuts = statistics.quantiles(values, n=1000, method="inclusive")
    data = sorted(values)
    assert [inclusive_quantile(data, i) for i in (1, 25, 500, 975, 999)] == [cuts[i - 1] for i in (1, 25, 500, 975, 999)]


def test_the_interval_does_not_compute_every_cut_point(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("statistics.quantiles called: all 999 cut points made for two")

    monkeypatch.setattr(statistics, "quantiles", refused)
    assert "statistics" not in vars(_uncertainty)  # nor bound in the module under another name
    interval = percentile_interval([0.0, 1.0, 2.0, 3.0])
    # by hand: (n-1) = 3; cut 25: j, delta = divmod(75, 1000) = (0, 75): (0 * 925 + 1 * 75) / 1000 = 0.075;
    # cut 975: divmod(2925, 1000) = (2, 925): (2 * 75 + 3 * 925) / 1000 = 2.925
    assert (interval.low, interval.high) == (0.075, 2.925)


def test_one_value_and_none():
    assert percentile_interval([]) is None
    one = percentile_interval([0.4])
    assert (one.low, one.high) == (0.4, 0.4)
