"""The terminal summary: per agent, headline figures with their 95% intervals, then per domain and persona."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .._usage import Usage
from ..metrics import (
    PASS_K,
    AgentScores,
    Breakdown,
    Comparison,
    GSRTAggregate,
    HeadlineMetric,
    Interval,
    MetricDifference,
    MissionAggregate,
    MissionSlice,
    PathAggregate,
    Retention,
    RunMetrics,
    Turns,
    headline_metrics,
    interval_gap,
)


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_turns(value: Turns) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:g}"


def with_interval(value: float | None, interval: Interval | None, number: Callable[[float | None], str] = fmt) -> str:
    """'0.912 [0.870, 0.950]': a headline figure and its 95% bootstrap interval over tasks."""
    if value is None or interval is None:
        return number(value)
    return f"{number(value)} [{number(interval.low)}, {number(interval.high)}]"


def usage_text(usage: Mapping[str, Usage]) -> str:
    """LLM use per role on one line: 'agent: 4 calls, 1200 prompt + 80 completion tokens, $0.0021; user: …'."""
    if not usage:
        return "no LLM calls"
    return "; ".join(f"{role}: {u.calls} calls, {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens, "
                     f"${u.cost_usd:.4f}" for role, u in usage.items())


def usage_table(usage: Mapping[str, Usage], title: str = "LLM tokens and cost by role") -> Table:
    """One row per role (agent, user simulator, judge) with its calls, tokens and cost, and their total."""
    table = Table("role", "calls", "prompt tokens", "completion tokens", "cost (USD)", title=title,
                  title_justify="left")
    for role, u in usage.items():
        table.add_row(role, str(u.calls), str(u.prompt_tokens), str(u.completion_tokens), f"{u.cost_usd:.4f}")
    if len(usage) > 1:
        every = sum(usage.values(), Usage())
        table.add_row("total", str(every.calls), str(every.prompt_tokens), str(every.completion_tokens),
                      f"{every.cost_usd:.4f}")
    return table


def interval_caption(tasks: int, resamples: int | None, seed: int | None, paired: bool = False) -> str:
    """How a table's 95% intervals were made, or why it has none (too few tasks)."""
    gap = interval_gap(tasks)
    if gap:
        return f"no 95% CI: {gap}"
    return (f"95% CI: {'paired ' if paired else ''}percentile bootstrap over {tasks} tasks, {resamples} resamples, "
            f"seed {seed}")


def stage(g: GSRTAggregate, name: str) -> str:
    """Median turns of a GSRT stage with the share of shifts that never reached it beside it."""
    median, never = getattr(g, f"median_{name}"), getattr(g, f"never_{name}")
    if never is None:
        return fmt_turns(median)
    return f"{fmt_turns(median)} ({never:.0%} never)"


def breakdown_table(title: str, key: str, rows: dict[str, Breakdown]) -> Table:
    table = Table(key, "sims", "TSR", "TUE", "TCRR", "shifts", "recovery", "transfer", "ack", "tool", "outcome",
                  title=title, title_justify="left")
    for name, b in rows.items():
        g = b.gsrt
        table.add_row(name, str(b.simulations), fmt(b.tsr), fmt(b.tue), fmt(b.tcrr), str(g.shifts),
                      fmt(g.recovery_rate), fmt(g.transfer_rate), stage(g, "ack"), stage(g, "tool"),
                      stage(g, "outcome"))
    return table


ORDINALS = {"1": "1st", "2": "2nd", "3": "3rd", "4": "4th"}


def ordinal(position: str) -> str:
    return ORDINALS.get(position, f"{position}th")


def walk_detail(p: PathAggregate) -> str:
    """The lenient goal walk's detail (shiftbox): optimal share, valid order, progress, counts and error classes."""
    errors = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in p.errors.items()) or "none"
    unreached = f"; {p.not_reached} not reached" if p.not_reached else ""
    return (f"shiftbox's lenient walk of the live conversation (not MMTB's): optimal {fmt(p.optimal)}, valid order "
            f"{fmt(p.valid_order)}, progress {fmt(p.progress)} over {p.goals} goals{unreached}; errors (goals): "
            f"{errors}")


