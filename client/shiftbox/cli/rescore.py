"""`shiftbox rescore FILE`: score another benchmark's recorded simulations with shiftbox's metrics, or
(`--compat agentchangebench`) exactly as that benchmark's own code does."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ..metrics import RunMetrics
from ._common import CompatChoice, RecordedFormatChoice, err, fail, out_console


def _num(value: float | str | None, digits: int = 6) -> str:
    return "-" if value is None else value if isinstance(value, str) else f"{value:.{digits}f}"


def headline_table(run: RunMetrics, title: str) -> Table:
    """The headline numbers of a run, one metric per row."""
    table = Table("metric", "value", "detail", title=title)
    table.add_row("mode", run.mode, "")
    table.add_row("simulations", str(run.simulations), f"{run.scored_simulations} scored")
    table.add_row("tool calls", str(run.tool_calls), "")
    tsr = run.tsr
    table.add_row("TSR mean", _num(tsr.mean), f"n={tsr.n}, NL judged {tsr.nl_judged}")
    for name in ("communicate_info", "action", "nl_assertion"):
        table.add_row(f"  {name}", _num(getattr(tsr, name)), "")
    tue = run.tue
    table.add_row("TUE", _num(tue.tue), f"{tue.calls} calls; mean per simulation {_num(tue.mean_per_simulation)}")
    table.add_row("  T (executed)", _num(tue.t), "")
    table.add_row("  P (valid args)", _num(tue.p), "")
    tcrr = run.tcrr
    table.add_row("TCRR pooled", _num(tcrr.pooled),
                  f"{tcrr.redundant}/{tcrr.calls} redundant (window {tcrr.window}, batch {tcrr.batch})")
    table.add_row("  mean per simulation", _num(tcrr.mean), "")
    gsrt = run.gsrt
    shifts = "undefined" if gsrt.shifts < 0 else str(gsrt.shifts)
    table.add_row("GSRT shifts", shifts, f"transfer rate {_num(gsrt.transfer_rate)}")
    table.add_row("  recovery rate", _num(gsrt.recovery_rate), "")
    table.add_row("  median ack / tool / outcome",
                  " / ".join(_num(v, 1) for v in (gsrt.median_ack, gsrt.median_tool, gsrt.median_outcome)), "")
    return table


def rescore(
    file: Annotated[Path, typer.Argument(help="recorded simulations (an AgentChangeBench/tau2 results file)")],
    format: Annotated[RecordedFormatChoice, typer.Option("--format", help="format of FILE")] = RecordedFormatChoice.agentchangebench,
    compat: Annotated[CompatChoice | None, typer.Option(
        "--compat", help="score as that benchmark's own code does")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the run metrics as JSON")] = False,
) -> None:
    """Score recorded simulations of another benchmark: shiftbox's metrics by default, or with --compat the
    reference code's own rules (stored judge outputs are reused; no LLM is called).

    Example: shiftbox rescore ../shared/external/agentchangebench/simulations/banking_gpt-4.1_2025-08-23.json --compat agentchangebench
    """
    from ..agentchangebench import rescore_results

    try:
        run = rescore_results(file, compat.value if compat is not None else None)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if json_out:
        typer.echo(run.model_dump_json(indent=2))
        return
    console = out_console(140)
    console.print(headline_table(run, f"{file.name} ({run.mode} metrics)"))
    for note in run.notes:
        err.print(f"note: {escape(note)}", highlight=False)
