"""A run scored the way the AgentChangeBench code does (`--compat agentchangebench`): per-simulation values,
the run aggregates, pass^k, breakdowns and the notes saying where the reference itself reports nothing.

The rules of each metric are in the module computing it (`_tsr`, `_tue`, `_tcrr`, `_gsrt`), each checked
against the two recorded banking runs named in the package notes (A and B).

  * TSR: the plain mean over simulations; channel means are taken over the simulations that have the channel.
  * pass^k (tau2 `get_tasks_pass_hat_k`): k = 1..min(`info.num_trials`, fewest trials of any task);
    each task's pass^k = C(c, k) / C(n, k) (`metrics.pass_hat_k`) with n = *every* trial it has (not num_trials); the plain
    mean over tasks. No simulations: {} (the reference's aggregate fails and prints {1: -1}).
    pass@k and avg@k are not reported.
  * Per-simulation values (the reference reports none) apply the same functions to one simulation, with
    None where a ratio has no denominator. Breakdowns: by_domain and by_agent.

  * GSRT: from the judge output stored in the simulation; a simulation without it (every simulation of a
    shiftbox run) is asked of `judge` when one is given (`_gsrt_judge`), else it is not judged.

Not reproducible: a task with both `action_sets` and tau2 `actions` is scored by the reference on
`action_sets` only; the importer merges both, so such a task would be scored on both here (no task in
A or B has both). NL verdicts and GSRT are only as good as the judge outputs.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ..metrics import (
    Breakdown,
    Judge,
    RunMetrics,
    SimulationMetrics,
    TCRRAggregate,
    TSRAggregate,
    TUEAggregate,
    compute_run_metrics,
    judge_report,
    mean_of_present,
    pass_hat_k,
)
from ..tasks import Task
from ..trajectory import Trajectory
from ._gsrt import gsrt_aggregate, shift_recoveries_of
from ._gsrt_judge import judge_gsrt
from ._results import load_agentchangebench_results
from ._stored import has_judge_output, judge_shifts, stored_reward, stores_tsr_details
from ._tcrr import compat_tcrr, pooled_tcrr
from ._tsr import compat_success, compat_tsr
from ._tue import TUEFigures, call_flags, compat_tue, tue_figures


def judged_shifts(trajectory: Trajectory, task: Task, judge: Judge | None = None) -> list[dict] | None:
    """The GSRT judge's shifts for one simulation: the stored ones when it has judge output (the reference reuses
    them too), else `judge`'s answer; None = not judged."""
    if has_judge_output(trajectory):
        return judge_shifts(trajectory.source_data) or []
    if judge is None:
        return None
    answer = judge_gsrt(judge, trajectory, task)
    return None if answer is None else answer["user_goal_shifts"]


def compat_simulation_metrics(trajectory: Trajectory, task: Task, judge: Judge | None = None) -> SimulationMetrics:
    tsr = compat_tsr(trajectory, task)
    judged = judged_shifts(trajectory, task, judge)
    return SimulationMetrics(
        simulation_id=trajectory.simulation_id, task_id=trajectory.task_id, trial=trajectory.trial,
        domain=trajectory.domain, persona=trajectory.persona, agent=trajectory.agent,
        termination=trajectory.termination.reason, scored=True, tsr=tsr, tue=compat_tue(trajectory),
        tcrr=compat_tcrr(trajectory), gsrt=shift_recoveries_of(judged or []), gsrt_judged=judged is not None,
        success=compat_success(trajectory, tsr))


def _pooled_tue(trajectories: list[Trajectory], empty: float | None) -> TUEFigures:
    return tue_figures([f for t in trajectories for f in call_flags(t)], empty)


def _breakdown(trajectories: list[Trajectory], sims: list[SimulationMetrics]) -> Breakdown:
    calls, by_window, by_batch = pooled_tcrr(trajectories)
    return Breakdown(simulations=len(sims), tsr=mean_of_present(s.tsr.score for s in sims),
                     tue=_pooled_tue(trajectories, 0.0).tue,
                     tcrr=(by_window + by_batch) / calls if calls else 0.0,
                     gsrt=gsrt_aggregate(sims))