def path_detail(p: MissionAggregate) -> str:
    """MMTB's path headline detail: optimal path rate and accomplished progress with their pools, how walks ended."""
    unreached = f"; {p.not_reached} not reached" if p.not_reached else ""
    endings = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in p.endings.items()) or "none"
    return (f"optimal path rate {fmt(p.optimal)} over {p.optimal_goals} parallel and serial+parallel goals; "
            f"accomplished progress {fmt(p.progress)} over {p.progress_goals} serial and serial+parallel goals; "
            f"{p.goals} goals{unreached}; walks ended: {endings}; {p.argument_failures} answered but failed on "
            "arguments")


def _cell(s: MissionSlice | None) -> str:
    return "-" if s is None or not s.goals else f"{fmt(s.accuracy)} ({s.goals})"


MissionTable = tuple[str, list[str], list[list[str]], str]
"""A path-evaluation table as text: title, header, rows, caption (the terminal and the HTML report draw it)."""


def mission_table_specs(p: MissionAggregate) -> list[MissionTable]:
    """MMTB's tables: accuracy by mission type x position, by call structure (with the optimal path rate and
    progress), by relation to earlier goals, and by full type prefix (the prefixes with goals; layer variance)."""
    positions = sorted(p.by_position, key=int)
    by_type = [[kind, *(_cell(p.by_type_and_position.get(kind, {}).get(k)) for k in positions), _cell(overall)]
               for kind, overall in p.by_type.items()]
    by_type.append(["all", *(_cell(p.by_position.get(k)) for k in positions), f"{fmt(p.accuracy)} ({p.goals})"])
    structure = [[kind, _cell(s), fmt(p.optimal_by_structure.get(kind)), fmt(p.progress_by_structure.get(kind))]
                 for kind, s in p.by_structure.items()]
    relation = [[kind.replace("_", " "), _cell(s)] for kind, s in p.by_relation.items()]
    filled = [[key.replace("->", " -> "), _cell(s)] for key, s in p.prefixes.items() if s.goals]
    variance = ", ".join(f"after {n} goal{'s' if n != '1' else ''} {fmt(v, 4)}" for n, v in p.layer_variance.items())
    return [
        ("path accuracy by mission type x position (MMTB)", ["mission type", *(ordinal(k) for k in positions), "all"],
         by_type, "accuracy (goals): share of the reached goals whose walk reached the answer with passing arguments"),
        ("path accuracy by call structure (MMTB)", ["gold calls", "accuracy", "optimal path", "progress"], structure,
         "optimal path rate over parallel and serial+parallel goals; accomplished progress pooled over serial and "
         "serial+parallel goals"),
        ("path accuracy by relation to earlier goals (MMTB)", ["relation", "accuracy"], relation,
         "none: no gold call depends on an earlier goal's; previous: on the goal just before; long term: on one "
         "further back"),
        ("path accuracy by type prefix (MMTB)", ["mission types so far", "accuracy"], filled,
         f"{len(filled)} of {len(p.prefixes)} prefixes have goals (all are in metrics.json); layer variance: "
         f"{variance}"),
    ]


def mission_tables(p: MissionAggregate | None, suffix: str = "") -> list[Table]:
    """MMTB's path-evaluation tables; none without path evaluation (compat mode)."""
    if p is None:
        return []
    tables = []
    for title, head, rows, caption in mission_table_specs(p):
        table = Table(*head, title=f"{title}{suffix}", title_justify="left")
        for row in rows:
            table.add_row(*row)
        table.caption = caption
        tables.append(table)
    return tables


def _pass_k(m: RunMetrics) -> str:
    return ", ".join(f"k={k}: {with_interval(v, m.intervals.get(f'{PASS_K}{k}'))}" for k, v in m.pass_hat_k.items())


def _tsr_detail(m: RunMetrics) -> tuple[str, list[tuple[str, str, str]]]:
    unscored = f"; unscored (a goal nothing measured): {m.tsr.unscored}" if m.tsr.unscored else ""
    state = [("state match", fmt(m.tsr.state_match), f"n={m.tsr.state_match_n}")] if m.tsr.state_match_n else []
    return (f"communicate_info {fmt(m.tsr.communicate_info)}, action {fmt(m.tsr.action)}, nl_assertion "
            f"{fmt(m.tsr.nl_assertion)} ({m.tsr.nl_judged} judged); n={m.tsr.n}{unscored}"), state


