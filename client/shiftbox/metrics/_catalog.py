"""The headline metrics, each declared once: what every output (terminal and HTML reports, metrics.json,
`shiftbox compare`, the Inspect scorer, the RL rewards, the pytest thresholds) iterates, in this order.

A headline metric is a ratio of additive counts: each scored simulation contributes its `counts`, and the
`pooled` formula turns the counts summed over any set of simulations (a run, a slice, a bootstrap resample of
tasks, one side of a paired comparison) into the figure. pass^k is the one family pooled over tasks instead
(a task's value averaged over tasks); it is declared at the end. docs/adding-a-metric.md shows adding one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ._model import RunMetrics, ShiftRecovery, SimulationMetrics
from ._passk import pass_hat_k
from ._ratios import ratio
from ._tue import tue_value

Counts = Counter[str]


@dataclass(frozen=True)
class HeadlineMetric:
    """One headline figure: its name, its per-simulation value, its pooled formula and how outputs label it."""

    key: str
    """Its name in metrics.json's intervals, `shiftbox compare`, the Inspect score and the RL rewards."""
    label: str
    """Its short label in tables ("TSR")."""
    description: str
    """What it measures, in a line: the detail reports show when they have nothing more specific."""
    counts: Callable[[SimulationMetrics], Mapping[str, float]]
    """The additive counts one scored simulation contributes; a count two metrics share must agree."""
    pooled: Callable[[Mapping[str, float]], float | None]
    """The figure from counts summed over simulations (None when there is nothing to divide by)."""
    value: Callable[[SimulationMetrics], float | None] | None = None
    """The per-simulation value (Inspect score, RL reward); by default the pooled formula over its own counts."""
    stored: Callable[[RunMetrics], float | None] | None = None
    """Where a run's pooled value has a field of its own (the built-ins); otherwise `RunMetrics.other_headlines`."""
    lower_is_better: bool = False
    reward: bool = True
    """Offered as an RL reward (`ShiftboxEnv(reward=key)`, its value, 0 when None)."""
    run_label: str | None = None
    """Its label where runs are shown side by side (default: `label`)."""
    heading: str | None = None
    """Its HTML card's heading (default: `label`)."""
    score_key: str | None = None
    """Its key in an Inspect score (default: `key`)."""

    def simulation_value(self, s: SimulationMetrics) -> float | None:
        return self.value(s) if self.value is not None else self.pooled(Counter(self.counts(s)))

    def run_value(self, m: RunMetrics) -> float | None:
        return self.stored(m) if self.stored is not None else m.other_headlines.get(self.key)

    @property
    def threshold(self) -> str:
        """Its pytest threshold's name (`min_tsr`, `max_tcrr`)."""
        return f"{'max' if self.lower_is_better else 'min'}_{self.key}"


def _tsr_counts(s: SimulationMetrics) -> dict[str, float]:
    return {} if s.tsr.score is None else {"tsr_sum": s.tsr.score, "tsr_n": 1}


def _tue_counts(s: SimulationMetrics) -> dict[str, float]:
    measured = {} if s.tue.schema_valid is None else {"schema_valid": s.tue.schema_valid, "p_calls": s.tue.calls}
    return {"calls": s.tue.calls, "executed": s.tue.executed, **measured}


def recovery_counts(recoveries: Iterable[ShiftRecovery]) -> dict[str, int]:
    """The recovery metric's counts over any shifts: one simulation's, or a run's or slice's for GSRT's aggregate."""
    shifts = list(recoveries)
    return {"shifts": len(shifts), "recovered": sum(r.recovered for r in shifts)}


