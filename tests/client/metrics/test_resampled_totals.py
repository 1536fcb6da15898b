"""The bootstrap's resampled totals (`resampled_totals`): each resample's counts are the drawn tasks' counts times
the times drawn, added in the order the tasks were drawn (floats included, so every interval is the same to the last
bit however the sums are made), keys in their first appearance's order; counts whose keys differ between tasks too."""

from __future__ import annotations

from collections import Counter

from shiftbox.metrics._uncertainty import resample_picks, resampled_totals


def by_hand(per_task, picks):
    """Each resample's sums, written out: start at 0, add each drawn task's value times the times drawn, in order."""
    out = []
    for drawn in picks:
        series = []
        for j in range(len(per_task[0])):
            summed = {}
            for i, times in drawn.items():
                for key, value in per_task[i][j].items():
                    summed[key] = summed.get(key, 0) + value * times
            series.append(summed)
        out.append(series)
    return out


def test_resampled_totals_add_the_drawn_tasks_in_draw_order_to_the_last_bit():
    # floats whose sum depends on the order they are added in (0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1)
    per_task = [[Counter({"tsr_sum": 0.1, "calls": 3, "pass^1": 1})],
                [Counter({"tsr_sum": 0.2, "calls": 1, "pass^1": 0})],
                [Counter({"tsr_sum": 0.3, "calls": 0, "pass^1": 1})],
                [Counter({"tsr_sum": 1e16, "calls": 7, "pass^1": 1})]]
    picks = [Counter({0: 1, 1: 1, 2: 1}), Counter({2: 1, 1: 1, 0: 1}), Counter({3: 1, 0: 2, 1: 1}),
             Counter({1: 4})] + resample_picks(4, resamples=50, seed=7)
    got = resampled_totals(per_task, picks)
    expected = by_hand(per_task, picks)
    assert [[list(c.items()) for c in s] for s in got] == [[list(c.items()) for c in s] for s in expected]
    assert got[0][0]["tsr_sum"] == (0.1 + 0.2) + 0.3 != got[1][0]["tsr_sum"] == (0.3 + 0.2) + 0.1
    assert got[2][0] == {"tsr_sum": 1e16 + 0.2 + 0.2, "calls": 7 + 6 + 1, "pass^1": 3}
    assert all(type(c) is Counter for s in got for c in s)
    assert got[3][0]["missing"] == 0  # a Counter: an absent count is 0


def test_tasks_with_different_keys_and_paired_series():
    per_task = [[Counter({"a": 1.5, "b": 2}), Counter({"a": 1})],
                [Counter({"b": 1, "c": 0.25}), Counter({"a": 2})],
                [Counter({"a": 0.5}), Counter({"a": 3})]]
    picks = [Counter({1: 2, 0: 1}), Counter({2: 3}), Counter({0: 1, 1: 1, 2: 1})]
    got = resampled_totals(per_task, picks)
    assert [[list(c.items()) for c in s] for s in got] == [[list(c.items()) for c in s] for s in by_hand(per_task, picks)]
    assert got[0] == [{"b": 2 + 2, "c": 0.5, "a": 1.5}, {"a": 4 + 1}]


class Counted(float):
    """A count that tallies how often it is multiplied."""

    products: list[tuple[float, int]] = []

    def __mul__(self, times):
        Counted.products.append((float(self), times))
        return float(self) * times


def test_each_tasks_row_times_a_draw_count_is_made_once():
    per_task = [[Counter({"tsr_sum": Counted(0.1), "calls": Counted(3.0)})],
                [Counter({"tsr_sum": Counted(0.2), "calls": Counted(1.0)})],
                [Counter({"tsr_sum": Counted(0.3), "calls": Counted(0.0)})]]
    picks = resample_picks(3, resamples=200, seed=5)
    Counted.products.clear()
    got = resampled_totals(per_task, picks)
    # by hand: one product per key for each distinct (task, times drawn) pair; 200 resamples of 3 tasks draw at most
    # 3 x 3 such pairs, where a product made at every draw would be made about 2 x 200 times per key
    pairs = {(i, times) for drawn in picks for i, times in drawn.items()}
    assert len(Counted.products) == 2 * len(pairs) <= 18
    plain = [[Counter({k: float(v) for k, v in c.items()}) for c in task] for task in per_task]
    assert [[list(c.items()) for c in s] for s in got] == [[list(c.items()) for c in s] for s in by_hand(plain, picks)]


