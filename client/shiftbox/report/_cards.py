"""The headline cards of one agent: simulations, TSR, TUE, TCRR, goal-shift recovery, GSRT turns, pass^k."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .._usage import Usage
from ..metrics import TUE_FORMULA, HeadlineMetric, RunMetrics, SimulationMetrics, headline_metrics
from ._html_text import STAGE_NAMES, STAGES, e, f3, pct, scored_simulations, turns, with_ci
from ._terminal import interval_caption, shown_ks


def _dl(rows: Iterable[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def _card(title: str, big: str, sub: str, body: str = "", big_note: str = "") -> str:
    note = f"<small>{e(big_note)}</small>" if big_note else ""
    return (f'<div class="card"><h3>{e(title)}</h3><div class="big">{e(big)}{note}</div>'
            f'<div class="sub">{sub}</div>{body}</div>')


def _tsr_cards(metric: HeadlineMetric, m: RunMetrics, scored: Sequence[SimulationMetrics]) -> list[str]:
    ci = m.intervals
    tsr_rows = [("95% CI", with_ci(m.tsr.mean, ci.get(metric.key))), ("communicate_info", f3(m.tsr.communicate_info)),
                ("action", f3(m.tsr.action)), ("nl_assertion", f"{f3(m.tsr.nl_assertion)} ({m.tsr.nl_judged} judged)")]
    if m.tsr.state_match_n:
        tsr_rows.append(("state match", f"{f3(m.tsr.state_match)} (n={m.tsr.state_match_n})"))
    unscored = f" \u00b7 {m.tsr.unscored} unscored" if m.tsr.unscored else ""
    return [_card(metric.heading or metric.label, f3(m.tsr.mean),
                  f"mean over n={m.tsr.n} scored simulations{unscored}", _dl(tsr_rows))]


def _tue_cards(metric: HeadlineMetric, m: RunMetrics, scored: Sequence[SimulationMetrics]) -> list[str]:
    return [_card(metric.heading or metric.label, f3(m.tue.tue), f"{TUE_FORMULA} pooled over {m.tue.calls} calls",
                  _dl([("95% CI", with_ci(m.tue.tue, m.intervals.get(metric.key))),
                       ("T (executed without error)", f3(m.tue.t)), ("P (schema-valid arguments)", f3(m.tue.p)),
                       ("mean per simulation", f3(m.tue.mean_per_simulation))]))]


def _tcrr_cards(metric: HeadlineMetric, m: RunMetrics, scored: Sequence[SimulationMetrics]) -> list[str]:
    tcrr_rows = [("95% CI", with_ci(m.tcrr.pooled, m.intervals.get(metric.key))),
                 ("redundant / calls", f"{m.tcrr.redundant} / {m.tcrr.calls}"),
                 ("by window rule", str(m.tcrr.window)), ("by batch rule only", str(m.tcrr.batch)),
                 ("mean per simulation", f3(m.tcrr.mean))]
    if m.tcrr.state_aware_pooled is not None:
        tcrr_rows.append(("state-aware (pooled)", f3(m.tcrr.state_aware_pooled)))
    return [_card(metric.heading or metric.label, f3(m.tcrr.pooled), "pooled over scored calls (lower is better)",
                  _dl(tcrr_rows))]


def _recovery_cards(metric: HeadlineMetric, m: RunMetrics, scored: Sequence[SimulationMetrics]) -> list[str]:
    """The recovery card, then the GSRT card of median, p90 and never-reached turns per stage."""
    recoveries = [r for s in scored for r in s.gsrt]
    recovered = sum(r.recovered for r in recoveries)
    transferred = sum(r.transferred for r in recoveries)
    g = m.gsrt
    stage_rows = "".join(f"<tr><td>{e(STAGE_NAMES[s])}</td><td>{turns(getattr(g, f'median_{s}'))}</td>"
                         f"<td>{turns(getattr(g, f'p90_{s}'))}</td><td>{pct(getattr(g, f'never_{s}'))}</td></tr>"
                         for s in STAGES)
    return [
        _card(metric.heading or metric.label, pct(g.recovery_rate), f"{recovered} of {g.shifts} shifts recovered",
              _dl([("95% CI", with_ci(g.recovery_rate, m.intervals.get(metric.key))),
                   ("transferred to a human", f"{pct(g.transfer_rate)} ({transferred}/{len(recoveries)})"),
                   ("never acknowledged", pct(g.never_ack)), ("never a relevant tool", pct(g.never_tool)),
                   ("outcome never reached", pct(g.never_outcome)),
                   ("outcome not measured", f"{g.outcome_not_measured} shifts")])),
        _card("GSRT \u00b7 agent turns", turns(g.median_ack), "median turns to acknowledge a shift "
              "(never-reached stages count as infinitely late)",
              '<table class="data"><thead><tr><th>stage</th><th>median</th><th>p90</th><th>never</th></tr>'
              f"</thead><tbody>{stage_rows}</tbody></table>", big_note="turns"),
    ]


METRIC_CARDS: dict[str, Callable[[HeadlineMetric, RunMetrics, Sequence[SimulationMetrics]], list[str]]] = {
    "tsr": _tsr_cards, "tue": _tue_cards, "tcrr": _tcrr_cards, "recovery": _recovery_cards,
}
"""The built-in metrics' own cards; any other headline metric gets `metric_cards`' plain one."""


def metric_cards(metric: HeadlineMetric, m: RunMetrics, scored: Sequence[SimulationMetrics]) -> list[str]:
    """A headline metric's cards: its own, or its value, description and 95% interval."""
    if metric.key in METRIC_CARDS:
        return METRIC_CARDS[metric.key](metric, m, scored)
    value = metric.run_value(m)
    return [_card(metric.heading or metric.label, f3(value), e(metric.description),
                  _dl([("95% CI", with_ci(value, m.intervals.get(metric.key)))]))]