def _breakdowns(trajectories: list[Trajectory], sims: list[SimulationMetrics]
                ) -> tuple[dict[str, Breakdown], dict[str, Breakdown]]:
    """The run by domain and by agent."""
    by_domain: dict[str, list[int]] = defaultdict(list)
    by_agent: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(trajectories):
        by_domain[t.domain].append(i)
        by_agent[t.agent].append(i)

    def slice_of(indices: list[int]) -> Breakdown:
        return _breakdown([trajectories[i] for i in indices], [sims[i] for i in indices])

    return ({k: slice_of(v) for k, v in sorted(by_domain.items())},
            {k: slice_of(v) for k, v in sorted(by_agent.items())})


def _pass_hat_k(sims: list[SimulationMetrics], num_trials: int | None) -> dict[int, float]:
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for s in sims:
        outcomes[s.task_id].append(bool(s.success))
    if not outcomes:
        return {}
    max_k = min(len(v) for v in outcomes.values())
    if num_trials is not None:
        max_k = min(max_k, num_trials)
    return {k: sum(pass_hat_k(len(v), sum(v), k) for v in outcomes.values()) / len(outcomes)
            for k in range(1, max_k + 1)}


def _gsrt_notes(trajectories: list[Trajectory], sims: list[SimulationMetrics], judge: Judge | None) -> list[str]:
    """Which simulations the GSRT judge has not judged and why; on a shiftbox run, the judge's shift count beside
    the harness's (the ground truth)."""
    notes = []
    unjudged = [t for t, s in zip(trajectories, sims, strict=True) if not s.gsrt_judged]
    native = [t for t in unjudged if t.source_data is None]
    if unjudged:
        note = (f"GSRT: {len(unjudged)} of {len(trajectories)} simulations have no judge output "
                "(reward_info.info.gsrt_v2), so every GSRT aggregate is undefined (the reference prints -1): "
                "rates and medians are None; `shifts` counts the judged shifts of the other simulations")
        if judge is None:
            note += "; add --judge MODEL to ask the reference's GSRT judge about them"
        else:
            note += (f"; the judge's answer failed or could not be read for {', '.join(t.simulation_id for t in unjudged)}"
                     " (score again, or use another judge model)")
        if native:
            note += f"; the harness recorded {sum(len(t.shifts) for t in native)} shifts in them"
        notes.append(note)
    judged_native = [(t, s) for t, s in zip(trajectories, sims, strict=True) if s.gsrt_judged and t.source_data is None]
    if judged_native:
        notes.append(f"GSRT: on {len(judged_native)} simulations of a shiftbox run the judge located "
                     f"{sum(len(s.gsrt) for _, s in judged_native)} shifts; the harness recorded "
                     f"{sum(len(t.shifts) for t, _ in judged_native)} (its ground truth, which the default mode scores)")
    return notes


def _notes(trajectories: list[Trajectory], tasks: dict[str, Task], sims: list[SimulationMetrics],
           num_trials: int | None, judge: Judge | None) -> list[str]:
    """What the reference would not report, and where these figures come from instead."""
    notes = ["mode agentchangebench: scored with the AgentChangeBench reference rules (see "
             "shiftbox.agentchangebench); TCRR is pooled across simulations by turn number"]
    stored_tsr = sum(stores_tsr_details(t) for t in trajectories)
    if stored_tsr < len(trajectories):
        notes.append(f"TSR: {len(trajectories) - stored_tsr} of {len(trajectories)} simulations store no "
                     "info.tsr_details, so the reference's own aggregate reports -1; TSR here is "
                     "recomputed with the reference's per-simulation rules")
    not_judged = sum(s.tsr.nl_status == "not_judged" for s in sims)
    if not_judged:
        notes.append(f"nl_assertion: {not_judged} simulations have no stored verdicts for their task's "
                     "assertions; the channel is left out of their TSR (no judge is called)")
    notes += _gsrt_notes(trajectories, sims, judge)
    if not trajectories:
        notes.append("GSRT: no simulations, so every GSRT aggregate is undefined (the reference prints -1)")
    no_goals = sorted({t.task_id for t in trajectories if not tasks[t.task_id].goals})
    if no_goals:
        notes.append(f"tasks without goal_shifts (the older task format): {len(no_goals)}; their goals are "
                     "unknown, so their shifts come only from stored judge output")
    unrewarded = sum(stored_reward(t) is None for t in trajectories)
    if unrewarded:
        notes.append(f"pass^k: {unrewarded} of {len(trajectories)} simulations store no reward_info.reward; "
                     "their success is the recomputed TSR within 1e-6 of 1")
    counts: dict[str, int] = defaultdict(int)
    for t in trajectories:
        counts[t.task_id] += 1
    if num_trials is not None and counts and num_trials < min(counts.values()):
        notes.append(f"pass^k: k stops at info.num_trials = {num_trials}, below the fewest trials of any "
                     f"task ({min(counts.values())}); each task's pass^k still uses all its trials")
    old_format = sum("acknowledgment_turn" not in s for t in trajectories
                     for s in judge_shifts(t.source_data) or [])
    if old_format:
        notes.append(f"GSRT: {old_format} shifts come from the older judge format (agent_turn, no "
                     "acknowledgment_turn / tool_turn / outcome_turn); the reference reads no "
                     "acknowledgment from them, so they count as not recovered")
    return notes


