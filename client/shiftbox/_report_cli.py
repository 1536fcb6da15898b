"""`shiftbox report RUN_DIR --html FILE`: one self-contained HTML report of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console

from ._run import TASKS_FILE, TRAJECTORIES_FILE, RunFileError, run_dirs

err = Console(stderr=True, soft_wrap=True)


def _fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/] {message}")
    return typer.Exit(2)


def report(
    run_dir: Annotated[Path, typer.Argument(help="a run directory written by `shiftbox run`, or a folder of them")],
    html: Annotated[Path, typer.Option("--html", metavar="FILE", help="write the self-contained HTML report here")],
) -> None:
    """Write a self-contained HTML report of a run: headline metrics, plots and every conversation.

    The file loads nothing from the network; open it in any browser.

    Example: shiftbox report runs/demo/late_ack --html late_ack.html
    """
    from .report import write_html_report

    if not run_dir.is_dir():
        raise _fail(f"{run_dir} does not exist or is not a directory; pass a run directory written by "
                    "`shiftbox run --out DIR`")
    try:
        run_dirs(run_dir)
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from None
    if html.is_dir():
        raise _fail(f"--html {html} is a directory; give a file name, e.g. --html {html / 'report.html'}")
    try:
        out = write_html_report(run_dir, html)
    except ValidationError as exc:
        raise _fail(f"{run_dir / TRAJECTORIES_FILE} (or {TASKS_FILE}) holds a record that does not parse "
                    f"({exc.error_count()} error(s), first: {exc.errors()[0]['msg']}); re-create the run with "
                    "`shiftbox run`") from None
    except RunFileError as exc:
        raise _fail(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise _fail(f"a file in {run_dir} is not valid JSON ({exc.msg}, line {exc.lineno}); re-create the run "
                    "with `shiftbox run`") from None
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise _fail(f"cannot score {run_dir}: {exc.args[0] if exc.args else exc}") from None
    except OSError as exc:
        raise _fail(f"cannot write {html}: {exc.strerror or exc}; choose a writable path for --html") from None
    typer.echo(str(out))