def _tue_detail(m: RunMetrics) -> tuple[str, list[tuple[str, str, str]]]:
    return (f"pooled: T {fmt(m.tue.t)}, P {fmt(m.tue.p)} over {m.tue.calls} calls; "
            f"mean per simulation {fmt(m.tue.mean_per_simulation)}"), []


def _tcrr_detail(m: RunMetrics) -> tuple[str, list[tuple[str, str, str]]]:
    return (f"pooled; mean per simulation {fmt(m.tcrr.mean)}; {m.tcrr.redundant} redundant "
            f"(window {m.tcrr.window}, batch {m.tcrr.batch}) of {m.tcrr.calls}"), []


def _recovery_detail(m: RunMetrics) -> tuple[str, list[tuple[str, str, str]]]:
    g = m.gsrt
    stages = (f"ack {stage(g, 'ack')}, tool {stage(g, 'tool')}, outcome {stage(g, 'outcome')}"
              + (f"; outcome not measured: {g.outcome_not_measured} shifts" if g.outcome_not_measured else ""))
    return f"{g.shifts} shifts; transfer {fmt(g.transfer_rate)}", [("GSRT", "median turns", stages)]


HEADLINE_DETAILS: dict[str, Callable[[RunMetrics], tuple[str, list[tuple[str, str, str]]]]] = {
    "tsr": _tsr_detail, "tue": _tue_detail, "tcrr": _tcrr_detail, "recovery": _recovery_detail,
}
"""A headline metric's detail in the summary and the rows that follow its own; a metric without one shows its
description."""


def metric_rows(metric: HeadlineMetric, m: RunMetrics) -> list[tuple[str, str, str]]:
    """A headline metric's rows in the summary: its value with its interval and detail, then any rows of its own."""
    detail, extra = HEADLINE_DETAILS[metric.key](m) if metric.key in HEADLINE_DETAILS else (metric.description, [])
    return [(metric.label, with_interval(metric.run_value(m), m.intervals.get(metric.key)), detail), *extra]


def headline_table(m: RunMetrics) -> Table:
    title = f"metrics ({m.mode} definitions)" + (f" · {m.agent}" if m.agent else "")
    table = Table("metric", "value [95% CI]", "detail", title=title, title_justify="left")
    table.add_row("simulations", str(m.simulations),
                  f"{m.scored_simulations} scored" + (f"; not scored: {m.excluded}" if m.excluded else ""))
    for metric in headline_metrics():
        for row in metric_rows(metric, m):
            table.add_row(*row)
    if m.shift_reports is not None:
        r = m.shift_reports
        table.add_row("shift reports", f"recall {fmt(r.recall)}",
                      f"the agent's own log_shift_event reports: {r.matched} of {r.shifts} shifts reported, "
                      f"precision {fmt(r.precision)} ({r.reports} reports); median delay {fmt(r.median_delay)} "
                      f"messages; {r.simulations} simulations")
    if m.rubric is not None:
        r = m.rubric
        table.add_row("rubric pass rate", fmt(r.pass_rate),
                      f"VitaBench sliding-window rubric: {r.passed} of {r.judged + r.ended_early} simulations met "
                      f"every item ({r.ended_early} ended early: 0 without judging; "
                      f"{r.simulations - r.judged - r.ended_early} not judged); items met {fmt(r.item_rate)} "
                      f"({r.items_met} of {r.items})")
        if r.pass_hat_k:
            table.add_row("rubric pass^k", ", ".join(f"k={k}: {fmt(v)}" for k, v in r.pass_hat_k.items()),
                          "rubric success per task: pass@k " + ", ".join(f"{fmt(v)}" for v in r.pass_at_k.values())
                          + "; avg@k " + ", ".join(f"{fmt(v)}" for v in r.avg_at_k.values()))
    if m.paths is not None:
        table.add_row("path accuracy (MMTB)", fmt(m.paths.accuracy), path_detail(m.paths))
    if m.goal_walks is not None:
        table.add_row("goal walk success", fmt(m.goal_walks.success), walk_detail(m.goal_walks))
    if m.graph_refusals is not None:
        refusals = m.graph_refusals
        table.add_row("graph refusals", fmt(refusals.share),
                      f"calls refused out of order (--graph-refusal): {refusals.refused} of {refusals.calls} calls, "
                      f"pooled; {refusals.simulations} simulations")
    if m.pass_hat_k:
        table.add_row("pass^k", _pass_k(m), f"success = TSR >= {m.success_threshold:g}")
    if m.rerun_agreement is not None:
        table.add_row("rerun agreement", fmt(m.rerun_agreement),
                      f"tasks whose trials all end the same way, of {m.rerun_agreement_n} with 2+ trials")
    every = sum(m.usage.values(), Usage())
    table.add_row("LLM cost", f"${every.cost_usd:.4f}",
                  f"{every.prompt_tokens + every.completion_tokens} tokens in {every.calls} calls, every simulation "
                  "(scored or not); by role below" if m.usage else "no LLM calls")
    if m.bootstrap:
        table.caption = interval_caption(m.bootstrap.get("tasks", 0), m.bootstrap["resamples"], m.bootstrap["seed"])
    return table


