"""Headline ratios as sums over simulations, and their seeded bootstrap intervals over tasks.

Every headline figure is a function of additive counts, declared once in the catalog (`_catalog.py`: TSR,
TUE, TCRR, recovery, any registered metric, and pass^k, a per-task value averaged over tasks). Keeping them in
that form gives one definition per figure, used for the headline, every breakdown, the bootstrap (resample
tasks, add their counts) and the paired differences of `shiftbox compare`.
"""

from __future__ import annotations

import operator
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat

from ._catalog import Counts, figures, pass_counts, simulation_counts
from ._model import Interval, SimulationMetrics
from ._ratios import mean_of_present, ratio

__all__ = ["mean_of_present", "ratio"]  # re-exported: the modules that average import them from here
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20251123
CONFIDENCE = 0.95
MIN_INTERVAL_TASKS = 2
"""Tasks a bootstrap over tasks needs: with one, every resample draws that task, so an "interval" would only
repeat the figure (docs/metrics.md)."""


def interval_gap(tasks: int) -> str | None:
    """Why figures over `tasks` tasks have no interval ("too few tasks for an interval (n=1)"), or None."""
    return f"too few tasks for an interval (n={tasks})" if tasks < MIN_INTERVAL_TASKS else None


def task_counts(sims: Sequence[SimulationMetrics], ks: Iterable[int]) -> dict[str, Counts]:
    """Task id -> the summed counts of its scored simulations (plus its pass^k contribution)."""
    by_task: dict[str, Counts] = defaultdict(Counter)
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for s in sims:
        if s.scored:
            by_task[s.task_id].update(simulation_counts(s))
            if s.success is not None:
                outcomes[s.task_id].append(s.success)
    ks = list(ks)
    for task_id, successes in outcomes.items():
        by_task[task_id].update(pass_counts(successes, ks))
    return dict(sorted(by_task.items()))


def total(counts: Iterable[Counts]) -> Counts:
    out: Counts = Counter()
    for c in counts:
        out.update(c)
    return out


def percentile_interval(values: list[float]) -> Interval | None:
    if not values:
        return None
    if len(values) == 1:
        return Interval(low=values[0], high=values[0])
    tail = (1 - CONFIDENCE) / 2
    data = sorted(values)
    low, high = inclusive_quantile(data, round(tail * 1000)), inclusive_quantile(data, round((1 - tail) * 1000))
    return Interval(low=round(low, 12), high=round(high, 12))


def inclusive_quantile(data: Sequence[float], i: int, n: int = 1000) -> float:
    """The `i`-th of the n-1 cut points `statistics.quantiles(data, n=n, method="inclusive")` returns (1-based), the
    same float, made alone: an interval needs two of the 999, not all of them (`data` sorted, two values or more)."""
    j, delta = divmod(i * (len(data) - 1), n)
    return (data[j] * (n - delta) + data[j + 1] * delta) / n


def resample_picks(n: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> list[Counter[int]]:
    """Seeded resamples of n tasks with replacement: for each, task index -> times drawn."""
    rng = random.Random(seed)
    return [Counter(rng.choices(range(n), k=n)) for _ in range(resamples)] if n else []


def resampled_totals(per_task: Sequence[Sequence[Counts]], picks: list[Counter[int]] | None = None) -> list[list[Counts]]:
    """For each resample of tasks, the summed counts of each series.

    `per_task[i]` holds task i's counts in each series (one series for a run, two paired runs for
    `shiftbox compare`), so a paired resample draws the same tasks for both.
    """
    out = []
    columns = [shared_keys([task[j] for task in per_task]) for j in range(len(per_task[0]))] if per_task else []
    # per series whose tasks share their keys, each task's row of values (a series whose keys differ is added by key)
    values = [None if keys is None else [tuple(task[j].values()) for task in per_task] for j, keys in enumerate(columns)]
    # per series, (task, times drawn) -> the task's row of values times that: the same products, made once each
    scaled: list[dict[tuple[int, int], tuple]] = [{} for _ in columns]
    for drawn in picks if picks is not None else resample_picks(len(per_task)):
        series = []
        for j, keys in enumerate(columns):
            if keys is None:
                summed: Counts = Counter()
                for i, times in drawn.items():
                    for key, value in per_task[i][j].items():
                        summed[key] += value * times
            else:  # the same additions, in the same order, a row of values at a time
                row = [0] * len(keys)
                for drawn_times in drawn.items():
                    product = scaled[j].get(drawn_times)
                    if product is None:
                        i, times = drawn_times
                        product = scaled[j][drawn_times] = tuple(map(operator.mul, values[j][i], repeat(times)))
                    row = list(map(operator.add, row, product))
                summed = Counter(dict(zip(keys, row, strict=True)))
            series.append(summed)
        out.append(series)
    return out


def shared_keys(counts: Sequence[Counts]) -> tuple[str, ...] | None:
    """The keys every one of `counts` has, in one order (what lets `resampled_totals` add them as rows); None where
    they differ."""
    keys = tuple(counts[0]) if counts else None
    return keys if all(tuple(c) == keys for c in counts) else None


def bootstrap_intervals(per_task: Mapping[str, Counts], ks: Iterable[int]) -> dict[str, Interval]:
    """95% percentile intervals of each headline figure, resampling tasks."""
    fns = figures(ks)
    tasks = [per_task[t] for t in sorted(per_task)]
    if interval_gap(len(tasks)):
        return {}
    draws = resampled_totals([[c] for c in tasks])
    whole = total(tasks)
    out = {}
    for name, fn in fns.items():
        if fn(whole) is None:  # the run has no such figure: no interval
            continue
        interval = percentile_interval([v for (c,) in draws if (v := fn(c)) is not None])
        if interval is not None:
            out[name] = interval
    return out


def rerun_agreement(sims: Sequence[SimulationMetrics]) -> tuple[float | None, int]:
    """Share of tasks with 2+ scored trials whose trials all end the same way (all succeed or all fail)."""
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for s in sims:
        if s.scored and s.success is not None:
            outcomes[s.task_id].append(s.success)
    repeated = [v for v in outcomes.values() if len(v) > 1]
    return ratio(sum(len(set(v)) == 1 for v in repeated), len(repeated)), len(repeated)
