"""`shiftbox conformance replay FILE`: how shiftbox's tools answer the calls real agents made to the reference.

Exit 0 when every difference is representation-only, a cascade, or listed in the deliberate-differences
table (docs/servers.md); 1 when some difference is unexplained; 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from shiftbox_servers.kit import SnapshotError

from ._common import RecordedFormatChoice, fail

EXAMPLES = 3

conformance_app = typer.Typer(
    help="Conformance with a reference implementation: replay its recorded tool calls on shiftbox.",
    no_args_is_help=True,
)


def _short(text: str | None, limit: int = 160) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@conformance_app.command("replay")
def replay(
    file: Annotated[Path, typer.Argument(help="a recorded results file of the reference (AgentChangeBench/tau2)")],
    format: Annotated[RecordedFormatChoice, typer.Option("--format", help="format of FILE")] = RecordedFormatChoice.agentchangebench,
    snapshot: Annotated[Path | None, typer.Option(
        help="snapshot holding the reference's data (default: the reference snapshot, e.g. "
             "snapshots/banking/acb-v1)")] = None,
    toolset: Annotated[str | None, typer.Option(
        help="tool set to replay on (default: the domain's copy of the reference's tool set, agentchangebench or "
             "tau2, when it has one; else default)")] = None,
    differences: Annotated[Path | None, typer.Option(
        help="markdown file holding the deliberate-differences table (default: docs/servers.md)")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print every call's class as JSON")] = False,
) -> None:
    """Replay every agent tool call of a recorded run, in order, one fresh episode per simulation, and
    classify each outcome against the tool message the reference returned.

    Example: shiftbox conformance replay ../shared/external/agentchangebench/simulations/banking_test_run.json --format agentchangebench
    """
    from ..conformance import replay_agentchangebench

    try:
        report = anyio.run(lambda: replay_agentchangebench(file, snapshot_dir=snapshot, toolset=toolset,
                                                           differences=differences))
    except (SnapshotError, ValueError) as exc:
        raise fail(str(exc)) from None
    if json_out:
        typer.echo(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
    else:
        _print(report)
    if report.unexplained:
        raise typer.Exit(1)


def _print(report) -> None:
    from ..conformance import CLASS_LABELS, UNEXPLAINED_CLASSES

    console = Console(width=None if sys.stdout.isatty() else 160, soft_wrap=False)
    total = len(report.calls)
    console.print(f"{escape(Path(report.file).name)}: {total} agent tool calls of {report.simulations} "
                  f"simulations, replayed on {escape(report.snapshot)} (tool set {report.toolset})", highlight=False)
    table = Table("class", "tool", "calls", "deliberate", "unexplained")
    for klass, tools in report.by_class_and_tool().items():
        needs_reason = klass in UNEXPLAINED_CLASSES
        n_class = sum(n for n, _ in tools.values())
        table.add_row(f"[bold]{CLASS_LABELS[klass]}[/]", "[bold]all[/]", f"[bold]{n_class}[/]",
                      str(sum(d for _, d in tools.values())) if needs_reason else "",
                      str(sum(n - d for n, d in tools.values())) if needs_reason else "")
        for tool, (n, deliberate) in tools.items():
            table.add_row("", tool, str(n), str(deliberate) if needs_reason else "",
                          f"[red]{n - deliberate}[/]" if needs_reason and n - deliberate else
                          ("0" if needs_reason else ""))
    table.add_row("[bold]total[/]", "", f"[bold]{total}[/]",
                  str(sum(c.deliberate is not None for c in report.calls)), str(len(report.unexplained)))
    console.print(table)
    console.print("[bold]examples[/] (first of each class)")
    for klass in CLASS_LABELS:
        if klass == "identical":
            continue
        shown = [c for c in report.calls if c.klass == klass]
        shown = sorted(shown, key=lambda c: c.deliberate is not None)[:EXAMPLES]  # unexplained ones first
        for c in shown:
            console.print(f"- [bold]{CLASS_LABELS[klass]}[/] {escape(c.simulation)} call {c.call} "
                          f"{escape(c.tool)}({escape(_short(json.dumps(c.arguments, ensure_ascii=False), 100))})",
                          highlight=False)
            console.print(f"    reference{' (error)' if c.reference_error else ''}: {escape(_short(c.reference))}",
                          highlight=False)
            console.print(f"    shiftbox{' (error)' if c.shiftbox_error else ''}: {escape(_short(c.shiftbox))}",
                          highlight=False)
            for d in c.differences[:3]:
                console.print(f"    differs: {escape(_short(d))}", highlight=False)
            if c.deliberate:
                console.print(f"    deliberate: {escape(_short(c.deliberate, 200))}", highlight=False)
            elif klass in UNEXPLAINED_CLASSES:
                console.print("    [red]unexplained[/]: no row of the deliberate-differences table covers it",
                              highlight=False)
    if report.unanswered:
        console.print(f"{report.unanswered} calls had no tool message in the recording and were not compared")
    unexplained = len(report.unexplained)
    console.print(f"{unexplained} unexplained difference{'s' if unexplained != 1 else ''}"
                  f" (table: {report.table})")
