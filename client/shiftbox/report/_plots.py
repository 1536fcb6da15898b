"""One agent's figures: TSR by persona, GSRT stages by domain, agent and goal shift, TCRR and TUE histograms."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..metrics import (
    TUE_FORMULA,
    AgentScores,
    Breakdown,
    RunMetrics,
    SimulationMetrics,
    Turns,
    aggregate_gsrt,
)
from . import _svg
from ._html_text import STAGE_NAMES, STAGES, e, f3, pct, scored_simulations, turns
from ._svg import OKABE_ITO, Series

STAGE_COLORS = {"ack": OKABE_ITO["blue"], "tool": OKABE_ITO["orange"], "outcome": OKABE_ITO["green"]}


def gsrt_plot(plot_id: str, title: str, x_label: str, rows: dict[str, Breakdown], width: int = _svg.WIDTH) -> str:
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
        recoveries = [r for s in scored_simulations(sims) for r in s.gsrt if f"{r.from_goal}->{r.to_goal}" in rest]
        rows[f"other ({len(rest)} pairs)"] = Breakdown(simulations=len({s.simulation_id for s in scored_simulations(sims)}),
                                                       tsr=None, tue=None, tcrr=None, gsrt=aggregate_gsrt(recoveries))
    return rows


def figure(svg: str, caption: str, wide: bool = False) -> str:
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
    scored = scored_simulations(sims)
    personas = sorted(m.by_persona)
    figs = [figure(_svg.bar_chart(
        f"plot-tsr-persona{suffix}", "TSR by persona", personas, [m.by_persona[p].tsr for p in personas],
        y_label="mean TSR", x_label="persona", y_max=1.0, sublabels=[f"n={m.by_persona[p].simulations}"
                                                                      for p in personas],
        tooltips=[f"{p}: TSR {f3(m.by_persona[p].tsr)} over {m.by_persona[p].simulations} simulations"
                  for p in personas], width=_svg.WIDE, description="mean task success rate per user persona"),
        e(f"Mean TSR (partial credit, 0\u20131) of the scored simulations of each persona; overall {f3(m.tsr.mean)}."),
        wide=True)]
    figs.append(figure(gsrt_plot(f"plot-gsrt-domain{suffix}", "GSRT stages by domain", "domain", m.by_domain),
                        e(GSRT_CAPTION)))
    if by_agent is not None:
        figs.append(figure(gsrt_plot(f"plot-gsrt-agent{suffix}", "GSRT stages by agent", "agent", by_agent),
                            e(GSRT_CAPTION)))
    pairs = goal_pair_rows(m, sims)
    figs.append(figure(gsrt_plot(f"plot-gsrt-goal-pair{suffix}", "GSRT stages by goal shift",
                                   "goal shift (previous \u2192 new goal)", pairs, width=_svg.WIDE),
                        e(f"The same stages for the {min(TOP_GOAL_PAIRS, len(m.by_goal_pair))} most frequent kinds "
                          f"of shift (previous goal \u2192 new goal) of {len(m.by_goal_pair)}, the rest grouped; "
                          "every pair is in the breakdown table."), wide=True))
    tcrr = [s.tcrr.ratio for s in scored if s.tcrr.ratio is not None]
    no_calls = len(scored) - len(tcrr)
    figs.append(figure(_svg.histogram(
        f"plot-tcrr-hist{suffix}", "TCRR distribution", tcrr, x_label="TCRR per simulation (redundant / calls)",
        mean=m.tcrr.mean, color=OKABE_ITO["vermillion"],
        description="histogram of per-simulation redundant-call ratios"),
        e(f"{len(tcrr)} scored simulations in bins of 0.1 (the last includes 1); dashed: mean"
          + (f"; {no_calls} without tool calls not shown" if no_calls else "") + ".")))
    tue = [s.tue.tue for s in scored if s.tue.tue is not None]
    figs.append(figure(_svg.histogram(
        f"plot-tue-hist{suffix}", "TUE distribution", tue, x_label=f"TUE per simulation ({TUE_FORMULA})",
        mean=m.tue.mean_per_simulation, color=OKABE_ITO["sky"],
        description="histogram of per-simulation tool-use efficiency"),
        e(f"{len(tue)} scored simulations in bins of 0.1 (the last includes 1); dashed: mean"
          + (f"; {len(scored) - len(tue)} without a TUE not shown" if len(tue) < len(scored) else "") + ".")))
    return f'<div class="plots">{"".join(figs)}</div>'
