"""The self-contained HTML report: headline figures, inline SVG plots, every trajectory, provenance.

One file, nothing fetched: inline CSS, inline SVG drawn here, a little vanilla JS (filtering and
expand/collapse; the page works without it) and a Content-Security-Policy that forbids any network
load. Every piece of text from trajectories is escaped. Output is a pure function of the run: same
run directory, byte-identical HTML (everything sorted, no timestamps, no timings).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import escape_lone_surrogates

from ..metrics import (
    BATCH,
    AgentScores,
    Breakdown,
    Comparison,
    GSRTAggregate,
    Interval,
    RunMetrics,
    ShiftRecovery,
    SimulationMetrics,
    Turns,
    aggregate,
    aggregate_gsrt,
    redundancy_labels,
)
from ..trajectory import Message, ToolCallRecord, Trajectory
from . import _svg
from ._svg import OKABE_ITO, Series
from ._terminal import with_interval

STAGES = ("ack", "tool", "outcome")
STAGE_COLORS = {"ack": OKABE_ITO["blue"], "tool": OKABE_ITO["orange"], "outcome": OKABE_ITO["green"]}
STAGE_NAMES = {"ack": "acknowledgment", "tool": "first relevant tool", "outcome": "outcome"}


def e(text: object) -> str:
    return escape("" if text is None else str(text), quote=True)


def f3(value: float | None) -> str:
    return "\u2013" if value is None else f"{value:.3f}"


def f2(value: float | None) -> str:
    return "\u2013" if value is None else f"{value:.2f}"


def pct(value: float | None) -> str:
    return "\u2013" if value is None else f"{100 * value:.0f}%"


def turns(value: Turns) -> str:
    return "\u2013" if value is None else value if isinstance(value, str) else f"{value:g}"


def with_ci(value: float | None, interval: Interval | None) -> str:
    """A figure with its 95% bootstrap interval over tasks."""
    return with_interval(value, interval, f3)


def _sim_order(sim_id: str, task_id: str, trial: int) -> tuple[str, int, str]:
    return task_id, trial, sim_id


# --------------------------------------------------------------------------------------------- CSS/JS

CSS = """
:root{--ink:#1f2328;--muted:#59636e;--line:#d8dee4;--bg:#f6f7f9;--card:#fff;
--ack:#0072B2;--ack-bg:#dcebf6;--tool:#9a6700;--tool-bar:#E69F00;--tool-bg:#fdf0cf;--outcome:#00795a;
--outcome-bg:#d4f0e6;--shift:#6b5d00;--shift-bg:#fbf4b8;--err:#b34700;--err-bg:#fde6d8;--user:#0072B2;
--assistant:#009E73;--toolmsg:#8c959f;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
*{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--ink);
background:var(--bg);font-size:15px;line-height:1.45}
body{margin:0}
.wrap{max-width:1240px;margin:0 auto;padding:0 24px}
header.top{background:#1f2937;color:#f3f4f6;padding:20px 0 16px}
header.top h1{margin:0;font-size:24px;font-weight:650;letter-spacing:.2px}
header.top .subtitle{margin-top:4px;color:#cbd5e1;font-size:14px}
header.top nav{margin-top:10px;display:flex;gap:16px;font-size:14px}
header.top nav a{color:#93c5fd;text-decoration:none}
header.top nav a:hover{text-decoration:underline}
section{margin:28px 0}
h2{font-size:19px;margin:0 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:0 0 6px;text-transform:uppercase;letter-spacing:.5px;color:var(--muted);font-weight:600}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px}
.card .big{font-size:30px;font-weight:650;line-height:1.1;font-variant-numeric:tabular-nums}
.card .big small{font-size:14px;font-weight:500;color:var(--muted);margin-left:6px}
.card .sub{color:var(--muted);font-size:13px;margin:2px 0 8px}
.card dl{display:grid;grid-template-columns:auto 1fr;gap:2px 12px;margin:0;font-size:13.5px}
.card dt{color:var(--muted)}
.card dd{margin:0;text-align:right;font-variant-numeric:tabular-nums}
.card table{width:100%;font-size:13.5px}
.card table.data th,.card table.data td{padding:3px 6px}
.notes{margin:12px 0 0;padding:10px 14px;background:#fff8e1;border:1px solid #f0d98c;border-radius:8px;
font-size:13.5px}
.notes ul{margin:4px 0 0;padding-left:20px}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:14px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:12px 12px 10px}
figure svg{width:100%;height:auto;display:block;max-width:760px;margin:0 auto}
figure.wide svg{max-width:1400px}
figure.wide{grid-column:1/-1}
figcaption{font-size:13px;color:var(--muted);margin-top:6px}
table.data{border-collapse:collapse;width:100%;background:var(--card);font-size:13.5px;
font-variant-numeric:tabular-nums}
table.data th,table.data td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
table.data th:first-child,table.data td:first-child{text-align:left}
table.data thead th{background:#eef1f4;font-weight:600;color:#353c44}
.tables{display:grid;gap:18px}
.tables h3{margin-bottom:4px}
.tables>*{min-width:0}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:8px}
.scroll table.data tr:last-child td{border-bottom:0}
.controls{display:none;gap:10px;align-items:center;flex-wrap:wrap;margin-bottom:10px}
html.js .controls{display:flex}
.controls input,.controls select,.controls button{font:inherit;font-size:14px;padding:5px 9px;
border:1px solid #b7c0ca;border-radius:6px;background:#fff;color:var(--ink)}
.controls input{min-width:340px}
.controls button{cursor:pointer}
.controls button:hover{background:#eef1f4}
.controls .count{color:var(--muted);font-size:13.5px}
.legend-line{font-size:13px;color:var(--muted);margin:0 0 10px}
details.sim{background:var(--card);border:1px solid var(--line);border-radius:8px;margin-bottom:6px}
details.sim[hidden]{display:none}
details.sim>summary{list-style:none;cursor:pointer;padding:8px 12px;display:grid;
grid-template-columns:16px 74px minmax(150px,190px) minmax(80px,110px) 1fr auto;gap:10px;align-items:center}
details.sim>summary::-webkit-details-marker{display:none}
details.sim>summary::before{content:"\\25B8";color:var(--muted);transition:transform .1s}
details.sim[open]>summary::before{transform:rotate(90deg)}
details.sim>summary:hover{background:#f3f5f8}
details.sim[open]>summary{border-bottom:1px solid var(--line)}
.sid{font-family:var(--mono);font-size:13.5px;font-weight:600}
.persona{color:var(--muted);font-size:13.5px}
.goals{font-size:13.5px}
.chips{display:flex;gap:6px;flex-wrap:wrap;justify-content:flex-end}
.chip{font-size:12px;padding:1px 7px;border-radius:10px;background:#eef1f4;color:#353c44;white-space:nowrap;
font-variant-numeric:tabular-nums}
.chip.bad{background:var(--err-bg);color:var(--err)}
.pill{font-size:12px;font-weight:650;text-align:center;padding:2px 0;border-radius:10px;text-transform:uppercase;
letter-spacing:.4px}
.pill.pass{background:#d4f0e6;color:#00664c}
.pill.fail{background:var(--err-bg);color:var(--err)}
.pill.unscored,.pill.na{background:#eceff2;color:var(--muted)}
.sim-body{padding:10px 14px 14px}
.sim-body table.data{margin-bottom:12px}
.conv{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:8px}
.msg{border:1px solid var(--line);border-left:4px solid var(--toolmsg);border-radius:6px;padding:7px 10px;
background:#fff}
.msg.user{border-left-color:var(--user);background:#f5f9fd}
.msg.assistant{border-left-color:var(--assistant)}
.msg.tool{background:#fafbfc;margin-left:28px}
.msg.shift{background:var(--shift-bg);border-color:#d9c94a;border-left-color:#b8a200}
.msg.staged{box-shadow:0 0 0 2px #c9d8e6}
.msg.error{background:var(--err-bg);border-color:#f0b799;border-left-color:var(--err)}
.meta{display:flex;gap:8px;align-items:center;flex-wrap:wrap;font-size:12.5px;color:var(--muted);margin-bottom:3px}
.role{font-weight:700;text-transform:uppercase;letter-spacing:.5px;font-size:11.5px;color:var(--ink)}
.idx{font-family:var(--mono)}
.rel{font-family:var(--mono);color:#7a8591}
.text{white-space:pre-wrap;word-break:break-word}
.badge{display:inline-block;font-size:12px;font-weight:650;padding:1px 8px;border-radius:10px;border:1px solid}
.badge.shift{background:#f0e442;color:#3d3500;border-color:#b8a200}
.badge.ack{background:var(--ack-bg);color:var(--ack);border-color:#8fbfe0}
.badge.tool{background:var(--tool-bg);color:var(--tool);border-color:#e7c26b}
.badge.outcome{background:var(--outcome-bg);color:var(--outcome);border-color:#87d1b8}
.badge.err{background:var(--err);color:#fff;border-color:var(--err)}
.badge.redundant{background:#f7e1ee;color:#8a2f68;border-color:#dca6c6}
.chip.warn{background:#f7e1ee;color:#8a2f68}
.badge.never{background:#eceff2;color:var(--muted);border-color:#cfd6dd;font-weight:500}
.calls{margin-top:6px;display:flex;flex-direction:column;gap:6px}
.call{border:1px dashed #b7c0ca;border-radius:6px;padding:5px 8px;background:#fbfcfd}
.call.error{border-color:var(--err);background:#fff5ef}
.call code,.msg.tool .meta code{font-family:var(--mono);font-size:13px;font-weight:600;color:var(--ink)}
pre{font-family:var(--mono);font-size:12.5px;margin:4px 0 0;white-space:pre-wrap;word-break:break-word;
max-height:18em;overflow:auto;background:#f3f5f7;border-radius:4px;padding:5px 7px}
.msg.error pre{background:#fff5ef}
pre.inline{display:block;max-height:none}
.end{margin-top:8px;font-size:13px;color:var(--muted)}
footer{margin:36px 0 0;padding:18px 0 30px;border-top:1px solid var(--line);color:var(--muted);font-size:13px}
footer table.data{font-size:12.5px}
footer code,.hash{font-family:var(--mono);font-size:12px;word-break:break-all}
footer p{margin:4px 0}
footer table.data th,footer table.data td{text-align:left}
footer h2{color:var(--ink)}
dl.config{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0 12px}
dl.config dt{color:var(--muted)}
dl.config dd{margin:0;color:var(--ink)}
@media (max-width:900px){details.sim>summary{grid-template-columns:16px 70px 1fr;}
details.sim>summary .goals,details.sim>summary .chips{grid-column:2/-1;justify-content:flex-start}}
"""

HEAD_JS = (
    "document.documentElement.classList.add('js');window.__reportErrors=[];"
    "function __reportError(m){window.__reportErrors.push(String(m));"
    "document.documentElement.setAttribute('data-report-errors',window.__reportErrors.join(' | '));}"
    "window.addEventListener('error',function(ev){__reportError(ev.message||'error');});"
    "document.addEventListener('securitypolicyviolation',function(ev){"
    "__reportError('blocked by CSP: '+ev.violatedDirective+' '+ev.blockedURI);});"
)

BODY_JS = """
(function(){
  var sims=Array.prototype.slice.call(document.querySelectorAll('details.sim'));
  var text=document.getElementById('filter-text'),status=document.getElementById('filter-status');
  var count=document.getElementById('filter-count');
  function apply(){
    var q=text.value.trim().toLowerCase(),s=status.value,shown=0;
    sims.forEach(function(d){
      var ok=(!q||d.getAttribute('data-search').indexOf(q)>=0)&&
        (s==='all'||(s==='errors'?d.getAttribute('data-errors')!=='0':
         s==='shifts'?d.getAttribute('data-shifts')!=='0':d.getAttribute('data-status')===s));
      d.hidden=!ok;if(ok){shown++;}
    });
    count.textContent=shown+' of '+sims.length+' simulations shown';
  }
  function openHash(){
    var id=decodeURIComponent(location.hash.slice(1)),el=id&&document.getElementById(id);
    if(el&&el.tagName==='DETAILS'){el.hidden=false;el.open=true;}
  }
  text.addEventListener('input',apply);status.addEventListener('change',apply);
  document.getElementById('expand-all').addEventListener('click',function(){
    sims.forEach(function(d){if(!d.hidden){d.open=true;}});});
  document.getElementById('collapse-all').addEventListener('click',function(){
    sims.forEach(function(d){d.open=false;});});
  window.addEventListener('hashchange',openHash);
  apply();openHash();
  document.documentElement.setAttribute('data-report-ready','1');
})();
"""

CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "font-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'")


# --------------------------------------------------------------------------------------------- pieces

def _dl(rows: Iterable[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _card(title: str, big: str, sub: str, body: str = "", big_note: str = "") -> str:
    note = f"<small>{e(big_note)}</small>" if big_note else ""
    return (f'<div class="card"><h3>{e(title)}</h3><div class="big">{e(big)}{note}</div>'
            f'<div class="sub">{sub}</div>{body}</div>')


def _scored(sims: Sequence[SimulationMetrics]) -> list[SimulationMetrics]:
    return [s for s in sims if s.scored]


def headline(m: RunMetrics, sims: Sequence[SimulationMetrics]) -> str:
    """The headline cards of one agent, each figure with its 95% bootstrap interval over tasks."""
    scored = _scored(sims)
    recoveries = [r for s in scored for r in s.gsrt]
    n_shifts = len(recoveries)
    recovered = sum(r.recovered for r in recoveries)
    transferred = sum(r.transferred for r in recoveries)
    excluded = ", ".join(f"{k} {v}" for k, v in sorted(m.excluded.items())) or "none"
    tasks = len({s.task_id for s in sims})
    ci = m.intervals
    cards = [
        _card("Simulations", str(m.simulations), f"{m.scored_simulations} scored \u00b7 {tasks} tasks",
              _dl([("not scored", e(excluded)), ("tool calls (scored)", str(m.tool_calls)),
                   ("successes", f"{sum(bool(s.success) for s in scored)} / {len(scored)}"),
                   ("unscored (a goal nothing measured)", str(m.tsr.unscored)),
                   ("rerun agreement", f"{f3(m.rerun_agreement)} ({m.rerun_agreement_n} tasks with 2+ trials)")])),
    ]
    tsr_rows = [("95% CI", with_ci(m.tsr.mean, ci.get("tsr"))), ("communicate_info", f3(m.tsr.communicate_info)),
                ("action", f3(m.tsr.action)), ("nl_assertion", f"{f3(m.tsr.nl_assertion)} ({m.tsr.nl_judged} judged)")]
    if m.tsr.state_match_n:
        tsr_rows.append(("state match", f"{f3(m.tsr.state_match)} (n={m.tsr.state_match_n})"))
    unscored = f" \u00b7 {m.tsr.unscored} unscored" if m.tsr.unscored else ""
    cards.append(_card("TSR \u00b7 task success", f3(m.tsr.mean), f"mean over n={m.tsr.n} scored simulations{unscored}",
                       _dl(tsr_rows)))
    cards.append(_card("TUE \u00b7 tool-use efficiency", f3(m.tue.tue), f"0.6\u00b7T + 0.4\u00b7P pooled over "
                       f"{m.tue.calls} calls",
                       _dl([("95% CI", with_ci(m.tue.tue, ci.get("tue"))), ("T (executed without error)", f3(m.tue.t)),
                            ("P (schema-valid arguments)", f3(m.tue.p)),
                            ("mean per simulation", f3(m.tue.mean_per_simulation))])))
    tcrr_rows = [("95% CI", with_ci(m.tcrr.pooled, ci.get("tcrr"))),
                 ("redundant / calls", f"{m.tcrr.redundant} / {m.tcrr.calls}"),
                 ("by window rule", str(m.tcrr.window)), ("by batch rule only", str(m.tcrr.batch)),
                 ("mean per simulation", f3(m.tcrr.mean))]
    if m.tcrr.state_aware_pooled is not None:
        tcrr_rows.append(("state-aware (pooled)", f3(m.tcrr.state_aware_pooled)))
    cards.append(_card("TCRR \u00b7 redundant calls", f3(m.tcrr.pooled), "pooled over scored calls (lower is better)",
                       _dl(tcrr_rows)))
    g = m.gsrt
    cards.append(_card("Goal-shift recovery", pct(g.recovery_rate), f"{recovered} of {g.shifts} shifts recovered",
                       _dl([("95% CI", with_ci(g.recovery_rate, ci.get("recovery"))),
                            ("transferred to a human", f"{pct(g.transfer_rate)} ({transferred}/{n_shifts})"),
                            ("never acknowledged", pct(g.never_ack)), ("never a relevant tool", pct(g.never_tool)),
                            ("outcome never reached", pct(g.never_outcome)),
                            ("outcome not measured", f"{g.outcome_not_measured} shifts")])))
    stage_rows = "".join(f"<tr><td>{e(STAGE_NAMES[s])}</td><td>{turns(getattr(g, f'median_{s}'))}</td>"
                         f"<td>{turns(getattr(g, f'p90_{s}'))}</td><td>{pct(getattr(g, f'never_{s}'))}</td></tr>"
                         for s in STAGES)
    cards.append(_card("GSRT \u00b7 agent turns", turns(g.median_ack), "median turns to acknowledge a shift "
                       "(never-reached stages count as infinitely late)",
                       '<table class="data"><thead><tr><th>stage</th><th>median</th><th>p90</th><th>never</th></tr>'
                       f"</thead><tbody>{stage_rows}</tbody></table>", big_note="turns"))
    if m.pass_hat_k:
        ks = sorted(m.pass_hat_k)
        rows = "".join(f"<tr><td>k={k}</td><td>{with_ci(m.pass_hat_k.get(k), ci.get(f'pass^{k}'))}</td>"
                       f"<td>{f3(m.pass_at_k.get(k))}</td><td>{f3(m.avg_at_k.get(k))}</td></tr>" for k in ks)
        cards.append(_card("pass^k \u00b7 reliability", f3(m.pass_hat_k[ks[-1]]),
                           f"k={ks[-1]}; success = TSR \u2265 {m.success_threshold:g}",
                           '<table class="data"><thead><tr><th>k</th><th>pass^k [95% CI]</th><th>pass@k</th>'
                           f"<th>avg@k</th></tr></thead><tbody>{rows}</tbody></table>"))
    notes = ""
    if m.notes:
        notes = ('<div class="notes"><strong>Not measured</strong><ul>'
                 + "".join(f"<li>{e(n)}</li>" for n in m.notes) + "</ul></div>")
    boot = m.bootstrap
    method = (f'<p class="legend-line">95% CI: percentile bootstrap over {boot.get("tasks", 0)} tasks '
              f'({boot["resamples"]} resamples, seed {boot["seed"]}).</p>' if boot else "")
    return f'<div class="cards">{"".join(cards)}</div>{method}{notes}'


def _gsrt_plot(plot_id: str, title: str, x_label: str, rows: dict[str, Breakdown], width: int = _svg.WIDTH) -> str:
    cats = list(rows)
    series = []
    for stage in STAGES:
        med = [_plot_turns(getattr(rows[c].gsrt, f"median_{stage}")) for c in cats]
        p90 = [_plot_turns(getattr(rows[c].gsrt, f"p90_{stage}")) for c in cats]
        tips = [f"{c} \u00b7 {STAGE_NAMES[stage]}: median {turns(getattr(rows[c].gsrt, f'median_{stage}'))}, "
                f"p90 {turns(getattr(rows[c].gsrt, f'p90_{stage}'))} turns, never reached "
                f"{pct(getattr(rows[c].gsrt, f'never_{stage}'))} ({rows[c].gsrt.shifts} shifts)" for c in cats]
        series.append(Series(stage, STAGE_COLORS[stage], med, p90, tips))
    return _svg.grouped_bar_chart(
        plot_id, title, cats, series, y_label="agent turns after the shift", x_label=x_label,
        sublabels=[f"{rows[c].gsrt.shifts} shifts" for c in cats], whisker_label="p90", integer=True,
        missing_label="never", value_fmt=_svg.fmt_count, width=width, description=f"{title}: median agent turns to acknowledgment, first relevant tool "
        "and outcome, with the 90th percentile as a whisker")


def _plot_turns(value: Turns) -> float | None:
    """A bar's height: "never" has none (the chart labels it), like a stage with no shifts."""
    return value if isinstance(value, float | int) else None


TOP_GOAL_PAIRS = 8
"""The goal-shift plot shows the most frequent pairs; the rest share one bar."""


def goal_pair_rows(m: RunMetrics, sims: Sequence[SimulationMetrics], top: int = TOP_GOAL_PAIRS) -> dict[str, Breakdown]:
    """The `top` most frequent (from -> to) goal pairs by shifts, then the others grouped in one bar."""
    ranked = sorted(m.by_goal_pair, key=lambda k: (-m.by_goal_pair[k].gsrt.shifts, k))
    rows = {k.replace("_", " ").replace("->", " \u2192 "): m.by_goal_pair[k] for k in ranked[:top]}
    rest = set(ranked[top:])
    if rest:
        recoveries = [r for s in _scored(sims) for r in s.gsrt if f"{r.from_goal}->{r.to_goal}" in rest]
        rows[f"other ({len(rest)} pairs)"] = Breakdown(simulations=len({s.simulation_id for s in _scored(sims)}),
                                                       tsr=None, tue=None, tcrr=None, gsrt=aggregate_gsrt(recoveries))
    return rows


def _figure(svg: str, caption: str, wide: bool = False) -> str:
    cls = ' class="wide"' if wide else ""
    return f"<figure{cls}>{svg}<figcaption>{caption}</figcaption></figure>"


GSRT_CAPTION = ("Bars: median agent turns from the shift message to acknowledgment (ack), the first relevant tool "
                "call (tool) and the new goal's outcome; whisker: p90. The first assistant message after the shift "
                "is turn 1; a stage never reached counts as infinitely late, so a median or p90 that lands there "
                "reads \u201cnever\u201d (no bar).")


def agent_rows(scores: Mapping[str, AgentScores]) -> dict[str, Breakdown]:
    """Each agent's own headline figures as one breakdown row."""
    return {a: Breakdown(simulations=s.metrics.scored_simulations, tsr=s.metrics.tsr.mean, tue=s.metrics.tue.tue,
                         tcrr=s.metrics.tcrr.pooled, gsrt=s.metrics.gsrt) for a, s in scores.items()}


def plots(m: RunMetrics, sims: Sequence[SimulationMetrics], by_agent: dict[str, Breakdown] | None = None,
          suffix: str = "") -> str:
    """One agent's plots (`suffix` keeps plot ids unique when a report holds several agents)."""
    scored = _scored(sims)
    personas = sorted(m.by_persona)
    figs = [_figure(_svg.bar_chart(
        f"plot-tsr-persona{suffix}", "TSR by persona", personas, [m.by_persona[p].tsr for p in personas],
        y_label="mean TSR", x_label="persona", y_max=1.0, sublabels=[f"n={m.by_persona[p].simulations}"
                                                                      for p in personas],
        tooltips=[f"{p}: TSR {f3(m.by_persona[p].tsr)} over {m.by_persona[p].simulations} simulations"
                  for p in personas], width=_svg.WIDE, description="mean task success rate per user persona"),
        e(f"Mean TSR (partial credit, 0\u20131) of the scored simulations of each persona; overall {f3(m.tsr.mean)}."),
        wide=True)]
    figs.append(_figure(_gsrt_plot(f"plot-gsrt-domain{suffix}", "GSRT stages by domain", "domain", m.by_domain),
                        e(GSRT_CAPTION)))
    if by_agent is not None:
        figs.append(_figure(_gsrt_plot(f"plot-gsrt-agent{suffix}", "GSRT stages by agent", "agent", by_agent),
                            e(GSRT_CAPTION)))
    pairs = goal_pair_rows(m, sims)
    figs.append(_figure(_gsrt_plot(f"plot-gsrt-goal-pair{suffix}", "GSRT stages by goal shift",
                                   "goal shift (previous \u2192 new goal)", pairs, width=_svg.WIDE),
                        e(f"The same stages for the {min(TOP_GOAL_PAIRS, len(m.by_goal_pair))} most frequent kinds "
                          f"of shift (previous goal \u2192 new goal) of {len(m.by_goal_pair)}, the rest grouped; "
                          "every pair is in the breakdown table."), wide=True))
    tcrr = [s.tcrr.ratio for s in scored if s.tcrr.ratio is not None]
    no_calls = len(scored) - len(tcrr)
    figs.append(_figure(_svg.histogram(
        f"plot-tcrr-hist{suffix}", "TCRR distribution", tcrr, x_label="TCRR per simulation (redundant / calls)",
        mean=sum(tcrr) / len(tcrr) if tcrr else None, color=OKABE_ITO["vermillion"],
        description="histogram of per-simulation redundant-call ratios"),
        e(f"{len(tcrr)} scored simulations in bins of 0.1 (the last includes 1); dashed: mean"
          + (f"; {no_calls} without tool calls not shown" if no_calls else "") + ".")))
    tue = [s.tue.tue for s in scored if s.tue.tue is not None]
    figs.append(_figure(_svg.histogram(
        f"plot-tue-hist{suffix}", "TUE distribution", tue, x_label="TUE per simulation (0.6\u00b7T + 0.4\u00b7P)",
        mean=sum(tue) / len(tue) if tue else None, color=OKABE_ITO["sky"],
        description="histogram of per-simulation tool-use efficiency"),
        e(f"{len(tue)} scored simulations in bins of 0.1 (the last includes 1); dashed: mean"
          + (f"; {len(scored) - len(tue)} without a TUE not shown" if len(tue) < len(scored) else "") + ".")))
    return f'<div class="plots">{"".join(figs)}</div>'


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
    return (f'<div><h3>{e(title)}</h3><div class="scroll"><table class="data"><thead>{head}</thead>'
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
    return f'<div class="tables">{"".join(parts)}</div>'


def agents_overview(scores: Mapping[str, AgentScores]) -> str:
    """Several agents side by side: each one's own headline figures with their intervals."""
    rows = []
    for name, s in scores.items():
        m, ci = s.metrics, s.metrics.intervals
        rows.append(f"<tr><td>{e(name)}</td><td>{m.scored_simulations}</td>"
                    f"<td>{with_ci(m.tsr.mean, ci.get('tsr'))}</td><td>{with_ci(m.tue.tue, ci.get('tue'))}</td>"
                    f"<td>{with_ci(m.tcrr.pooled, ci.get('tcrr'))}</td>"
                    f"<td>{with_ci(m.gsrt.recovery_rate, ci.get('recovery'))}</td>"
                    f"<td>{with_ci(m.pass_hat_k.get(1), ci.get('pass^1'))}</td><td>{m.tsr.unscored}</td>"
                    + "".join(_stage_cell(m.gsrt, st) for st in STAGES) + "</tr>")
    head = ("<tr><th>agent</th><th>sims</th><th>TSR</th><th>TUE</th><th>TCRR</th><th>recovery</th><th>pass^1</th>"
            "<th>unscored</th><th>ack</th><th>tool</th><th>outcome</th></tr>")
    return ('<div class="scroll"><table class="data" id="agents-table"><thead>' + head + "</thead><tbody>"
            + "".join(rows) + "</tbody></table></div>"
            '<p class="legend-line">Each agent scored on its own conversations; [low, high]: 95% bootstrap interval '
            "over tasks; ack / tool / outcome: median / p90 turns. Compare two runs with "
            "<code>shiftbox compare RUN_A RUN_B</code> for paired differences.</p>")


# --------------------------------------------------------------------------------------------- trajectories

def _pretty(value: Any) -> str:
    """JSON for arguments/results; a string holding JSON is pretty-printed too."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
        if not isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _json_block(value: Any) -> str:
    """Short JSON on one line (`code`), longer JSON pretty-printed in a scrolling block."""
    compact = value
    if isinstance(value, str):
        try:
            compact = json.loads(value)
        except ValueError:
            return f"<pre>{e(value)}</pre>"
    one_line = json.dumps(compact, ensure_ascii=False, sort_keys=True, default=str)
    if len(one_line) <= 110:
        return f'<pre class="inline">{e(one_line)}</pre>'
    return f"<pre>{e(_pretty(value))}</pre>"


def redundant_calls(traj: Trajectory) -> dict[str, str]:
    """call id -> "repeat" | "batch" for the calls TCRR counts as redundant (shiftbox definitions)."""
    return {call_id: "batch" if why == "batch" else "repeat" for call_id, why in redundancy_labels(traj).items()}


def _stage_marks(traj: Trajectory, sm: SimulationMetrics | None
                 ) -> tuple[dict[int, list[tuple[str, int, int]]], dict[int, tuple[int, int]]]:
    """message index -> [(stage, shift index, turn)] for stage badges; and -> (shift, turn) for every turn."""
    shifts = sorted(traj.shifts, key=lambda s: s.message_index)
    assistants = [m for m in traj.messages if m.role == "assistant"]
    recoveries = {r.shift_index: r for r in (sm.gsrt if sm else [])}
    marks: dict[int, list[tuple[str, int, int]]] = {}
    relative: dict[int, tuple[int, int]] = {}
    for i, shift in enumerate(shifts):
        end = shifts[i + 1].message_index if i + 1 < len(shifts) else len(traj.messages)
        window = [m for m in assistants if shift.message_index < m.index < end]
        for k, m in enumerate(window, start=1):
            relative[m.index] = (shift.shift_index, k)
        r = recoveries.get(shift.shift_index)
        if r is None:
            continue
        for stage in STAGES:
            k = getattr(r, stage)
            if k is not None and 1 <= k <= len(window):
                marks.setdefault(window[k - 1].index, []).append((stage, shift.shift_index, k))
    return marks, relative


def _stage_badges(r: ShiftRecovery | None) -> str:
    if r is None:
        return ""
    out = []
    for stage in STAGES:
        k = getattr(r, stage)
        if stage == "outcome" and not r.outcome_measured:
            out.append('<span class="badge never">outcome not measured</span>')
        elif k is None:
            out.append(f'<span class="badge never">{stage}: never</span>')
    if r.transferred:
        out.append('<span class="badge err">transferred</span>')
    return "".join(out)


def _message(msg: Message, traj: Trajectory, records: dict[str, ToolCallRecord], redundant: dict[str, str],
             marks: dict[int, list[tuple[str, int, int]]], relative: dict[int, tuple[int, int]],
             shifts_at: dict[int, Any], recoveries: dict[int, ShiftRecovery], anchor: str) -> str:
    classes = ["msg", msg.role]
    meta = [f'<span class="role">{e(msg.role)}</span><span class="idx">#{msg.index}</span>']
    body = ""
    if msg.role == "user":
        if msg.goal:
            meta.append(f'<span class="goal">goal: {e(msg.goal)}</span>')
        shift = shifts_at.get(msg.index)
        if shift is not None:
            classes.append("shift")
            meta.append(f'<span class="badge shift" title="{e(shift.from_goal)} \u2192 {e(shift.to_goal)}">'
                        f"shift {shift.shift_index}: {e(shift.to_goal)}</span>"
                        f"<span>from {e(shift.from_goal)}</span>"
                        + _stage_badges(recoveries.get(shift.shift_index)))
    elif msg.role == "assistant":
        if msg.agent_turn is not None:
            meta.append(f"<span>turn {msg.agent_turn}</span>")
        if msg.index in relative:
            s, k = relative[msg.index]
            meta.append(f'<span class="rel" title="agent turns after shift {s}">shift {s} +{k}</span>')
        for stage, s, k in marks.get(msg.index, []):
            meta.append(f'<span class="badge {stage}" title="shift {s}: {e(STAGE_NAMES[stage])} '
                        f'{k} agent turn{"s" if k != 1 else ""} after the shift">{stage} +{k}'
                        + (f" (shift {s})" if len(traj.shifts) > 1 else "") + "</span>")
        if msg.index in marks:
            classes.append("staged")
        calls = []
        for call in msg.tool_calls:
            rec = records.get(call.id)
            err = rec is not None and rec.is_error
            status = (f' <span class="badge err">error: {e(rec.error_kind or "tool error")}</span>' if err else "")
            if call.id in redundant:
                why = ("an identical call in this or the previous turns" if redundant[call.id] == "repeat"
                       else f"more than {BATCH} calls to this tool in one turn")
                status += (f' <span class="badge redundant" title="counted by TCRR: {e(why)}">'
                           f"redundant: {redundant[call.id]}</span>")
            calls.append(f'<div class="call{" error" if err else ""}"><code>{e(call.name)}</code>{status}'
                         f"{_json_block(call.arguments)}</div>")
        if calls:
            body = f'<div class="calls">{"".join(calls)}</div>'
    else:
        rec = records.get(msg.tool_call_id or "")
        name = rec.name if rec else (msg.tool_call_id or "?")
        meta.append(f"<code>{e(name)}</code>")
        if msg.tool_call_id:
            meta.append(f'<span class="idx">{e(msg.tool_call_id)}</span>')
        if msg.is_error or (rec is not None and rec.is_error):
            classes.append("error")
            kind = rec.error_kind if rec and rec.error_kind else "tool error"
            meta.append(f'<span class="badge err">error: {e(kind)}</span>')
        content = msg.content if msg.content is not None else (rec.result if rec else "")
        return (f'<li class="{" ".join(classes)}" id="{anchor}-m{msg.index}"><div class="meta">{"".join(meta)}'
                f"</div>{_json_block(content)}</li>")
    text = f'<div class="text">{e(msg.content)}</div>' if msg.content else ""
    return (f'<li class="{" ".join(classes)}" id="{anchor}-m{msg.index}"><div class="meta">{"".join(meta)}</div>'
            f"{text}{body}</li>")


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
    marks, relative = _stage_marks(traj, sm)
    redundant = redundant_calls(traj) if mode == "shiftbox" else {}
    shifts_at = {s.message_index: s for s in traj.shifts}
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
    messages = "".join(_message(m, traj, records, redundant, marks, relative, shifts_at, recoveries, anchor)
                       for m in sorted(traj.messages, key=lambda m: m.index))
    setup = ""
    if traj.setup_calls:
        items = "".join(f"<li><code>{e(c.name)}</code>{_json_block(c.arguments)}</li>"
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


# --------------------------------------------------------------------------------------------- footer

def _shiftbox_version() -> str:
    try:
        return version("shiftbox")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "unknown"


def _config_value(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list | bool) else str(value)


def footer(m: RunMetrics, trajectories: Sequence[Trajectory], metadata: dict | None) -> str:
    meta = metadata or {}
    run_version = meta.get("shiftbox_version")
    report_version = _shiftbox_version()
    versions = f"shiftbox {e(run_version or report_version)}"
    if run_version and run_version != report_version:
        versions += f" (report rendered by shiftbox {e(report_version)})"
    servers = sorted({(key, s.name, s.version, s.snapshot, s.snapshot_sha256)
                      for t in trajectories for key, s in t.servers.items()})
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(n)}</td><td>{e(v)}</td><td>{e(snap)}</td>"
                   f'<td><span class="hash">{e(sha)}</span></td></tr>' for k, n, v, snap, sha in servers)
    server_table = ('<div class="scroll"><table class="data"><thead><tr><th>domain</th><th>server</th><th>version</th>'
                    f"<th>snapshot</th><th>snapshot sha256</th></tr></thead><tbody>{rows}</tbody></table></div>"
                    if servers else "<p>No server information in the trajectories.</p>")
    extra = ""
    if meta.get("server"):
        extra = "<p>server: " + ", ".join(f"{e(k)}={e(json.dumps(v, sort_keys=True))}"
                                          for k, v in sorted(meta["server"].items())) + "</p>"
    config = meta.get("config") or {}
    keys = ("domain", "agent", "agent_args", "user", "user_args", "trials", "seed", "servers", "snapshot",
            "max_steps", "max_tool_errors", "one_tool_per_turn", "tasks_sha256")
    cfg = "".join(f"<dt>{e(k)}</dt><dd><code>{e(_config_value(config[k]))}</code></dd>"
                  for k in keys if k in config and config[k] not in (None, {}, []))
    return (f'<footer id="provenance"><h2>Provenance</h2><p>metrics: <strong>{e(m.mode)}</strong> definitions '
            f"\u00b7 success threshold TSR \u2265 {m.success_threshold:g} \u00b7 {versions}</p>"
            + (f'<dl class="config">{cfg}</dl>' if cfg else "<p>run.json not found: configuration unknown.</p>")
            + extra + server_table
            + "<p>Self-contained report: no network access, all plots drawn inline.</p></footer>")


# --------------------------------------------------------------------------------------------- page

def comparison_section(c: Comparison) -> str:
    """`shiftbox compare`: each metric of A and B and the difference B - A with its paired interval."""
    rows = []
    for d in c.differences:
        ci = "\u2013" if d.interval is None else f"[{d.interval.low:+.3f}, {d.interval.high:+.3f}]"
        diff = "\u2013" if d.difference is None else f"{d.difference:+.3f}"
        zero = d.interval is not None and d.interval.low <= 0 <= d.interval.high
        rows.append(f'<tr data-metric="{e(d.metric)}"><td>{e(d.metric)}</td><td>{f3(d.a)}</td><td>{f3(d.b)}</td>'
                    f"<td>{diff}</td><td>{ci}</td><td>{'no' if zero or d.interval is None else 'yes'}</td></tr>")
    unpaired = f"; unpaired: A {c.unpaired_a}, B {c.unpaired_b}" if c.unpaired_a or c.unpaired_b else ""
    warnings = ('<ul class="warnings" id="comparison-warnings">'
                + "".join(f"<li>warning: {e(w)}</li>" for w in c.warnings) + "</ul>") if c.warnings else ""
    return (f'<section id="comparison"><h2>Comparison \u00b7 A = {e(c.a)} \u00b7 B = {e(c.b)}</h2>{warnings}'
            '<div class="scroll"><table class="data" id="comparison-table"><thead><tr><th>metric</th><th>A</th>'
            "<th>B</th><th>B \u2212 A</th><th>95% CI</th><th>differs</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>"
            f'<p class="legend-line">{c.paired_simulations} simulations paired by (task, trial) over {c.tasks} tasks'
            f"{e(unpaired)}; interval: paired percentile bootstrap over tasks ({c.bootstrap.get('resamples')} "
            f"resamples, seed {c.bootstrap.get('seed')}); \u201cdiffers\u201d: the interval excludes 0.</p>"
            "</section>\n")


def _agent_body(score: AgentScores, by_agent: dict[str, Breakdown] | None, suffix: str) -> tuple[str, str, str]:
    m = score.metrics
    return headline(m, score.simulations), plots(m, score.simulations, by_agent, suffix), breakdowns(m)


def render_html(scores: Mapping[str, AgentScores], trajectories: list[Trajectory], metadata: dict | None,
                comparison: str = "") -> str:
    """The whole report page as one string (deterministic for a given input).

    One agent: its headline, plots and breakdowns. Several: their headlines side by side, then each
    agent's own section; the simulations list keys every row by (agent, simulation id). `comparison`
    is a pre-rendered section (`shiftbox compare`)."""
    scores = dict(sorted(scores.items()))
    first = next(iter(scores.values()), None)
    m = first.metrics if first else aggregate([])
    agents = sorted(set(scores) | {t.agent for t in trajectories})
    domains = sorted({t.domain for t in trajectories} | {d for s in scores.values() for d in s.metrics.by_domain})
    subject = f"{', '.join(agents) or 'no agent'} on {', '.join(domains) or 'no domain'}"
    config = (metadata or {}).get("config") or {}
    sub_bits = [f"{len(trajectories)} simulations"]
    if "trials" in config:
        sub_bits.append(f"{config['trials']} trial{'s' if config['trials'] != 1 else ''} per task")
    if "user" in config:
        sub_bits.append(f"user simulator {config['user']}")
    sub_bits.append(f"{m.mode} metric definitions")
    subtitle = " \u00b7 ".join(sub_bits)
    sims = [s for score in scores.values() for s in score.simulations]
    nav = ['<a href="#headline">Headline</a>']
    if len(scores) <= 1:
        head, figs, tables = _agent_body(first, agent_rows(scores), "") if first else (headline(m, []), plots(
            m, [], {}), breakdowns(m))
        body = (f'<section id="headline"><h2>Headline figures</h2>{head}</section>\n'
                f'<section id="plots"><h2>Plots</h2>{figs}</section>\n'
                f'<section id="breakdowns"><h2>Breakdowns</h2>{tables}</section>\n')
        nav += ['<a href="#plots">Plots</a>', '<a href="#breakdowns">Breakdowns</a>']
    else:
        body = (f'<section id="headline"><h2>Headline figures by agent</h2>{agents_overview(scores)}'
                f'<div class="plots">{_figure(_gsrt_plot("plot-gsrt-agent", "GSRT stages by agent", "agent", agent_rows(scores)), e(GSRT_CAPTION))}</div>'
                "</section>\n")
        for i, (name, score) in enumerate(scores.items(), start=1):
            head, figs, tables = _agent_body(score, None, f"-a{i}")
            body += (f'<section id="agent-{i}" class="agent"><h2>{e(name)}</h2>{head}<h3>Plots</h3>{figs}'
                     f"<h3>Breakdowns</h3>{tables}</section>\n")
            nav.append(f'<a href="#agent-{i}">{e(name)}</a>')
    if comparison:
        nav.insert(0, '<a href="#comparison">Comparison</a>')
    nav += ['<a href="#simulations">Simulations</a>', '<a href="#provenance">Provenance</a>']
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="shiftbox report">'
        f"<title>shiftbox report \u00b7 {e(subject)}</title>"
        f"<style>{CSS}</style><script>{HEAD_JS}</script></head>\n"
        '<body><header class="top"><div class="wrap">'
        f"<h1>shiftbox report \u00b7 {e(subject)}</h1>"
        f'<div class="subtitle">{e(subtitle)}</div>'
        f'<nav>{"".join(nav)}</nav></div></header>\n'
        '<main class="wrap">\n'
        + comparison + body
        + simulations(sims, trajectories, m.mode) + "\n</main>\n"
        + '<div class="wrap">' + footer(m, trajectories, metadata) + "</div>\n"
        + f"<script>{BODY_JS}</script>\n</body></html>\n"
    )


def save_html(html: str, out: Path) -> Path:
    """Write a rendered report to `out` (parent directories are created); an agent's lone surrogate shows as \\ud83d."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(escape_lone_surrogates(html), encoding="utf-8")
    return out
