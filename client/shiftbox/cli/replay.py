"""`shiftbox replay FIXTURE_DIR --out RUN_DIR`: re-run a recorded evaluation offline and check it repeats.

Exit 0 when every replayed trajectory and the metrics equal the recording; 1 on any cassette miss,
tool drift or difference (each named); 2 for bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ..errors import OutputPathError
from ..replay import replay_fixture
from ..runs import RunDirError, RunPlanError
from ..trajectory import RunFileError
from ._common import ToolsModeChoice, err, fail


def replay(
    fixture: Annotated[Path, typer.Argument(help="a fixture directory written by `shiftbox run --record`")],
    out: Annotated[Path, typer.Option(help="run directory for the replayed run")],
    tools: Annotated[ToolsModeChoice, typer.Option(help="reexecute: call the real server and fail on drift; "
                                                        "transcript: serve recorded tool results")] = ToolsModeChoice.reexecute,
    concurrency: Annotated[int, typer.Option(min=1, help="simulations at once")] = 8,
) -> None:
    """Replay a recorded run with no network and no keys, and check it repeats exactly.

    Example: shiftbox replay fixtures/banking-litellm --out runs/replayed
    """
    try:
        result = replay_fixture(fixture, out, tools.value, concurrency)
    except (RunPlanError, RunDirError, RunFileError, OutputPathError) as exc:
        raise fail(str(exc)) from None
    if result.failed is not None:
        err.print(f"[red]replay failed:[/] {escape(result.failed)}")
        raise typer.Exit(1)
    if result.problems:
        for p in result.problems:
            err.print(f"[red]replay mismatch:[/] {escape(p)}")
        raise typer.Exit(1)
    Console(soft_wrap=True).print(f"replayed {result.simulations} simulations from {fixture} ({tools.value}): "
                                  "trajectories and metrics identical to the recording")
