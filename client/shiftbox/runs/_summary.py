"""What a finished (or interrupted) run says at its end: the headline per agent, the simulations not scored grouped
by why, LLM tokens and cost per role, and the commands to run next. `shiftbox run` prints it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from .._text import first_line
from .._usage import Usage
from ..metrics import RunMetrics, score_by_agent, usage_by_role
from ..tasks import Task
from ..trajectory import Trajectory


class NotScored(BaseModel):
    """Simulations left out of the headline for one reason: who was blamed and how the simulation ended."""

    blame: str
    reason: str = Field(description="the termination reason")
    simulations: int
    first: str = Field(description="the first such simulation (by id)")
    detail: str = Field("", description="its termination detail's first line, shortened at a word boundary past 1000 characters")


class RunSummary(BaseModel):
    """The end of a run: headline figures per agent (never pooled), what was not scored and why, LLM use."""

    out: str
    simulations: int = Field(description="simulations in the run directory (earlier ones too, when resumed)")
    planned: int | None = Field(None, description="simulations the run has in all (run.json), when known")
    resumed: int = Field(0, description="simulations already finished before this invocation")
    scored: int
    agents: dict[str, RunMetrics] = Field(default_factory=dict, description="agent -> its own metrics")
    not_scored: list[NotScored] = Field(default_factory=list, description="by (blame, reason), largest group first")
    usage: dict[str, Usage] = Field(default_factory=dict, description="LLM tokens and cost per role, all simulations")
    next_commands: list[str] = Field(default_factory=list, description="what to run next; none when nothing was "
                                                                        "scored (the run needs fixing first)")


DETAIL_CHARS = 1000
"""A detail's first line is shortened at a word boundary past this (an authentication failure fits whole)."""


def not_scored_groups(trajectories: Sequence[Trajectory], scored_ids: set[str]) -> list[NotScored]:
    """The simulations not in `scored_ids`, grouped by (blame, termination reason): any blame, any reason."""
    groups: dict[tuple[str, str], list[Trajectory]] = {}
    for t in sorted(trajectories, key=lambda t: t.simulation_id):
        if t.simulation_id not in scored_ids:
            groups.setdefault((t.termination.blame, t.termination.reason), []).append(t)
    rows = [NotScored(blame=blame, reason=reason, simulations=len(ts), first=ts[0].simulation_id,
                      detail=first_line(ts[0].termination.detail, DETAIL_CHARS)) for (blame, reason), ts in groups.items()]
    return sorted(rows, key=lambda r: (-r.simulations, r.blame, r.reason))


def next_commands(out: Path) -> list[str]:
    """What to run after `shiftbox run`: every metric (and metrics.json), then the HTML report."""
    run = shlex.quote(str(out))
    return [f"shiftbox metrics {run}", f"shiftbox report {run} --html {shlex.quote(str(out / 'report.html'))}"]


def summarize_run(out: Path, trajectories: Sequence[Trajectory], tasks: dict[str, Task], *, planned: int | None = None,
                  resumed: int = 0) -> RunSummary:
    """Score a run's trajectories per agent and say what its end should show (`shiftbox run` prints it)."""
    scores = score_by_agent(list(trajectories), tasks)
    scored = {s.simulation_id for a in scores.values() for s in a.simulations if s.scored}
    return RunSummary(
        out=str(out), simulations=len(trajectories), planned=planned, resumed=resumed, scored=len(scored),
        agents={agent: a.metrics for agent, a in scores.items()},
        not_scored=not_scored_groups(trajectories, scored),
        usage=usage_by_role(a.metrics.usage for a in scores.values()),
        next_commands=next_commands(out) if scored else [],
    )
