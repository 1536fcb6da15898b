"""The tables: breakdowns by agent, domain, persona and goal shift; agents side by side; a comparison of two runs."""

from __future__ import annotations

from collections.abc import Mapping

from ..metrics import (
    PASS_K,
    AgentScores,
    Breakdown,
    Comparison,
    GSRTAggregate,
    RunMetrics,
    headline_metrics,
)
from ._html_text import STAGES, e, f3, pct, turns, with_ci
from ._missions import mission_sections
from ._plots import figure
from ._svg import OKABE_ITO, WIDE, Series, line_chart
from ._terminal import agents_caption, comparison_rows, interval_caption, metric_label, usage_text


def _stage_cell(g: GSRTAggregate, stage: str) -> str:
    never = getattr(g, f"never_{stage}")
    share = "" if never is None else f" <small>({pct(never)} never)</small>"
    return f"<td>{turns(getattr(g, f'median_{stage}'))} / {turns(getattr(g, f'p90_{stage}'))}{share}</td>"


def _breakdown_table(title: str, key: str, rows: dict[str, Breakdown]) -> str:
    body = []
    for name in sorted(rows):
        b = rows[name]
        g: GSRTAggregate = b.gsrt
        body.append(f"<tr><td>{e(name)}</td><td>{b.simulations}</td><td>{f3(b.tsr)}</td><td>{f3(b.tue)}</td>"
                    f"<td>{f3(b.tcrr)}</td><td>{g.shifts}</td><td>{pct(g.recovery_rate)}</td>"
                    f"<td>{pct(g.transfer_rate)}</td>" + "".join(_stage_cell(g, s) for s in STAGES) + "</tr>")
    head = ("<tr><th>" + e(key) + "</th><th>sims</th><th>TSR</th><th>TUE</th><th>TCRR</th><th>shifts</th>"
            "<th>recovery</th><th>transfer</th><th>ack</th><th>tool</th><th>outcome</th></tr>")
    return (f'<div><h3>{e(title)}</h3><div class="scroll"><table class="data wraps"><thead>{head}</thead>'
            f'<tbody>{"".join(body)}</tbody></table></div></div>')


def breakdowns(m: RunMetrics) -> str:
    parts = ['<p class="legend-line">TSR: mean over scored simulations; TUE, TCRR: pooled over calls (as in the '
             "headline); ack / tool / outcome: median / p90 agent turns after the shift, never-reached stages "
             "counting as infinitely late, with the share never reached.</p>"]
    if m.by_agent:  # compat mode scores a file of several agents at once
        parts.append(_breakdown_table("by agent", "agent", m.by_agent))
    parts += [_breakdown_table("by domain", "domain", m.by_domain),
              _breakdown_table("by persona", "persona", m.by_persona),
              _breakdown_table("by goal shift", "from \u2192 to",
                               {k.replace("->", " \u2192 "): v for k, v in m.by_goal_pair.items()})]
    if m.by_domain_crossing:  # cross-domain conversations: shifts to another domain's goal, or within one
        parts.append(_breakdown_table("by domain crossing", "shift", m.by_domain_crossing))
    parts.append(mission_sections(m.paths))
    return f'<div class="tables">{"".join(parts)}</div>'


def agents_overview(scores: Mapping[str, AgentScores]) -> str:
    """Several agents side by side: each one's own headline figures with their intervals."""
    rows = []
    metrics = headline_metrics()
    for name, s in scores.items():
        m, ci = s.metrics, s.metrics.intervals
        rows.append(f"<tr><td>{e(name)}</td><td>{m.scored_simulations}</td>"
                    + "".join(f"<td>{with_ci(metric.run_value(m), ci.get(metric.key))}</td>" for metric in metrics)
                    + f"<td>{with_ci(m.pass_hat_k.get(1), ci.get(f'{PASS_K}1'))}</td><td>{m.tsr.unscored}</td>"
                    + "".join(_stage_cell(m.gsrt, st) for st in STAGES) + "</tr>")
    head = ("<tr><th>agent</th><th>sims</th>" + "".join(f"<th>{e(metric.label)}</th>" for metric in metrics)
            + f"<th>{PASS_K}1</th><th>unscored</th><th>ack</th><th>tool</th><th>outcome</th></tr>")
    return ('<div class="scroll"><table class="data wraps" id="agents-table"><thead>' + head + "</thead><tbody>"
            + "".join(rows) + "</tbody></table></div>"
            '<p class="legend-line">Each agent scored on its own conversations; [low, high]: 95% bootstrap interval '
            "over tasks; ack / tool / outcome: median / p90 turns. Compare two runs with "
            "<code>shiftbox compare RUN_A RUN_B</code> for paired differences.</p>"
            + "".join(f'<p class="legend-line">{e(line)}</p>' for line in _overview_notes(scores)))


