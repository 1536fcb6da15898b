"""`shiftbox compare RUN_A RUN_B`: paired differences between two runs (`shiftbox.runs.compare_run_dirs`), with 95%
paired-bootstrap intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from ..errors import NoSimulationsError
from ..runs import compare_run_dirs, write_comparison_report
from ._common import Threshold, err, fail, out_console


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="run A: a run directory (or a folder of them) of one agent")],
    run_b: Annotated[Path, typer.Argument(help="run B, on the same tasks: differences are B - A")],
    json_out: Annotated[bool, typer.Option("--json", help="print the comparison as JSON")] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE",
                                              help="also write an HTML report of both runs with the comparison")] = None,
    threshold: Threshold = 1.0,
) -> None:
    """Compare two runs: each metric's difference B - A over simulations paired by (task, trial), with a 95%
    paired-bootstrap interval over tasks (seeded: reruns print the same interval).

    An interval that contains 0 means the runs are not shown to differ on that metric.

    Example: shiftbox compare runs/demo/oracle runs/demo/late_ack --html runs/demo/compare.html
    """
    try:
        compared = compare_run_dirs(run_a, run_b, threshold)
        if html is not None:
            write_comparison_report(compared, html)
    except NoSimulationsError as exc:
        raise fail(str(exc), code=1) from None
    except ValidationError as exc:
        raise fail(f"a run file does not parse ({exc.error_count()} error(s), first: {exc.errors()[0]['msg']}); "
                   "re-create the run with `shiftbox run`") from None
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    if json_out:  # the warnings are in the JSON (`warnings`)
        typer.echo(json.dumps(compared.comparison.model_dump(mode="json"), indent=2))
        return
    for warning in compared.comparison.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    from ..report import comparison_table

    console = out_console()
    console.print(comparison_table(compared.comparison))
    if html is not None:
        console.print(f"HTML report: {html}")
