"""Scoring a sample with shiftbox's own metrics, and pass^k over epochs as an Inspect reducer."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai._util.registry import (
    RegistryInfo,
    registry_add,
    registry_info,
    registry_unqualified_name,
)
from inspect_ai.scorer import (
    Score,
    Scorer,
    ScoreReducer,
    Target,
    mean,
    score_reducer,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from ..metrics import (
    CatalogView,
    SimulationMetrics,
    headline_metrics,
    pass_hat_k,
    simulation_metrics,
)
from ..tasks import Task
from ._episode import finish_episode
from ._solver import TASK_KEY, sample_trajectory

SUCCESS = "success"


def _scores() -> dict[str, Callable[[SimulationMetrics], float | bool | None]]:
    return {**{m.score_key or m.key: m.simulation_value for m in headline_metrics()}, SUCCESS: lambda s: s.success}


SCORES: Mapping[str, Callable[[SimulationMetrics], float | bool | None]] = CatalogView(_scores)
"""The keys of a sample's score value and their per-simulation values: each headline metric of the catalog
(`shiftbox.metrics.headline_metrics`: TSR, TUE, TCRR, GSRT's recovery rate over the sample's shifts as `gsrt`, then
any registered one), and success (TSR >= the success threshold). NaN when shiftbox has no value (e.g. TCRR without
calls, GSRT without shifts)."""
METRICS_KEY = "shiftbox_metrics"
"""Score metadata: the sample's `SimulationMetrics`, as `shiftbox metrics` writes it to metrics.json."""
NAN = float("nan")


def _value(number: float | bool | None) -> float:
    return NAN if number is None else float(number)


def score_values(metrics: SimulationMetrics) -> dict[str, float]:
    """A simulation's scores as an Inspect score value; a simulation shiftbox does not score (it failed for a
    reason not the agent's answer: its program did not run, the user simulator or infrastructure failed) is all
    NaN, Inspect's "unscored"."""
    if not metrics.scored:
        return dict.fromkeys(SCORES, NAN)
    return {key: _value(value(metrics)) for key, value in SCORES.items()}


@scorer(metrics={"*": [mean(), stderr()]})
def shiftbox_scores(success_threshold: float = 1.0) -> Scorer:
    """Every headline metric (TSR, TUE, TCRR, GSRT, ...) and success per sample, computed by shiftbox's metrics from the trajectory the solver
    stored (so `inspect score` on a log scores it again without the task file)."""

    async def score(state: TaskState, target: Target) -> Score:
        await finish_episode(state)  # a swapped-in solver's episode (docs/inspect.md): its trajectory stored now
        trajectory = sample_trajectory(state)
        task = Task.model_validate(state.metadata[TASK_KEY])
        metrics = simulation_metrics(trajectory, task, success_threshold=success_threshold)
        values = score_values(metrics)
        shown = ", ".join(f"{k} {v:.3f}" for k, v in values.items() if not math.isnan(v))
        return Score(value=values, explanation=f"{trajectory.termination.reason}: {shown or 'not scored'}",
                     metadata={METRICS_KEY: metrics.model_dump(mode="json")})

    return score


def register_as_logged(factory: Callable[..., Scorer]) -> None:
    """Register a scorer also under the name Inspect writes to the log (its name without the package,
    `shiftbox_scores`), so `inspect score LOG` finds it as written: Inspect looks that name up as it is, and a name
    without a package is never looked for under `shiftbox/`."""
    info = registry_info(factory)

    @functools.wraps(factory)
    def as_logged(*args: Any, **kwargs: Any) -> Scorer:
        return factory(*args, **kwargs)

    registry_add(as_logged, RegistryInfo(type="scorer", name=registry_unqualified_name(info), metadata=info.metadata))


register_as_logged(shiftbox_scores)


@score_reducer
def pass_hat(k: int | None = None) -> ScoreReducer:
    """pass^k of a sample over its epochs: the chance that k trials drawn from them all succeed, C(c, k) / C(n, k)
    with c of the n scored epochs a success (shiftbox's `pass_hat_k`); k defaults to every epoch (`--epochs k`
    gives pass^k). Its mean over samples is shiftbox's pass^k over tasks. Fewer than k scored epochs: NaN."""

    def reduce(scores: list[Score]) -> Score:
        outcomes = [s.value[SUCCESS] for s in scores
                    if isinstance(s.value, dict) and not math.isnan(float(s.value.get(SUCCESS, NAN)))]
        n = len(outcomes)
        want = k if k is not None else len(scores)
        value = pass_hat_k(n, int(sum(outcomes)), want) if n >= want > 0 else NAN
        return Score(value={SUCCESS: value}, explanation=f"{int(sum(outcomes))} of {n} scored epochs succeeded")

    return reduce
