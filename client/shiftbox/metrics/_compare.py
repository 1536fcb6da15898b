"""Paired comparison of two runs: simulations paired by (task, trial), differences with paired-bootstrap intervals.

Both runs are scored with the same definitions; a figure's difference is B - A over the paired
simulations only, and its interval resamples tasks (the same draw for both runs), so two runs of the
same agent give intervals that contain 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import TypeVar

from pydantic import BaseModel, Field

from .._usage import Usage
from ._aggregate import stage_statistics, usage_by_role
from ._catalog import Counts, figures, pass_counts, simulation_counts
from ._model import Interval, SimulationMetrics
from ._uncertainty import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    interval_gap,
    percentile_interval,
    resample_picks,
    resampled_totals,
    total,
)

D = TypeVar("D")


class MetricDifference(BaseModel):
    metric: str
    a: float | None
    b: float | None
    difference: float | None = Field(description="b - a")
    interval: Interval | None = Field(description="95% paired-bootstrap interval of the difference over tasks")


class Comparison(BaseModel):
    """What `shiftbox compare RUN_A RUN_B` reports."""

    a: str
    b: str
    paired_simulations: int
    tasks: int
    unpaired_a: int = Field(description="scored simulations of A with no scored (task, trial) twin in B")
    unpaired_b: int
    differences: list[MetricDifference]
    bootstrap: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list, description="why the runs may not be comparable: "
                                "different user simulators or tool contracts")
    usage_a: dict[str, Usage] = Field(default_factory=dict, description="A's LLM tokens and cost per role, over "
                                      "all its simulations (paired or not, scored or not)")
    usage_b: dict[str, Usage] = Field(default_factory=dict, description="B's, the same way")


def compare(a: list[SimulationMetrics], b: list[SimulationMetrics], label_a: str = "A",
            label_b: str = "B") -> Comparison:
    """Pair scored simulations by (task, trial) and report each headline figure's difference B - A."""
    by_key_a = {(s.task_id, s.trial): s for s in a if s.scored}
    by_key_b = {(s.task_id, s.trial): s for s in b if s.scored}
    paired = sorted(by_key_a.keys() & by_key_b.keys())
    counts: dict[str, list[Counts]] = defaultdict(lambda: [Counter(), Counter()])
    outcomes: dict[str, list[list[bool]]] = defaultdict(lambda: [[], []])
    stages: dict[str, list[dict[str, list[int | None]]]] = defaultdict(lambda: [defaultdict(list), defaultdict(list)])
    for key in paired:
        pair = (by_key_a[key], by_key_b[key])
        for side, sim in enumerate(pair):
            counts[key[0]][side].update(simulation_counts(sim))
            for r in sim.gsrt:
                stages[key[0]][side]["ack"].append(r.ack)
                stages[key[0]][side]["tool"].append(r.tool)
                if r.outcome_measured:
                    stages[key[0]][side]["outcome"].append(r.outcome)
            if pair[0].success is not None and pair[1].success is not None:
                outcomes[key[0]][side].append(sim.success)
    ks = range(1, min((len(o[0]) for o in outcomes.values()), default=0) + 1)
    for task_id, (oa, ob) in outcomes.items():
        counts[task_id][0].update(pass_counts(oa, ks))
        counts[task_id][1].update(pass_counts(ob, ks))
    task_ids = sorted(counts)
    per_task = [counts[t] for t in task_ids]
    picks = [] if interval_gap(len(per_task)) else resample_picks(len(per_task))
    draws = resampled_totals(per_task, picks)
    totals = [total(c[0] for c in per_task), total(c[1] for c in per_task)]
    differences = []
    for name, fn in figures(ks).items():
        differences.append(_difference(name, fn(totals[0]), fn(totals[1]), draws,
                                       lambda drawn, side, fn=fn: fn(drawn[side])))
    for stage in ("ack", "tool", "outcome"):
        differences.append(_median_difference(stage, [stages[t] for t in task_ids], picks))
    return Comparison(a=label_a, b=label_b, paired_simulations=len(paired), tasks=len(per_task),
                      unpaired_a=len(by_key_a) - len(paired), unpaired_b=len(by_key_b) - len(paired),
                      differences=differences,
                      bootstrap={"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED},
                      usage_a=usage_by_role(s.usage for s in a), usage_b=usage_by_role(s.usage for s in b))


def _median(values: list[int | None]) -> float | None:
    """A stage's median turns; None when it has no shifts or lands on never-reached stages."""
    median = stage_statistics(values)[0]
    return median if isinstance(median, float) else None


def _median_difference(stage: str, per_task: list[list[dict[str, list[int | None]]]],
                       picks: list[Counter[int]]) -> MetricDifference:
    """Difference of a GSRT stage's median turns (never-reached = infinitely late), paired over tasks."""
    def median(side: int, drawn: Counter[int] | None = None) -> float | None:
        chosen = drawn if drawn is not None else Counter(range(len(per_task)))
        return _median([v for i, times in sorted(chosen.items()) for _ in range(times) for v in per_task[i][side][stage]])

    return _difference(f"median {stage} turns", median(0), median(1), picks, lambda drawn, side: median(side, drawn))


def _difference(metric: str, va: float | None, vb: float | None, draws: Iterable[D],
                value: Callable[[D, int], float | None]) -> MetricDifference:
    """B - A, with its interval over the resamples where both runs have a value (`value(draw, 0)` is A's); none,
    and nothing resampled, when a run itself has no value."""
    if va is None or vb is None:
        return MetricDifference(metric=metric, a=va, b=vb, difference=None, interval=None)
    samples = [y - x for drawn in draws if (x := value(drawn, 0)) is not None and (y := value(drawn, 1)) is not None]
    return MetricDifference(metric=metric, a=va, b=vb, difference=vb - va, interval=percentile_interval(samples))