BUILT_IN = (
    HeadlineMetric(
        key="tsr", label="TSR", heading="TSR \u00b7 task success",
        description="task success with partial credit, mean over scored simulations",
        counts=_tsr_counts, pooled=lambda c: ratio(c["tsr_sum"], c["tsr_n"]),
        value=lambda s: s.tsr.score, stored=lambda m: m.tsr.mean),
    HeadlineMetric(
        key="tue", label="TUE", run_label="TUE (pooled)", heading="TUE \u00b7 tool-use efficiency",
        description="tool-use efficiency: executed calls and schema-valid arguments, pooled over calls",
        counts=_tue_counts,
        pooled=lambda c: tue_value(ratio(c["executed"], c["calls"]), ratio(c["schema_valid"], c["p_calls"])),
        value=lambda s: s.tue.tue, stored=lambda m: m.tue.tue),
    HeadlineMetric(
        key="tcrr", label="TCRR", run_label="TCRR (pooled)", heading="TCRR \u00b7 redundant calls",
        description="share of tool calls that were redundant, pooled over calls",
        counts=lambda s: {"calls": s.tue.calls, "redundant": s.tcrr.redundant},
        pooled=lambda c: ratio(c["redundant"], c["calls"]),
        value=lambda s: s.tcrr.ratio, stored=lambda m: m.tcrr.pooled, lower_is_better=True, reward=False),
    HeadlineMetric(
        key="recovery", label="recovery", heading="Goal-shift recovery", score_key="gsrt",
        description="share of goal shifts recovered, pooled over shifts",
        counts=lambda s: recovery_counts(s.gsrt),
        pooled=lambda c: ratio(c["recovered"], c["shifts"]),
        stored=lambda m: m.gsrt.recovery_rate, reward=False),
)
"""TSR, TUE, TCRR and goal-shift recovery (docs/metrics.md). TCRR is no reward (lower is better), nor is
recovery (a simulation without shifts has none to reward)."""

_CATALOG: dict[str, HeadlineMetric] = {m.key: m for m in BUILT_IN}


def headline_metrics() -> tuple[HeadlineMetric, ...]:
    """The registered headline metrics, in the order every output lists them."""
    return tuple(_CATALOG.values())


def headline_metric(key: str) -> HeadlineMetric:
    return _CATALOG[key]


def register_metric(metric: HeadlineMetric) -> HeadlineMetric:
    """Add a headline metric after the others; every output shows it from then on (docs/adding-a-metric.md)."""
    if metric.key in _CATALOG or metric.key.startswith(PASS_K):
        raise ValueError(f"a headline metric is already named {metric.key!r}; give yours another key")
    _CATALOG[metric.key] = metric
    return metric


def unregister_metric(key: str) -> None:
    """Remove a metric `register_metric` added (the built-ins stay)."""
    if any(m.key == key for m in BUILT_IN):
        raise ValueError(f"{key!r} is a built-in headline metric and cannot be removed")
    _CATALOG.pop(key, None)


def simulation_counts(s: SimulationMetrics) -> Counts:
    """The additive counts one scored simulation contributes to every headline metric."""
    out: Counts = Counter()
    for metric in headline_metrics():
        for name, value in metric.counts(s).items():
            if name in out and out[name] != value:
                raise ValueError(f"headline metric {metric.key!r} counts {name!r} as {value}, another as {out[name]}: "
                                 "give its count a name of its own")
            out[name] = value
    return out


PASS_K = "pass^"
"""pass^k's figures are named pass^1, pass^2, ...: per task, the chance that k of its trials all succeed (its
per-simulation value is `success`), averaged over tasks."""


def pass_counts(successes: Sequence[bool], ks: Iterable[int]) -> Counts:
    """One task's (one agent's) contribution to pass^k: its pass^k value and a task count."""
    n, c = len(successes), sum(successes)
    counts: Counts = Counter(pass_tasks=1)
    for k in ks:
        counts[f"{PASS_K}{k}"] = pass_hat_k(n, c, k)
    return counts


def pass_figure(k: int) -> Callable[[Mapping[str, float]], float | None]:
    return lambda c: ratio(c[f"{PASS_K}{k}"], c["pass_tasks"])


def figures(ks: Iterable[int]) -> dict[str, Callable[[Mapping[str, float]], float | None]]:
    """Every headline figure's pooled formula by name: the headline metrics, then pass^k at each k."""
    return {**{m.key: m.pooled for m in headline_metrics()}, **{f"{PASS_K}{k}": pass_figure(k) for k in ks}}


V = TypeVar("V")


class CatalogView(Mapping[str, V], Generic[V]):
    """A read-only mapping rebuilt from the catalog on every use, so a metric registered later is in it."""

    def __init__(self, build: Callable[[], dict[str, V]]):
        self._build = build

    def __getitem__(self, key: str) -> V:
        return self._build()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._build())

    def __len__(self) -> int:
        return len(self._build())

    def __repr__(self) -> str:
        return repr(self._build())
