"""`shiftbox replay FIXTURE_DIR --out RUN_DIR`: re-run a recorded evaluation offline and check it repeats.

Exit 0 when every replayed trajectory and the metrics equal the recording; 1 on any cassette miss,
tool drift or difference (each named); 2 for bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from ._metrics_cli import metrics_document, score_run
from ._registry import make_agent, make_user
from ._run import (
    RUN_FILE,
    RunDirError,
    RunFileError,
    execute_run,
    prepare_run_dir,
    read_run_metadata,
    read_trajectories,
)
from .llm import first_difference
from .tasks import load_task_file

err = Console(stderr=True, soft_wrap=True)
TOOLS_MODES = ("reexecute", "transcript")


def compare_runs(recorded_dir: Path, replayed_dir: Path) -> list[str]:
    """Every difference between two runs' trajectories (timings excluded) and metrics, named."""
    problems = []
    recorded = {t.simulation_id: t for t in read_trajectories(recorded_dir)}
    replayed = {t.simulation_id: t for t in read_trajectories(replayed_dir)}
    for sim in sorted(recorded.keys() | replayed.keys()):
        if sim not in replayed:
            problems.append(f"{sim}: not replayed")
        elif sim not in recorded:
            problems.append(f"{sim}: replayed but not in the recording")
        elif replayed[sim].termination.reason == "replay_mismatch":
            problems.append(replayed[sim].termination.detail)
        else:
            diff = first_difference(recorded[sim].canonical(), replayed[sim].canonical())
            if diff:
                problems.append(f"{sim}: trajectory differs from the recording at {diff}")
    if not problems:
        before, after = (metrics_document(*score_run(d)) for d in (recorded_dir, replayed_dir))
        if before != after:
            problems.append("metrics differ from the recording's although every trajectory is equal")
    return problems


def replay(
    fixture: Annotated[Path, typer.Argument(help="a fixture directory written by `shiftbox run --record`")],
    out: Annotated[Path, typer.Option(help="run directory for the replayed run")],
    tools: Annotated[str, typer.Option(help="reexecute: call the real server and fail on drift; "
                                            "transcript: serve recorded tool results")] = "reexecute",
    concurrency: Annotated[int, typer.Option(min=1, help="simulations at once")] = 8,
) -> None:
    """Replay a recorded run with no network and no keys, and check it repeats exactly.

    Example: shiftbox replay fixtures/banking-litellm --out runs/replayed
    """
    if tools not in TOOLS_MODES:
        err.print(f"[red]error:[/] --tools {tools!r}: choose one of {', '.join(TOOLS_MODES)}")
        raise typer.Exit(2)
    if not (fixture / RUN_FILE).exists() or not (fixture / "fixture.json").exists():
        err.print(f"[red]error:[/] {fixture} is not a fixture (no {RUN_FILE} / fixture.json); record one with "
                  "`shiftbox run … --record DIR`")
        raise typer.Exit(2)
    from .replay import ReplayHooks

    try:
        metadata = read_run_metadata(fixture)
        task_file = load_task_file(fixture / "tasks.json")
        hooks = ReplayHooks(fixture, tools)  # type: ignore[arg-type]
    except (RunFileError, ValueError, OSError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if hooks.problems:  # the transcripts are part of the recording: every result in them is checked
        for p in hooks.problems:
            err.print(f"[red]replay mismatch:[/] {escape(p)}")
        raise typer.Exit(1)
    config = metadata.config
    selected = [t for t in task_file.tasks if not config.task_ids or t.id in config.task_ids]
    try:
        prepare_run_dir(out, metadata, task_file, resume=False)
    except (RunDirError, RunFileError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    from .errors import ReplayDivergence

    try:
        anyio.run(lambda: execute_run(
            config, selected, out, make_agent=lambda: make_agent(config.agent, config.agent_args),
            make_user=lambda: make_user(config.user, config.user_args), concurrency=concurrency, finished=set(),
            hooks=hooks))
    except ReplayDivergence as exc:
        err.print(f"[red]replay failed:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    problems = compare_runs(fixture, out)
    if problems:
        for p in problems:
            err.print(f"[red]replay mismatch:[/] {escape(p)}")
        raise typer.Exit(1)
    n = len(read_trajectories(out))
    Console(soft_wrap=True).print(
        f"replayed {n} simulations from {fixture} ({tools}): trajectories and metrics identical to the recording")
