"""The terminal summary: headline figures, then per domain, persona and agent (rich tables)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from ..metrics import Breakdown, Retention, RunMetrics


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _turns(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def breakdown_table(title: str, key: str, rows: dict[str, Breakdown]) -> Table:
    table = Table(key, "sims", "TSR", "TUE", "TCRR", "shifts", "recovery", "transfer", "ack", "tool", "outcome",
                  title=title, title_justify="left")
    for name, b in rows.items():
        g = b.gsrt
        table.add_row(name, str(b.simulations), fmt(b.tsr), fmt(b.tue), fmt(b.tcrr), str(g.shifts),
                      fmt(g.recovery_rate), fmt(g.transfer_rate), _turns(g.median_ack), _turns(g.median_tool),
                      _turns(g.median_outcome))
    return table


def headline_table(m: RunMetrics) -> Table:
    table = Table("metric", "value", "detail", title=f"metrics ({m.mode} definitions)", title_justify="left")
    table.add_row("simulations", str(m.simulations),
                  f"{m.scored_simulations} scored" + (f"; not scored: {m.excluded}" if m.excluded else ""))
    table.add_row("TSR", fmt(m.tsr.mean), f"communicate_info {fmt(m.tsr.communicate_info)}, action "
                  f"{fmt(m.tsr.action)}, nl_assertion {fmt(m.tsr.nl_assertion)} ({m.tsr.nl_judged} judged)")
    if m.tsr.state_match_n:
        table.add_row("state match", fmt(m.tsr.state_match), f"n={m.tsr.state_match_n}")
    table.add_row("TUE", fmt(m.tue.tue), f"T {fmt(m.tue.t)}, P {fmt(m.tue.p)} over {m.tue.calls} calls")
    table.add_row("TCRR", fmt(m.tcrr.pooled), f"mean {fmt(m.tcrr.mean)}; {m.tcrr.redundant} redundant "
                  f"(window {m.tcrr.window}, batch {m.tcrr.batch}) of {m.tcrr.calls}")
    g = m.gsrt
    table.add_row("GSRT", f"{g.shifts} shifts", f"recovery {fmt(g.recovery_rate)}, transfer {fmt(g.transfer_rate)}; "
                  f"median ack/tool/outcome {_turns(g.median_ack)}/{_turns(g.median_tool)}/{_turns(g.median_outcome)} "
                  f"turns; never acked {fmt(g.never_ack)}")
    if m.pass_hat_k:
        table.add_row("pass^k", ", ".join(f"k={k}: {fmt(v)}" for k, v in m.pass_hat_k.items()),
                      f"success = TSR >= {m.success_threshold:g}")
    return table


def summary(m: RunMetrics) -> Group:
    parts = [headline_table(m)]
    if len(m.by_agent) > 1:
        parts.append(breakdown_table("by agent", "agent", m.by_agent))
    parts.append(breakdown_table("by domain", "domain", m.by_domain))
    parts.append(breakdown_table("by persona", "persona", m.by_persona))
    if m.judge:
        usage = m.judge.get("usage", {})
        parts.append(f"judge {m.judge['name']}: {usage.get('calls', 0):g} calls, "
                     f"{usage.get('prompt_tokens', 0):g}+{usage.get('completion_tokens', 0):g} tokens, "
                     f"${usage.get('cost_usd', 0.0):.4f} (not counted with the agent's or the user's)")
    parts.extend(f"note: {n}" for n in m.notes)
    return Group(*parts)


def retention_table(rows: list[Retention]) -> Table:
    table = Table("metric", "slice", "shifted", "clean", "retention", "drop",
                  title="retention against the clean run", title_justify="left")
    for r in rows:
        table.add_row(r.metric.upper(), r.slice, fmt(r.shifted), fmt(r.clean), fmt(r.retention), fmt(r.drop))
    return table
