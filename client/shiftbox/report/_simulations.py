"""The simulations section: one expandable row per simulation (status, scores, chips), its shift table and
its conversation, with the filter controls."""

from __future__ import annotations

from collections.abc import Sequence

from ..metrics import SimulationMetrics
from ..trajectory import Trajectory
from ._html_text import e, f2, turns
from ._timeline import json_block, message_item, redundant_calls, stage_marks


def _sim_order(sim_id: str, task_id: str, trial: int) -> tuple[str, int, str]:
    return task_id, trial, sim_id


def _shift_table(sm: SimulationMetrics, anchor: str) -> str:
    if not sm.gsrt:
        return ""
    rows = []
    for r in sorted(sm.gsrt, key=lambda r: r.shift_index):
        outcome = (turns(r.outcome) if r.outcome_measured
                   else "met before the shift" if r.outcome_before_shift else "not measured")
        rows.append(f"<tr><td>shift {r.shift_index}: {e(r.from_goal)} \u2192 {e(r.to_goal)}</td>"
                    f'<td><a href="#{anchor}-m{r.message_index}">#{r.message_index}</a></td>'
                    f"<td>{turns(r.ack)}</td><td>{turns(r.tool)}</td><td>{e(outcome)}</td>"
                    f"<td>{'yes' if r.recovered else 'no'}</td><td>{'yes' if r.transferred else 'no'}</td></tr>")
    return ('<div class="scroll"><table class="data"><thead><tr><th>goal shift</th><th>at message</th>'
            "<th>ack (turns)</th><th>tool (turns)</th><th>outcome (turns)</th><th>recovered</th><th>transferred</th>"
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _status(sm: SimulationMetrics | None) -> str:
    if sm is not None and not sm.scored:
        return "unscored"
    if sm is None or sm.success is None:
        return "na"
    return "pass" if sm.success else "fail"


def _simulation(i: int, traj: Trajectory, sm: SimulationMetrics | None, mode: str, show_agent: bool = False) -> str:
    anchor = f"sim-{i}"
    records = {r.call_id: r for r in traj.tool_calls}
    errors = sum(r.is_error for r in traj.tool_calls)
    marks, relative = stage_marks(traj, sm)
    redundant = redundant_calls(traj) if mode == "shiftbox" else {}
    shifts_at: dict[int, list] = {}
    for shift in traj.shifts:  # a stacked request's shifts share one message
        shifts_at.setdefault(shift.message_index, []).append(shift)
    recoveries = {r.shift_index: r for r in (sm.gsrt if sm else [])}
    status = _status(sm)
    label = {"pass": "pass", "fail": "fail", "unscored": "unscored", "na": "n/a"}[status]
    chips = []
    if show_agent:
        chips.append(f'<span class="chip agent">{e(traj.agent)}</span>')
    if sm is not None and sm.tsr.unscored_goals:
        chips.append(f'<span class="chip warn">unscored: {e(", ".join(sm.tsr.unscored_goals))}</span>')
    if sm is not None:
        chips += [f'<span class="chip">TSR {f2(sm.tsr.score)}</span>', f'<span class="chip">TUE {f2(sm.tue.tue)}</span>',
                  f'<span class="chip">TCRR {f2(sm.tcrr.ratio)}</span>']
    chips.append(f'<span class="chip">{len(traj.shifts)} shift{"s" if len(traj.shifts) != 1 else ""}</span>')
    chips.append(f'<span class="chip">{len(traj.tool_calls)} calls</span>')
    if redundant:
        chips.append(f'<span class="chip warn">{len(redundant)} redundant</span>')
    if errors:
        chips.append(f'<span class="chip bad">{errors} error{"s" if errors != 1 else ""}</span>')
    chips.append(f'<span class="chip">{e(traj.termination.reason)}</span>')
    goals = " \u2192 ".join(traj.goals)
    search = " ".join([traj.simulation_id, traj.task_id, traj.persona or "", " ".join(traj.goals),
                       traj.termination.reason, traj.agent, status]).lower()
    messages = "".join(message_item(m, traj, records, redundant, marks, relative, shifts_at, recoveries, anchor)
                       for m in sorted(traj.messages, key=lambda m: m.index))
    setup = ""
    if traj.setup_calls:
        items = "".join(f"<li><code>{e(c.name)}</code>{json_block(c.arguments)}</li>"
                        for c in traj.setup_calls)
        setup = (f"<details><summary>{len(traj.setup_calls)} setup call{'s' if len(traj.setup_calls) != 1 else ''} "
                 f"(before the conversation)</summary><ul>{items}</ul></details>")
    t = traj.termination
    end = (f'<div class="end">ended: <strong>{e(t.reason)}</strong>'
           + (f" ({e(t.detail)})" if t.detail else "") + f" \u00b7 blame: {e(t.blame)} \u00b7 task {e(traj.task_id)}, "
           f"trial {traj.trial}, seed {traj.seed} \u00b7 user {e(traj.user)} \u00b7 agent {e(traj.agent)}</div>")
    return (f'<details class="sim" id="{anchor}" data-sim="{e(traj.simulation_id)}" data-agent="{e(traj.agent)}" '
            f'data-status="{status}" '
            f'data-errors="{errors}" data-shifts="{len(traj.shifts)}" data-search="{e(search)}">'
            f'<summary><span class="pill {status}">{label}</span><span class="sid">{e(traj.simulation_id)}</span>'
            f'<span class="persona">{e(traj.persona or "no persona")}</span><span class="goals">{e(goals)}</span>'
            f'<span class="chips">{"".join(chips)}</span></summary>'
            f'<div class="sim-body">{_shift_table(sm, anchor) if sm else ""}{setup}<ol class="conv">{messages}</ol>{end}'
            "</div></details>")


def simulations(sims: Sequence[SimulationMetrics], trajectories: Sequence[Trajectory], mode: str = "shiftbox") -> str:
    """Every conversation with its own agent's scores: rows are keyed by (agent, simulation id)."""
    by_key = {(s.agent, s.simulation_id): s for s in sims}
    ordered = sorted(trajectories, key=lambda t: (*_sim_order(t.simulation_id, t.task_id, t.trial), t.agent))
    several = len({t.agent for t in ordered}) > 1
    items = "".join(_simulation(i, t, by_key.get((t.agent, t.simulation_id)), mode, several)
                    for i, t in enumerate(ordered, start=1))
    if not ordered:
        items = "<p>No simulations in this run yet.</p>"
    controls = ('<div class="controls"><input id="filter-text" type="search" placeholder="filter: id, persona, goal, '
                'termination\u2026" aria-label="filter simulations">'
                '<select id="filter-status" aria-label="status"><option value="all">all</option>'
                '<option value="pass">passed</option><option value="fail">failed</option>'
                '<option value="errors">with tool errors</option><option value="shifts">with goal shifts</option>'
                '<option value="unscored">not scored</option></select>'
                '<button type="button" id="expand-all">expand all</button>'
                '<button type="button" id="collapse-all">collapse all</button>'
                '<span class="count" id="filter-count"></span></div>')
    legend = ('<p class="legend-line">Click a simulation to open its conversation. '
              '<span class="badge shift">shift n: goal</span> marks the user message that changes the goal; '
              '<span class="badge ack">ack +k</span> <span class="badge tool">tool +k</span> '
              '<span class="badge outcome">outcome +k</span> mark the assistant turn (k turns after the shift) '
              'where each GSRT stage was reached; <span class="badge err">error: kind</span> marks a failed tool '
              'call and <span class="badge redundant">redundant</span> a call TCRR counts as redundant.</p>')
    return (f'<section id="simulations"><h2>Simulations ({len(ordered)})</h2>{controls}{legend}'
            f"<div>{items}</div></section>")