def headline(m: RunMetrics, sims: Sequence[SimulationMetrics]) -> str:
    """The headline cards of one agent, each figure with its 95% bootstrap interval over tasks."""
    scored = scored_simulations(sims)
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
    for metric in headline_metrics():
        cards.extend(metric_cards(metric, m, scored))
    if m.pass_hat_k:
        ks = sorted(m.pass_hat_k)
        few = shown_ks(ks)
        rows = "".join(f"<tr><td>k={k}</td><td>{with_ci(m.pass_hat_k.get(k), ci.get(f'pass^{k}'))}</td>"
                       f"<td>{f3(m.pass_at_k.get(k))}</td><td>{f3(m.avg_at_k.get(k))}</td></tr>" for k in ks if k in few)
        cards.append(_card("pass^k \u00b7 reliability", f3(m.pass_hat_k[ks[-1]]),
                           f"k={ks[-1]}; success = TSR \u2265 {m.success_threshold:g}",
                           '<table class="data"><thead><tr><th>k</th><th>pass^k [95% CI]</th><th>pass@k</th>'
                           f"<th>avg@k</th></tr></thead><tbody>{rows}</tbody></table>"))
    if m.paths is not None:
        p = m.paths
        walk = m.goal_walks
        cards.append(_card("Path accuracy \u00b7 MMTB", f3(p.accuracy), f"share of {p.goals} reached goals whose walk "
                           "reached the answer with passing arguments",
                           _dl([("optimal path rate", f"{f3(p.optimal)} ({p.optimal_goals} goals)"),
                                ("accomplished progress", f"{f3(p.progress)} ({p.progress_goals} goals)"),
                                ("walks ended", e(", ".join(f"{k} {v}" for k, v in p.endings.items()) or "none")),
                                ("goal walk (shiftbox, lenient)", f3(walk.success) if walk else "\u2013")])))
    every = sum(m.usage.values(), Usage())
    cards.append(_card("LLM tokens and cost", f"${every.cost_usd:.4f}",
                       f"{every.prompt_tokens + every.completion_tokens} tokens in {every.calls} calls, every "
                       "simulation (scored or not)" if m.usage else "no LLM calls",
                       _dl((role, f"{u.calls} calls, {u.prompt_tokens} prompt + {u.completion_tokens} completion "
                                  f"tokens, ${u.cost_usd:.4f}") for role, u in m.usage.items())))
    notes = ""
    if m.notes:
        notes = ('<div class="notes"><strong>Not measured</strong><ul>'
                 + "".join(f"<li>{e(n)}</li>" for n in m.notes) + "</ul></div>")
    boot = m.bootstrap
    method = (f'<p class="legend-line">{e(interval_caption(boot.get("tasks", 0), boot["resamples"], boot["seed"]))}.'
              "</p>" if boot else "")
    return f'<div class="cards">{"".join(cards)}</div>{method}{notes}'