class Watched(Counter):
    """A task's counts that tally how often their values are read as a row."""

    rows = 0

    def values(self):
        Watched.rows += 1
        return super().values()


def test_a_series_whose_keys_differ_between_tasks_is_never_read_as_rows():
    """Rows of values are only added for a series whose tasks share their keys; a series whose keys differ is added
    key by key, so its rows were read for nothing (once per task)."""
    per_task = [[Counter({"a": 1.0, "b": 2}), Watched({"a": 1})],
                [Counter({"a": 0.5, "b": 1}), Watched({"a": 2, "c": 1})],
                [Counter({"a": 0.25, "b": 0}), Watched({"c": 3})]]
    picks = [Counter({1: 2, 0: 1}), Counter({2: 3}), Counter({0: 1, 1: 1, 2: 1})]
    Watched.rows = 0
    got = resampled_totals(per_task, picks)
    assert Watched.rows == 0
    plain = [[Counter(c) for c in task] for task in per_task]
    assert [[list(c.items()) for c in s] for s in got] == [[list(c.items()) for c in s] for s in by_hand(plain, picks)]
    assert got[0] == [{"a": 0.5 + 0.5 + 1.0, "b": 2 + 2}, {"a": 2 + 2 + 1, "c": 2}]


def counted(calls: Counter[str], name: str, fn):
    """`fn`, each call counted in `calls[name]`."""
    def wrapper(*args):
        calls[name] += 1
        return fn(*args)
    return wrapper


def two_figures(calls: Counter[str], share):
    """Figures in place of the catalog's: `share` (a value) and one no run has (None), each call counted."""
    return {"share": counted(calls, "share", share), "absent": counted(calls, "absent", lambda c: None)}


def test_the_bootstrap_adds_every_task_once_and_skips_a_figure_the_run_has_not(monkeypatch):
    """The run's whole counts (does the figure exist?) were added up again for every figure, and a figure the run
    has no value of was still worked out on all 1000 resamples before being dropped."""
    from shiftbox.metrics import _uncertainty

    calls: Counter[str] = Counter()
    monkeypatch.setattr(_uncertainty, "total", counted(calls, "total", _uncertainty.total))
    monkeypatch.setattr(_uncertainty, "figures", lambda ks: two_figures(calls, lambda c: c["hits"] / c["n"]))
    per_task = {"t1": Counter({"hits": 1, "n": 2}), "t2": Counter({"hits": 0, "n": 1}), "t3": Counter({"hits": 3, "n": 3})}
    intervals = _uncertainty.bootstrap_intervals(per_task, [1])
    assert set(intervals) == {"share"}
    assert calls == {"total": 1, "share": 1 + 1000, "absent": 1}  # were 2, 1000 + 1 and 1000 + 1
    assert 0 <= intervals["share"].low <= intervals["share"].high <= 1  # shares of resampled tasks


def test_a_comparison_resamples_only_the_differences_both_runs_have(monkeypatch):
    """`shiftbox compare` worked out every figure and every GSRT stage's median on all 1000 paired resamples, then
    dropped the samples when a run had no value of it (a stage no shift reached, a figure without its counts)."""
    from shiftbox.metrics import _compare, score_by_agent
    from tests.client.metrics.build import Builder, task

    trajectories = [Builder().user("hi", goal="authentication").agent("hello").build(task_id=f"t{i}")
                    for i in range(3)]  # no goal shift: no GSRT stage has a value
    sims = score_by_agent(trajectories, {f"t{i}": task(task_id=f"t{i}") for i in range(3)})["test"].simulations
    calls: Counter[str] = Counter()
    monkeypatch.setattr(_compare, "_median", counted(calls, "median", _compare._median))
    monkeypatch.setattr(_compare, "figures", lambda ks: two_figures(calls, lambda c: c["tsr_n"]))
    comparison = _compare.compare(sims, sims)
    by_metric = {d.metric: d for d in comparison.differences}
    assert by_metric["share"].interval is not None and by_metric["absent"].interval is None
    assert all(by_metric[f"median {s} turns"].difference is None for s in ("ack", "tool", "outcome"))
    # each run once, then both runs on each of the 1000 resamples for the one difference there is
    assert calls == {"share": 2 + 2 * 1000, "absent": 2, "median": 3 * 2}  # absent was 2 + 1000, median 6 + 3000