def simulations_row(ms: list[RunMetrics]) -> tuple[str, list[str]]:
    return "simulations", [f"{m.scored_simulations} scored of {m.simulations}" for m in ms]


def figure_rows(ms: list[RunMetrics], after: Mapping[str, list[tuple[str, list[str]]]] | None = None
                ) -> list[tuple[str, list[str]]]:
    """Each headline metric of agents side by side, with their intervals; `after` adds rows after a metric's."""
    rows: list[tuple[str, list[str]]] = []
    for metric in headline_metrics():
        rows.append((metric.run_label or metric.label,
                     [with_interval(metric.run_value(m), m.intervals.get(metric.key)) for m in ms]))
        rows.extend((after or {}).get(metric.key, []))
    return rows


def headline_rows(ms: list[RunMetrics]) -> list[tuple[str, list[str]]]:
    """The headline figures of agents side by side (one value each), with their intervals: what ends a run."""
    largest = max((k for m in ms for k in m.pass_hat_k), default=None)
    return [
        simulations_row(ms),
        *figure_rows(ms),
        *([(f"{PASS_K}{largest}", [with_interval(m.pass_hat_k.get(largest), m.intervals.get(f"{PASS_K}{largest}"))
                                   for m in ms])] if largest is not None else []),
    ]


def agents_caption(ms: list[RunMetrics]) -> str | None:
    """Which agents' figures have no interval, and why (too few tasks)."""
    gaps = [(m.agent, gap) for m in ms if m.scored_simulations and (gap := interval_gap(m.bootstrap.get("tasks", 0)))]
    if not gaps:
        return None
    if len(ms) == 1:
        return f"no 95% CI: {gaps[0][1]}"
    return "no 95% CI for " + "; ".join(f"{agent}: {gap}" for agent, gap in gaps)


def run_headline_table(agents: Mapping[str, RunMetrics]) -> Table:
    """The end of `shiftbox run`: each agent's headline figures with their 95% intervals, one column each."""
    ms = list(agents.values())
    table = Table("metric", *agents, title="headline (95% CI over tasks)", title_justify="left")
    for name, values in headline_rows(ms):
        table.add_row(name, *values)
    table.caption = agents_caption(ms)
    return table


