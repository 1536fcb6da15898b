"""From trajectories to run metrics: per-simulation scores, then pooled/mean aggregates and breakdowns.

Simulations that ended for a reason not the agent's answer (its program did not run, the user simulator or
the infrastructure failed) are not scored; they are counted in `excluded` by termination reason.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

from pydantic import BaseModel

from shiftbox_servers.kit import get_domain, schema_arguments_model

from .._usage import Usage
from ..tasks import Task
from ..trajectory import Trajectory
from ._catalog import headline_metric, headline_metrics, recovery_counts, simulation_counts
from ._goal_paths import PathInputs, goal_paths
from ._graph_refusals import aggregate_graph_refusals, graph_refusal_score
from ._gsrt import shift_recoveries
from ._judges import DeterministicDetector, Judge, judge_report
from ._missions import aggregate_paths
from ._mmtb_aggregate import aggregate_missions
from ._mmtb_arguments import resolve
from ._mmtb_goals import mission_verdicts
from ._model import (
    AgentScores,
    Breakdown,
    GSRTAggregate,
    RunMetrics,
    ShiftRecovery,
    SimulationMetrics,
    TCRRAggregate,
    TSRAggregate,
    TUEAggregate,
    Turns,
)
from ._passk import pass_family
from ._ratios import mean_of_present, ratio
from ._rubric import aggregate_rubric, rubric_score
from ._shift_reports import aggregate_shift_reports, shift_report_score
from ._tcrr import tcrr_score
from ._tsr import tsr_score
from ._tue import tue_score
from ._uncertainty import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    bootstrap_intervals,
    rerun_agreement,
    task_counts,
    total,
)

USAGE_ROLES = ("agent", "user", "judge")
"""The roles whose LLM use is counted apart, in the order summaries list them (any other role follows)."""
CROSSED, SAME_DOMAIN = "crossed", "same_domain"
"""`RunMetrics.by_domain_crossing`'s slices: shifts to another domain's goal, and shifts within one domain."""


class DomainFacts(BaseModel):
    """What metrics need from an installed domain (None when it is not installed)."""

    model_config = {"arbitrary_types_allowed": True}
    schemas: dict[str, type[BaseModel]] | None
    json_schemas: dict[str, dict] | None = None
    """tool name -> its published JSON schema, references inlined (MMTB's argument check reads it)."""
    read_only: set[str] | None
    goal_tools: dict[str, set[str]]
    lexicon: dict[str, tuple[str, ...]]
    generic_terms: tuple[str, ...] = ()
    transfer_tool: str = "transfer_to_human_agents"
    transfer_tools: tuple[str, ...] = ("transfer_to_human_agents",)
    """Every transfer tool: one per domain of a cross-domain view (`Domain.transfer_tools`)."""


def served_toolset(trajectory: Trajectory) -> str:
    """The tool set the trajectory's calls were served by (its servers' `toolset`; 'default' when none is recorded)."""
    served = {info.toolset for info in trajectory.servers.values()}
    return served.pop() if len(served) == 1 else "default"


@functools.cache
def domain_facts(name: str, toolset: str = "default") -> DomainFacts:
    """What metrics read of domain `name` as tool set `toolset` served it (its schemas decide P); a tool set the
    installed domain does not have falls back to every tool of every set, so no call is judged by a wrong one."""
    try:
        domain = get_domain(name)
    except KeyError:
        return DomainFacts(schemas=None, read_only=None, goal_tools={}, lexicon={})
    try:
        every = list(domain.toolset(toolset))
    except KeyError:
        every = list({s.name: s for ts in (domain.tools, *domain.toolsets.values()) for s in ts}.values())
    return DomainFacts(
        schemas={s.name: s.arguments_model for s in every},
        json_schemas={s.name: resolve(s.arguments_schema) for s in every},  # resolve copies: the shared one unchanged
        read_only={s.name for s in every if s.annotations.read_only_hint},
        goal_tools={g: set(t) for g, t in domain.goal_tools.items()},
        lexicon=dict(domain.goal_lexicon), generic_terms=tuple(domain.generic_terms),
        transfer_tool=domain.transfer_tool, transfer_tools=domain.transfer_tools,
    )


def served_facts(trajectory: Trajectory) -> DomainFacts:
    """What metrics read of the trajectory's domain as its servers served it: the declared tools' facts, and for tools
    that come with a snapshot (mmtb), the input schemas the servers published (`ServerInfo.tool_schemas`)."""
    facts = domain_facts(trajectory.domain, served_toolset(trajectory))
    recorded = {name: schema for info in trajectory.servers.values() for name, schema in (info.tool_schemas or {}).items()}
    if not recorded:
        return facts
    return facts.model_copy(update={
        "schemas": {**(facts.schemas or {}), **{n: schema_arguments_model(n, s) for n, s in sorted(recorded.items())}},
        "json_schemas": {**(facts.json_schemas or {}), **{n: resolve(s) for n, s in sorted(recorded.items())}}})


def simulation_metrics(trajectory: Trajectory, task: Task, judge: Judge | None = None,
                       success_threshold: float = 1.0) -> SimulationMetrics:
    facts = served_facts(trajectory)
    relevant = {g: set(t) for g, t in facts.goal_tools.items()}
    for action in task.evaluation_criteria.action_sets:
        if action.goal:
            relevant.setdefault(action.goal, set()).update(s.function_name for s in action.allowed_tools)
    detector = DeterministicDetector(facts.lexicon, relevant, facts.generic_terms)
    tsr = tsr_score(trajectory, task, judge)
    walked = PathInputs.of(trajectory, task)  # once, for both path evaluations
    return SimulationMetrics(
        simulation_id=trajectory.simulation_id, task_id=trajectory.task_id, trial=trajectory.trial,
        domain=trajectory.domain, persona=trajectory.persona, agent=trajectory.agent,
        termination=trajectory.termination.reason,
        scored=trajectory.termination.scored,
        tsr=tsr, tue=tue_score(trajectory, facts.schemas), tcrr=tcrr_score(trajectory, facts.read_only),
        gsrt=shift_recoveries(trajectory, task, judge, detector, facts.transfer_tools),
        shift_reports=shift_report_score(trajectory), rubric=rubric_score(trajectory, task, judge),
        paths=mission_verdicts(trajectory, task, facts.json_schemas, walked), goal_walks=goal_paths(trajectory, task, walked),
        graph_refusals=graph_refusal_score(trajectory), usage=usage_by_role([trajectory.usage]),
        success=False if tsr.unscored_goals else None if tsr.score is None else tsr.score >= success_threshold - 1e-9,
    )



def usage_by_role(usages: Iterable[Mapping[str, Usage]]) -> dict[str, Usage]:
    """Tokens, cost and calls summed per role over simulations (or runs); roles in `USAGE_ROLES` order."""
    summed: dict[str, Usage] = {}
    for usage in usages:
        for role, u in usage.items():
            summed[role] = summed.get(role, Usage()) + u
    order = {role: i for i, role in enumerate(USAGE_ROLES)}
    return {role: summed[role] for role in sorted(summed, key=lambda r: (order.get(r, len(order)), r))}


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks of sorted values; past an infinite neighbour it is infinite."""
    pos = q * (len(values) - 1)
    lo = math.floor(pos)
    frac = pos - lo
    if frac < 1e-9:
        return values[lo]
    if math.isinf(values[lo + 1]):
        return math.inf
    return values[lo] + (values[lo + 1] - values[lo]) * frac


def _turns(value: float) -> Turns:
    return "never" if math.isinf(value) else value


def stage_statistics(values: list[int | None]) -> tuple[Turns, Turns, float | None]:
    """Median, p90 and never-share of one GSRT stage; a stage never reached counts as infinitely late."""
    if not values:
        return None, None, None
    ordered = sorted(math.inf if v is None else float(v) for v in values)
    never = sum(v is None for v in values) / len(values)
    return _turns(_quantile(ordered, 0.5)), _turns(_quantile(ordered, 0.9)), never


def aggregate_gsrt(recoveries: list[ShiftRecovery]) -> GSRTAggregate:
    """GSRT over any shifts; the recovery rate is the catalog's `recovery` formula (one formula for both)."""
    n = len(recoveries)
    stats = {"ack": stage_statistics([r.ack for r in recoveries]),
             "tool": stage_statistics([r.tool for r in recoveries]),
             "outcome": stage_statistics([r.outcome for r in recoveries if r.outcome_measured])}
    return GSRTAggregate(
        shifts=n,
        recovery_rate=headline_metric("recovery").pooled(recovery_counts(recoveries)),
        transfer_rate=ratio(sum(r.transferred for r in recoveries), n),
        **{f"{kind}_{stage}": value for stage, values in stats.items()
           for kind, value in zip(("median", "p90", "never"), values, strict=True)},
        outcome_not_measured=sum(not r.outcome_measured for r in recoveries),
    )


def _breakdown(sims: list[SimulationMetrics], recoveries: list[ShiftRecovery] | None = None) -> Breakdown:
    counts = total(simulation_counts(s) for s in sims)
    return Breakdown(
        simulations=len(sims),
        **{m.key: m.pooled(counts) for m in headline_metrics() if m.key in Breakdown.model_fields},
        gsrt=aggregate_gsrt(recoveries if recoveries is not None else [r for s in sims for r in s.gsrt]),
    )


def single_agent(agents: Iterable[str]) -> str | None:
    """The one agent of a set of simulations; several is an error (headlines are never pooled across agents)."""
    names = sorted(set(agents))
    if len(names) > 1:
        raise ValueError(f"simulations of several agents ({', '.join(names)}) cannot share one headline; "
                         "score each agent on its own (shiftbox.metrics.score_by_agent)")
    return names[0] if names else None


def aggregate(sims: list[SimulationMetrics], success_threshold: float = 1.0) -> RunMetrics:
    """One agent's run metrics: headlines with bootstrap intervals, rerun agreement and breakdowns."""
    agent = single_agent(s.agent for s in sims)
    scored = [s for s in sims if s.scored]
    excluded: dict[str, int] = defaultdict(int)
    for s in sims:
        if not s.scored:
            excluded[s.termination] += 1
    counts = total(simulation_counts(s) for s in scored)
    state = [s.tsr.state_match for s in scored if s.tsr.state_match is not None]
    aware = [s for s in scored if s.tcrr.state_aware_redundant is not None]
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for s in scored:
        if s.success is not None:
            outcomes[s.task_id].append(s.success)
    hat, at, avg = pass_family(outcomes)
    per_task = task_counts(scored, hat)
    agreement, agreement_n = rerun_agreement(scored)
    groups: dict[str, dict[str, list[SimulationMetrics]]] = {"domain": defaultdict(list), "persona": defaultdict(list)}
    pairs: dict[str, list[ShiftRecovery]] = defaultdict(list)
    pair_sims: dict[str, dict[str, SimulationMetrics]] = defaultdict(dict)
    crossing: dict[str, list[ShiftRecovery]] = defaultdict(list)
    crossing_sims: dict[str, dict[str, SimulationMetrics]] = defaultdict(dict)
    for s in scored:
        groups["domain"][s.domain].append(s)
        groups["persona"][s.persona or "-"].append(s)
        for r in s.gsrt:
            key = f"{r.from_goal}->{r.to_goal}"
            pairs[key].append(r)
            pair_sims[key][s.simulation_id] = s
            if r.crossed_domains is not None:
                side = CROSSED if r.crossed_domains else SAME_DOMAIN
                crossing[side].append(r)
                crossing_sims[side][s.simulation_id] = s
    notes = []
    if excluded.get("agent_program_error"):
        notes.append(f"{excluded['agent_program_error']} simulation(s) not scored: the agent program failed "
                     "(agent_program_error: it could not start or be reached, exited, crashed, broke the protocol or "
                     "never answered; the reason and its stderr are in termination.detail); fix it and run them "
                     "again with `shiftbox run ... --resume`")
    if any(s.tsr.nl_status == "not_judged" for s in scored):
        notes.append("nl_assertion not judged for some simulations (no judge configured, or it failed); "
                     "TSR is renormalized over the channels that were measured")
    unscored = sum(bool(s.tsr.unscored_goals) for s in scored)
    if unscored:
        notes.append(f"{unscored} simulation(s) have a goal that no check measured (unscored): no TSR, never a "
                     "success; add an action set or communicate_info for that goal, or configure a judge")
    if any(s.rubric is not None and s.rubric.status == "not_judged" for s in scored):
        notes.append("rubric not judged for some simulations (no judge configured, or a window's call failed); "
                     "the rubric pass rate counts judged simulations only")
    if counts["p_calls"] < counts["calls"]:
        notes.append("P not measured for simulations of domains that are not installed")
    pooled = {m.key: m.pooled(counts) for m in headline_metrics()}
    t = ratio(counts["executed"], counts["calls"])
    p = ratio(counts["schema_valid"], counts["p_calls"])
    return RunMetrics(
        mode="shiftbox", agent=agent, simulations=len(sims), scored_simulations=len(scored), excluded=dict(excluded),
        tool_calls=counts["calls"],
        tsr=TSRAggregate(
            n=counts["tsr_n"], mean=pooled["tsr"],
            communicate_info=mean_of_present(s.tsr.communicate_info for s in scored),
            action=mean_of_present(s.tsr.action for s in scored), nl_assertion=mean_of_present(s.tsr.nl_assertion for s in scored),
            nl_judged=sum(s.tsr.nl_status == "judged" for s in scored), unscored=unscored,
            state_match=ratio(sum(state), len(state)), state_match_n=len(state),
        ),
        tue=TUEAggregate(calls=counts["calls"], t=t, p=p, tue=pooled["tue"],
                         mean_per_simulation=mean_of_present(s.tue.tue for s in scored)),
        tcrr=TCRRAggregate(
            calls=counts["calls"], redundant=counts["redundant"],
            window=sum(s.tcrr.window for s in scored), batch=sum(s.tcrr.batch for s in scored),
            pooled=pooled["tcrr"], mean=mean_of_present(s.tcrr.ratio for s in scored),
            state_aware_pooled=ratio(sum(s.tcrr.state_aware_redundant for s in aware),
                                      sum(s.tcrr.calls for s in aware)),
        ),
        gsrt=aggregate_gsrt([r for s in scored for r in s.gsrt]),
        other_headlines={m.key: pooled[m.key] for m in headline_metrics() if m.stored is None},
        shift_reports=aggregate_shift_reports([s.shift_reports for s in scored]),
        rubric=aggregate_rubric([(s.task_id, s.rubric) for s in scored if s.rubric is not None]),
        graph_refusals=aggregate_graph_refusals([s.graph_refusals for s in scored]),
        success_threshold=success_threshold, pass_hat_k=hat, pass_at_k=at, avg_at_k=avg,
        intervals=bootstrap_intervals(per_task, hat),
        bootstrap={"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "tasks": len(per_task)},
        rerun_agreement=agreement, rerun_agreement_n=agreement_n,
        by_domain={k: _breakdown(v) for k, v in sorted(groups["domain"].items())},
        by_persona={k: _breakdown(v) for k, v in sorted(groups["persona"].items())},
        by_goal_pair={k: _breakdown(list(pair_sims[k].values()), pairs[k]) for k in sorted(pairs)},
        by_domain_crossing={k: _breakdown(list(crossing_sims[k].values()), crossing[k]) for k in sorted(crossing)},
        paths=aggregate_missions(scored), goal_walks=aggregate_paths(scored), notes=notes,
        usage=usage_by_role(s.usage for s in sims),
    )


def compute_run_metrics(trajectories: list[Trajectory], tasks: dict[str, Task], *, judge: Judge | None = None,
                        success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """Score one agent's trajectories against their tasks (sorted by simulation), then aggregate."""
    single_agent(t.agent for t in trajectories)
    missing = sorted({t.task_id for t in trajectories} - tasks.keys())
    if missing:
        raise KeyError(f"trajectories refer to tasks not given: {', '.join(missing[:5])}")
    ordered = sorted(trajectories, key=lambda t: (t.task_id, t.trial, t.simulation_id))
    sims = []
    for t in ordered:
        with judge.judging(t.simulation_id) if judge is not None else contextlib.nullcontext():
            sims.append(simulation_metrics(t, tasks[t.task_id], judge, success_threshold))
    run = aggregate(sims, success_threshold)
    if judge is not None:
        run.judge = judge_report(judge)
        if judge.usage is not None and judge.usage.calls:
            run.usage = usage_by_role([run.usage, {"judge": judge.usage}])
    return run, sims


def score_by_agent(trajectories: list[Trajectory], tasks: dict[str, Task], *, judge: Judge | None = None,
                   success_threshold: float = 1.0) -> dict[str, AgentScores]:
    """Each agent's own metrics and simulations (keyed by agent, sorted): a report never mixes agents."""
    by_agent: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        by_agent[t.agent].append(t)
    out = {}
    for agent in sorted(by_agent):
        run, sims = compute_run_metrics(by_agent[agent], tasks, judge=judge, success_threshold=success_threshold)
        out[agent] = AgentScores(agent=agent, metrics=run, simulations=sims)
    return out