def compat_run_metrics(trajectories: list[Trajectory], tasks: dict[str, Task], *, num_trials: int | None = None,
                       judge: Judge | None = None) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """Score trajectories as the AgentChangeBench code does (see the package notes for every rule).

    Stored judge outputs (NL verdicts, GSRT) and stored rewards (success, pass^k) are read from
    `trajectory.source_data`. `judge` answers the reference's GSRT question for simulations without stored
    GSRT output (a shiftbox run); nothing else is judged. `num_trials` is the results file's `info.num_trials`
    (caps k in pass^k; None: no cap beyond the fewest trials of any task).
    """
    missing = sorted({t.task_id for t in trajectories} - set(tasks))
    if missing:
        raise ValueError(f"no task for simulations of {', '.join(missing)}")
    sims = [compat_simulation_metrics(t, tasks[t.task_id], judge) for t in trajectories]
    tue = _pooled_tue(trajectories, 0.0)
    tcrr_calls, by_window, by_batch = pooled_tcrr(trajectories)
    redundant = by_window + by_batch
    by_domain, by_agent = _breakdowns(trajectories, sims)
    run = RunMetrics(
        mode="agentchangebench",
        simulations=len(sims),
        scored_simulations=len(sims),
        tool_calls=tue.calls,
        tsr=TSRAggregate(
            n=len(sims), mean=mean_of_present(s.tsr.score for s in sims),
            communicate_info=mean_of_present(s.tsr.communicate_info for s in sims),
            action=mean_of_present(s.tsr.action for s in sims), nl_assertion=mean_of_present(s.tsr.nl_assertion for s in sims),
            nl_judged=sum(s.tsr.nl_status == "judged" for s in sims)),
        tue=TUEAggregate(calls=tue.calls, t=tue.t, p=tue.p, tue=tue.tue,
                         mean_per_simulation=mean_of_present(s.tue.tue for s in sims)),
        tcrr=TCRRAggregate(calls=tcrr_calls, redundant=redundant, window=by_window, batch=by_batch,
                           pooled=redundant / tcrr_calls if tcrr_calls else 0.0,
                           mean=mean_of_present(s.tcrr.ratio for s in sims)),
        gsrt=gsrt_aggregate(sims),
        success_threshold=1.0,
        pass_hat_k=_pass_hat_k(sims, num_trials),
        by_domain=by_domain,
        by_agent=by_agent,
        notes=_notes(trajectories, tasks, sims, num_trials, judge),
    )
    if judge is not None:
        run.judge = judge_report(judge)
    return run, sims


def rescore_results(path: Path, compat: str | None = None) -> RunMetrics:
    """A recorded results file scored with shiftbox's metrics, or (`compat="agentchangebench"`) as the reference's
    code scores it (`shiftbox rescore`). ValueError naming the fix for a file that cannot be read."""
    if not Path(path).is_file():
        raise ValueError(f"{path} does not exist or is not a file\n  fix: pass a recorded results file, e.g. "
                         "../shared/external/agentchangebench/simulations/banking_test_run.json")
    try:
        results = load_agentchangebench_results(path)
    except ValueError as exc:
        raise ValueError(f"{exc}\n  fix: pass an AgentChangeBench/tau2 results file "
                         "({timestamp, info, tasks[], simulations[]}) with --format agentchangebench") from None
    if compat == "agentchangebench":
        return compat_run_metrics(results.trajectories, results.tasks, num_trials=results.num_trials)[0]
    return compute_run_metrics(results.trajectories, results.tasks)[0]