def agents_table(scores: Mapping[str, AgentScores]) -> Table:
    """Agents side by side, one column each: their own headline figures with intervals (never pooled)."""
    table = Table("metric", *scores, title="by agent: each on its own conversations (95% CI over tasks)",
                  title_justify="left")
    ms = [s.metrics for s in scores.values()]
    rows = [
        simulations_row(ms),
        *figure_rows(ms, {"tsr": [("unscored", [str(m.tsr.unscored) for m in ms])]}),
        ("shifts", [str(m.gsrt.shifts) for m in ms]),
        *((f"median {st} turns", [stage(m.gsrt, st) for m in ms]) for st in ("ack", "tool", "outcome")),
        *((f"pass^{k}", [with_interval(m.pass_hat_k.get(k), m.intervals.get(f"pass^{k}")) for m in ms])
          for k in sorted({k for m in ms for k in m.pass_hat_k})),
        ("rerun agreement", [fmt(m.rerun_agreement) for m in ms]),
        ("path accuracy (MMTB)", [fmt(m.paths.accuracy) if m.paths else "-" for m in ms]),
        ("optimal path rate (MMTB)", [fmt(m.paths.optimal) if m.paths else "-" for m in ms]),
        ("accomplished progress (MMTB)", [fmt(m.paths.progress) if m.paths else "-" for m in ms]),
        ("LLM cost (USD)", [f"{sum(m.usage.values(), Usage()).cost_usd:.4f}" for m in ms]),
        ("LLM tokens", [str(sum(u.prompt_tokens + u.completion_tokens for u in m.usage.values())) for m in ms]),
    ]
    for name, values in rows:
        table.add_row(name, *values)
    table.caption = agents_caption(ms)
    return table


def summary(m: RunMetrics) -> Group:
    parts: list = [headline_table(m)]
    suffix = f" · {m.agent}" if m.agent else ""
    if m.by_agent:  # compat mode scores a file of several agents at once
        parts.append(breakdown_table("by agent", "agent", m.by_agent))
    parts.append(breakdown_table("by domain" + suffix, "domain", m.by_domain))
    parts.append(breakdown_table("by persona" + suffix, "persona", m.by_persona))
    if m.by_domain_crossing:  # cross-domain conversations: shifts to another domain's goal, or within one
        parts.append(breakdown_table("by domain crossing" + suffix, "shift", m.by_domain_crossing))
    parts.extend(mission_tables(m.paths, suffix))
    if m.usage:
        parts.append(usage_table(m.usage, "LLM tokens and cost by role" + suffix))
    if m.judge:
        parts.append(f"judge {m.judge['name']}: its tokens and cost are the judge's row, apart from the agent's and "
                     "the user's")
    parts.extend(f"note: {n}" for n in m.notes)
    return Group(*parts)


def agents_summary(scores: Mapping[str, AgentScores]) -> Group:
    """Every agent's summary; with several, first a table putting their headlines side by side."""
    if len(scores) == 1:
        return summary(next(iter(scores.values())).metrics)
    parts: list = [agents_table(scores)]
    for s in scores.values():
        m = s.metrics
        parts.append(breakdown_table(f"by domain · {m.agent}", "domain", m.by_domain))
        parts.append(breakdown_table(f"by persona · {m.agent}", "persona", m.by_persona))
        if m.by_domain_crossing:
            parts.append(breakdown_table(f"by domain crossing · {m.agent}", "shift", m.by_domain_crossing))
        parts.extend(mission_tables(m.paths, f" · {m.agent}"))
        parts.extend(f"note ({m.agent}): {n}" for n in m.notes)
    return Group(*parts)


def persona_gsrt_table(scores: Mapping[str, AgentScores], styles: Mapping[str, str] | None = None) -> Table:
    """GSRT by persona with the agents side by side: per agent the median agent turns to acknowledgment (with its
    90th percentile and the share never acknowledged), the recovery rate and TSR. `styles` labels each persona
    with its way of changing goals."""
    styles = styles or {}
    table = Table("persona (goal change)", "shifts", title="GSRT by persona: agents side by side",
                  title_justify="left")
    for agent in scores:
        for column in ("ack", "recovery", "TSR"):
            table.add_column(f"{column} · {agent.split(':')[-1]}")
    personas = sorted({p for s in scores.values() for p in s.metrics.by_persona})
    for persona in personas:
        row = [f"{persona} ({styles[persona]})" if persona in styles else persona]
        slices = [s.metrics.by_persona.get(persona) for s in scores.values()]
        row.append(str(max((b.gsrt.shifts for b in slices if b), default=0)))
        for b in slices:
            if b is None:
                row += ["-", "-", "-"]
                continue
            g = b.gsrt
            never = "" if g.never_ack is None else f", {g.never_ack:.0%} never"
            row += [f"{fmt_turns(g.median_ack)} (p90 {fmt_turns(g.p90_ack)}{never})", fmt(g.recovery_rate),
                    fmt(b.tsr)]
        table.add_row(*row)
    table.caption = "ack: median agent turns from a shift to its acknowledgment (p90: 90th percentile)"
    return table