def _overview_notes(scores: Mapping[str, AgentScores]) -> list[str]:
    """Below the agents table: the agents whose figures have no interval, and each agent's LLM tokens and cost."""
    gaps = agents_caption([s.metrics for s in scores.values()])
    return ([gaps] if gaps else []) + [f"LLM use \u00b7 {name}: {usage_text(s.metrics.usage)}"
                                       for name, s in scores.items()]


def comparison_section(c: Comparison) -> str:
    """`shiftbox compare`: each metric of A and B and the difference B - A with its paired interval."""
    rows = []
    shown, curve = comparison_rows(c)
    for d in shown:
        ci = "\u2013" if d.interval is None else f"[{d.interval.low:+.3f}, {d.interval.high:+.3f}]"
        diff = "\u2013" if d.difference is None else f"{d.difference:+.3f}"
        zero = d.interval is not None and d.interval.low <= 0 <= d.interval.high
        rows.append(f'<tr data-metric="{e(d.metric)}"><td>{e(metric_label(d.metric))}</td><td>{f3(d.a)}</td>'
                    f"<td>{f3(d.b)}</td><td>{diff}</td><td>{ci}</td>"
                    f"<td>{'no' if zero or d.interval is None else 'yes'}</td></tr>")
    unpaired = f"; unpaired: A {c.unpaired_a}, B {c.unpaired_b}" if c.unpaired_a or c.unpaired_b else ""
    warnings = ('<ul class="warnings" id="comparison-warnings">'
                + "".join(f"<li>warning: {e(w)}</li>" for w in c.warnings) + "</ul>") if c.warnings else ""
    return (f'<section id="comparison"><h2>Comparison \u00b7 A = {e(c.a)} \u00b7 B = {e(c.b)}</h2>{warnings}'
            '<div class="scroll"><table class="data" id="comparison-table"><thead><tr><th>metric</th><th>A</th>'
            "<th>B</th><th>B \u2212 A</th><th>95% CI</th><th>differs</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>"
            f'<p class="legend-line">{c.paired_simulations} simulations paired by (task, trial) over {c.tasks} tasks'
            f"{e(unpaired)}; {e(interval_caption(c.tasks, c.bootstrap.get('resamples'), c.bootstrap.get('seed'), True))}"
            "; \u201cdiffers\u201d: the interval excludes 0"
            f"{'; pass^k at a few k here, at every k in the curve' if len(shown) < len(c.differences) else ''}."
            f'</p><p class="legend-line">LLM use \u00b7 A: {e(usage_text(c.usage_a))} \u00b7 B: '
            f"{e(usage_text(c.usage_b))}</p>{_pass_k_curve(c, curve)}</section>\n")


def _pass_k_curve(c: Comparison, curve: list[tuple[int, float | None, float | None]]) -> str:
    """pass^k of A and B over every k: how reliability falls as a task must succeed k times in a row."""
    if not curve:
        return ""
    ks = [k for k, _, _ in curve]
    series = [Series(f"A = {c.a}", OKABE_ITO["blue"], [a for _, a, _ in curve]),
              Series(f"B = {c.b}", OKABE_ITO["orange"], [b for _, _, b in curve])]
    svg = line_chart("plot-pass-k-curve", "pass^k by k", ks, series, y_label="pass^k", x_label="k",
                     width=WIDE, description="pass^k of run A and run B at every k")
    return '<div class="plots">' + figure(svg, e(f"pass^k for k = 1\u2026{ks[-1]}: the chance that all k trials of "
                                                 "a task succeed, averaged over tasks."), wide=True) + "</div>"
