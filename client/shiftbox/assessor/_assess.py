"""One assessment: the assessor's task file run against the participant over A2A, then scored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..metrics import headline_metrics
from ..runs import plan_run, preflight_run, run_evaluation, score_run
from ..trajectory import Trajectory
from ._request import AssessmentRequest


class AssessorSettings(BaseModel):
    """What the assessor serves: its task file, where runs go, the user simulator and the domain."""

    tasks: Path
    out: Path
    user: str = "scripted"
    domain: str | None = None


class AssessmentResult(BaseModel):
    """What the assessor answers: the headline metrics, the counts, and the run directory on its side."""

    participant: str = Field(description="the participant's URL, credentials redacted as in run.json")
    run_dir: str
    simulations: int
    scored_simulations: int
    excluded: dict[str, int]
    headlines: dict[str, float | None] = Field(description="metric key (tsr, tue, tcrr, gsrt, ...) -> run value")
    metrics: dict[str, Any] = Field(description="the whole RunMetrics, as metrics.json holds it")

    def summary(self) -> str:
        """One line for people: each headline with its label."""
        shown = ", ".join(f"{m.label} {_figure(self.headlines.get(m.key))}" for m in headline_metrics())
        return (f"Assessed {self.participant}: {self.scored_simulations} of {self.simulations} simulations scored; "
                f"{shown}")


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def next_run_dir(out: Path) -> Path:
    """`OUT/assessment-0001`, `-0002`, ...: one run directory per assessment, numbered in order."""
    taken = [p.name for p in out.glob("assessment-*")] if out.is_dir() else []
    return out / f"assessment-{len(taken) + 1:04d}"


def assess(settings: AssessorSettings, request: AssessmentRequest, run_dir: Path,
           on_done: Callable[[Trajectory], None] = lambda t: None) -> AssessmentResult:
    """Plan, preflight (the participant's card), run and score; `on_done` as each simulation is written. Raises
    RunPlanError (a participant that does not answer, a bad option) and the run's errors."""
    config = request.config
    agent_args = {"handover": config.handover}
    if config.timeout is not None:
        agent_args["timeout"] = str(config.timeout)
    plan = plan_run(settings.tasks, run_dir, domain=settings.domain, agent=f"a2a:{request.participant}",
                    user=settings.user, agent_args=agent_args, trials=config.trials, seed=config.seed,
                    task_ids=config.task_ids, limit=config.limit, max_steps=config.max_steps)
    preflight_run(plan)
    run_evaluation(plan, on_done=on_done)
    metrics, _ = score_run(run_dir)
    return AssessmentResult(
        participant=metrics.agent.removeprefix("a2a:") if metrics.agent else request.participant,
        run_dir=str(run_dir), simulations=metrics.simulations, scored_simulations=metrics.scored_simulations,
        excluded=metrics.excluded, headlines={m.key: m.run_value(metrics) for m in headline_metrics()},
        metrics=metrics.model_dump(mode="json"))