def retention_table(rows: list[Retention]) -> Table:
    table = Table("metric", "slice", "shifted", "clean", "retention", "drop",
                  title="retention against the clean run", title_justify="left")
    for r in rows:
        table.add_row(r.metric.upper(), r.slice, fmt(r.shifted), fmt(r.clean), fmt(r.retention), fmt(r.drop))
    return table


SPARK = "▁▂▃▄▅▆▇█"  # 0 .. 1 in eight steps
SPARK_WIDTH = 60


def metric_label(metric: str) -> str:
    """A comparison's metric key (JSON) shown under the label its headline metric declares."""
    return next((m.label for m in headline_metrics() if m.key == metric), metric)


def shown_ks(ks: list[int]) -> set[int]:
    """The few k a pass^k table shows (powers of two and the largest): 1, 2, 4, 8, 12 of twelve trials."""
    largest = max(ks, default=0)
    return {k for k in ks if k == largest or k & (k - 1) == 0}


def comparison_rows(c: Comparison) -> tuple[list[MetricDifference], list[tuple[int, float | None, float | None]]]:
    """What a comparison shows: its differences with pass^k at a few k only, and the pass^k curve over every k
    as (k, A, B)."""
    curve = sorted((int(d.metric.removeprefix(PASS_K)), d.a, d.b) for d in c.differences
                   if d.metric.startswith(PASS_K))
    ks = shown_ks([k for k, _, _ in curve])
    rows = [d for d in c.differences if not d.metric.startswith(PASS_K) or int(d.metric.removeprefix(PASS_K)) in ks]
    return rows, curve


def sparkline(values: list[float | None]) -> str:
    """Values in [0, 1] as block characters (a blank for none), at most SPARK_WIDTH of them, evenly sampled."""
    if len(values) > SPARK_WIDTH:
        values = [values[round(i * (len(values) - 1) / (SPARK_WIDTH - 1))] for i in range(SPARK_WIDTH)]
    return "".join(" " if v is None else SPARK[round(min(max(v, 0.0), 1.0) * (len(SPARK) - 1))] for v in values)


def comparison_table(c: Comparison) -> Group:
    """Each metric of run A and run B and their difference B - A with its 95% paired-bootstrap interval; pass^k
    at a few k, then its curve over every k."""
    table = Table("metric", "A", "B", "B - A", "95% CI", title=f"compare · A = {c.a} · B = {c.b}",
                  title_justify="left")
    rows, curve = comparison_rows(c)
    for d in rows:
        ci = "-" if d.interval is None else f"[{d.interval.low:+.3f}, {d.interval.high:+.3f}]"
        diff = "-" if d.difference is None else f"{d.difference:+.3f}"
        table.add_row(metric_label(d.metric), fmt(d.a), fmt(d.b), diff, ci)
    unpaired = f"; unpaired: A {c.unpaired_a}, B {c.unpaired_b}" if c.unpaired_a or c.unpaired_b else ""
    table.caption = (f"{c.paired_simulations} simulations paired by (task, trial){unpaired}; "
                     + interval_caption(c.tasks, c.bootstrap.get("resamples"), c.bootstrap.get("seed"), paired=True))
    usage = Text(f"LLM use · A: {usage_text(c.usage_a)}\nLLM use · B: {usage_text(c.usage_b)}")
    if not curve:
        return Group(table, usage)
    lines = [f"pass^k curve, k = 1…{curve[-1][0]} ({SPARK[0]} 0 … {SPARK[-1]} 1)"]
    for side, label, values in (("A", c.a, [a for _, a, _ in curve]), ("B", c.b, [b for _, _, b in curve])):
        lines.append(f"  {side} {sparkline(values)}  {label}")
    return Group(table, Text("\n".join(lines)), usage)
