"""`shiftbox report RUN_DIR --html FILE`: one self-contained HTML report of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from ..errors import NoSimulationsError, OutputPathError
from ..runs import TASKS_FILE, run_dirs, write_html_report
from ..trajectory import TRAJECTORIES_FILE, RunFileError
from ._common import fail


def report(
    run_dir: Annotated[Path, typer.Argument(help="a run directory written by `shiftbox run`, or a folder of them")],
    html: Annotated[Path, typer.Option("--html", metavar="FILE", help="write the self-contained HTML report here")],
) -> None:
    """Write a self-contained HTML report of a run: headline metrics, plots and every conversation.

    The file loads nothing from the network; open it in any browser.

    Example: shiftbox report runs/demo/late_ack --html late_ack.html
    """
    if not run_dir.is_dir():
        raise fail(f"{run_dir} does not exist or is not a directory; pass a run directory written by "
                    "`shiftbox run --out DIR`")
    try:
        run_dirs(run_dir)
    except FileNotFoundError as exc:
        raise fail(str(exc)) from None
    if html.is_dir():
        raise fail(f"--html {html} is a directory; give a file name, e.g. --html {html / 'report.html'}")
    try:
        out = write_html_report(run_dir, html)
    except NoSimulationsError as exc:
        raise fail(str(exc), code=1) from None
    except ValidationError as exc:
        raise fail(f"{run_dir / TRAJECTORIES_FILE} (or {TASKS_FILE}) holds a record that does not parse "
                    f"({exc.error_count()} error(s), first: {exc.errors()[0]['msg']}); re-create the run with "
                    "`shiftbox run`") from None
    except (RunFileError, OutputPathError) as exc:
        raise fail(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise fail(f"a file in {run_dir} is not valid JSON ({exc.msg}, line {exc.lineno}); re-create the run "
                    "with `shiftbox run`") from None
    except (FileNotFoundError, KeyError, ValueError) as exc:
        raise fail(f"cannot score {run_dir}: {exc.args[0] if exc.args else exc}") from None
    except OSError as exc:
        raise fail(f"cannot write {html}: {exc.strerror or exc}; choose a writable path for --html") from None
    typer.echo(str(out))
