"""From trajectories to run metrics: per-simulation scores, then pooled/mean aggregates and breakdowns.

Simulations that ended for a reason not the agent's (user simulator or infrastructure failure) are
not scored; they are counted in `excluded` by termination reason.
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel

from shiftbox_servers.kit import get_domain

from ..tasks import Task
from ..trajectory import Trajectory
from ._gsrt import shift_recoveries
from ._judges import DeterministicDetector, Judge
from ._model import (
    Breakdown,
    GSRTAggregate,
    RunMetrics,
    ShiftRecovery,
    SimulationMetrics,
    TCRRAggregate,
    TSRAggregate,
    TUEAggregate,
)
from ._passk import pass_family
from ._tcrr import tcrr_score
from ._tsr import tsr_score
from ._tue import tue_score


class DomainFacts(BaseModel):
    """What metrics need from an installed domain (None when it is not installed)."""

    model_config = {"arbitrary_types_allowed": True}
    schemas: dict[str, type[BaseModel]] | None
    read_only: set[str] | None
    goal_tools: dict[str, set[str]]
    lexicon: dict[str, tuple[str, ...]]
    transfer_tool: str = "transfer_to_human_agents"


@functools.cache
def domain_facts(name: str) -> DomainFacts:
    try:
        domain = get_domain(name)
    except KeyError:
        return DomainFacts(schemas=None, read_only=None, goal_tools={}, lexicon={})
    return DomainFacts(
        schemas={s.name: s.arguments_model for s in domain.tools},
        read_only={s.name for s in domain.tools if s.annotations.read_only_hint},
        goal_tools={g: set(t) for g, t in domain.goal_tools.items()},
        lexicon=dict(domain.goal_lexicon),
        transfer_tool=domain.transfer_tool,
    )


def simulation_metrics(trajectory: Trajectory, task: Task, judge: Judge | None = None,
                       success_threshold: float = 1.0) -> SimulationMetrics:
    facts = domain_facts(trajectory.domain)
    relevant = {g: set(t) for g, t in facts.goal_tools.items()}
    for action in task.evaluation_criteria.action_sets:
        if action.goal:
            relevant.setdefault(action.goal, set()).update(s.function_name for s in action.allowed_tools)
    detector = DeterministicDetector(facts.lexicon, relevant)
    tsr = tsr_score(trajectory, task, judge)
    return SimulationMetrics(
        simulation_id=trajectory.simulation_id, task_id=trajectory.task_id, trial=trajectory.trial,
        domain=trajectory.domain, persona=trajectory.persona, agent=trajectory.agent,
        termination=trajectory.termination.reason,
        scored=trajectory.termination.blame not in ("user", "infrastructure"),
        tsr=tsr, tue=tue_score(trajectory, facts.schemas), tcrr=tcrr_score(trajectory, facts.read_only),
        gsrt=shift_recoveries(trajectory, task, judge, detector, facts.transfer_tool),
        success=None if tsr.score is None else tsr.score >= success_threshold - 1e-9,
    )


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _quantile(values: list[int], q: float) -> float | None:
    """Linear interpolation between closest ranks (statistics' 'inclusive' method)."""
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def aggregate_gsrt(recoveries: list[ShiftRecovery]) -> GSRTAggregate:
    n = len(recoveries)
    stages = {s: [getattr(r, s) for r in recoveries] for s in ("ack", "tool")}
    measured = [r.outcome for r in recoveries if r.outcome_measured]
    stages["outcome"] = measured
    finite = {s: sorted(v for v in vals if v is not None) for s, vals in stages.items()}
    return GSRTAggregate(
        shifts=n,
        recovery_rate=_ratio(sum(r.recovered for r in recoveries), n),
        transfer_rate=_ratio(sum(r.transferred for r in recoveries), n),
        median_ack=statistics.median(finite["ack"]) if finite["ack"] else None,
        median_tool=statistics.median(finite["tool"]) if finite["tool"] else None,
        median_outcome=statistics.median(finite["outcome"]) if finite["outcome"] else None,
        p90_ack=_quantile(finite["ack"], 0.9), p90_tool=_quantile(finite["tool"], 0.9),
        p90_outcome=_quantile(finite["outcome"], 0.9),
        never_ack=_ratio(sum(v is None for v in stages["ack"]), n),
        never_tool=_ratio(sum(v is None for v in stages["tool"]), n),
        never_outcome=_ratio(sum(v is None for v in measured), len(measured)),
        outcome_not_measured=n - len(measured),
    )


def _breakdown(sims: list[SimulationMetrics], recoveries: list[ShiftRecovery] | None = None) -> Breakdown:
    calls = sum(s.tcrr.calls for s in sims)
    return Breakdown(
        simulations=len(sims),
        tsr=_mean(s.tsr.score for s in sims),
        tue=_mean(s.tue.tue for s in sims),
        tcrr=_ratio(sum(s.tcrr.redundant for s in sims), calls),
        gsrt=aggregate_gsrt(recoveries if recoveries is not None else [r for s in sims for r in s.gsrt]),
    )


def aggregate(sims: list[SimulationMetrics], success_threshold: float = 1.0) -> RunMetrics:
    scored = [s for s in sims if s.scored]
    excluded: dict[str, int] = defaultdict(int)
    for s in sims:
        if not s.scored:
            excluded[s.termination] += 1
    calls = sum(s.tue.calls for s in scored)
    measured_p = [s for s in scored if s.tue.schema_valid is not None]
    p_calls = sum(s.tue.calls for s in measured_p)
    t = _ratio(sum(s.tue.executed for s in scored), calls)
    p = _ratio(sum(s.tue.schema_valid for s in measured_p), p_calls)
    state = [s.tsr.state_match for s in scored if s.tsr.state_match is not None]
    aware = [s for s in scored if s.tcrr.state_aware_redundant is not None]
    outcomes: dict[tuple[str, str], list[bool]] = defaultdict(list)  # trials of one agent on one task
    for s in scored:
        if s.success is not None:
            outcomes[(s.agent, s.task_id)].append(s.success)
    hat, at, avg = pass_family(outcomes)
    groups: dict[str, dict[str, list[SimulationMetrics]]] = {"domain": defaultdict(list), "persona": defaultdict(list),
                                                             "agent": defaultdict(list)}
    pairs: dict[str, list[ShiftRecovery]] = defaultdict(list)
    pair_sims: dict[str, list[SimulationMetrics]] = defaultdict(list)
    for s in scored:
        groups["domain"][s.domain].append(s)
        groups["persona"][s.persona or "-"].append(s)
        groups["agent"][s.agent].append(s)
        for r in s.gsrt:
            key = f"{r.from_goal}->{r.to_goal}"
            pairs[key].append(r)
            if s not in pair_sims[key]:
                pair_sims[key].append(s)
    notes = []
    if any(s.tsr.nl_status == "not_judged" for s in scored):
        notes.append("nl_assertion not judged for some simulations (no judge configured, or it failed); "
                     "TSR is renormalized over the channels that were measured")
    if len(measured_p) < len(scored):
        notes.append("P not measured for simulations of domains that are not installed")
    return RunMetrics(
        mode="shiftbox", simulations=len(sims), scored_simulations=len(scored), excluded=dict(excluded),
        tool_calls=calls,
        tsr=TSRAggregate(
            n=len(scored), mean=_mean(s.tsr.score for s in scored),
            communicate_info=_mean(s.tsr.communicate_info for s in scored),
            action=_mean(s.tsr.action for s in scored), nl_assertion=_mean(s.tsr.nl_assertion for s in scored),
            nl_judged=sum(s.tsr.nl_status == "judged" for s in scored),
            state_match=_ratio(sum(state), len(state)), state_match_n=len(state),
        ),
        tue=TUEAggregate(calls=calls, t=t, p=p, tue=0.6 * t + 0.4 * p if t is not None and p is not None else None,
                         mean_per_simulation=_mean(s.tue.tue for s in scored)),
        tcrr=TCRRAggregate(
            calls=sum(s.tcrr.calls for s in scored), redundant=sum(s.tcrr.redundant for s in scored),
            window=sum(s.tcrr.window for s in scored), batch=sum(s.tcrr.batch for s in scored),
            pooled=_ratio(sum(s.tcrr.redundant for s in scored), sum(s.tcrr.calls for s in scored)),
            mean=_mean(s.tcrr.ratio for s in scored),
            state_aware_pooled=_ratio(sum(s.tcrr.state_aware_redundant for s in aware),
                                      sum(s.tcrr.calls for s in aware)),
        ),
        gsrt=aggregate_gsrt([r for s in scored for r in s.gsrt]),
        success_threshold=success_threshold, pass_hat_k=hat, pass_at_k=at, avg_at_k=avg,
        by_domain={k: _breakdown(v) for k, v in sorted(groups["domain"].items())},
        by_persona={k: _breakdown(v) for k, v in sorted(groups["persona"].items())},
        by_agent={k: _breakdown(v) for k, v in sorted(groups["agent"].items())},
        by_goal_pair={k: _breakdown(pair_sims[k], pairs[k]) for k in sorted(pairs)},
        notes=notes,
    )


def compute_run_metrics(trajectories: list[Trajectory], tasks: dict[str, Task], *, judge: Judge | None = None,
                        success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """Score every trajectory against its task (sorted by simulation), then aggregate."""
    missing = sorted({t.task_id for t in trajectories} - tasks.keys())
    if missing:
        raise KeyError(f"trajectories refer to tasks not given: {', '.join(missing[:5])}")
    ordered = sorted(trajectories, key=lambda t: (t.task_id, t.trial, t.agent))
    sims = [simulation_metrics(t, tasks[t.task_id], judge, success_threshold) for t in ordered]
    run = aggregate(sims, success_threshold)
    if judge is not None:
        run.judge = {"name": judge.name, "usage": dict(getattr(judge, "usage", {}) or {})}
    return run, sims
