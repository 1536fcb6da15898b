"""`shiftbox serve-assessor`: shiftbox as an A2A assessor ("green") agent (`shiftbox.assessor.serve_assessor`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..assessor import AssessorSettings, serve_assessor
from ..errors import RunFileError
from ._common import Port, err, fail


def serve_assessor_command(
    tasks: Annotated[Path, typer.Option(help="the task file every assessment runs (or the part a request selects)")],
    out: Annotated[Path, typer.Option(help="directory of the assessments' run directories "
                                           "(OUT/assessment-0001, ...)")] = Path("runs/assessor"),
    port: Port = 9009,
    user: Annotated[str, typer.Option(help="the user simulator spec (scripted, litellm:<model>)")] = "scripted",
    domain: Annotated[str | None, typer.Option(help="the domain (default: the task file's)")] = None,
) -> None:
    """Serve shiftbox as an A2A assessor agent: sent {"participants": {"agent": URL}, "config": {...}}, it runs
    the task file against the A2A agent at URL (the handover in the message text) and answers with the metrics.

    Example: shiftbox serve-assessor --tasks examples/a2a_agent/tasks.json --port 9009
    """
    settings = AssessorSettings(tasks=tasks, out=out, user=user, domain=domain)
    try:
        serve_assessor(settings, port, log=lambda line: err.print(line, highlight=False, markup=False))
    except (RunFileError, ValueError, OSError) as exc:
        raise fail(str(exc)) from None
