"""`replay_fixture`: re-run a recorded evaluation offline and name every way it does not repeat."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .._registry import agent_from_spec, user_from_spec
from ..errors import ReplayDivergence, RunDirError
from ..llm import first_difference
from ..runs import (
    FIXTURE_FILE,
    RUN_FILE,
    ExecutionOptions,
    RunPlanError,
    execute_run,
    metrics_document,
    prepare_run_dir,
    read_run_metadata,
    run_sync,
    score_trajectories,
    selected_tasks,
)
from ..runs._config import tasks_as_run
from ..runs._files import add_tasks, read_run, read_run_tasks
from ..tasks import Task, load_task_file
from ..trajectory import Trajectory
from ._fixture import ReplayHooks, ToolsMode

TOOLS_MODES: tuple[ToolsMode, ...] = ("reexecute", "transcript")


@dataclass
class ReplayResult:
    """What a replay found: `problems` is empty when trajectories and metrics equal the recording."""

    out: Path
    simulations: int
    problems: list[str] = field(default_factory=list)
    failed: str | None = None  # the replay could not go on (an LLM request the cassette does not hold)

    @property
    def identical(self) -> bool:
        return not self.problems and self.failed is None


def compare_runs(recorded_dir: Path, replayed_dir: Path) -> list[str]:
    """Every difference between two runs' trajectories (timings excluded) and metrics, named."""
    return _compared_runs(*(read_run(d, allow_empty=True) for d in (recorded_dir, replayed_dir)))


Run = tuple[list[Trajectory], dict[str, Task]]
"""A run's trajectories and tasks, as `read_run` returns them."""


def _compared_runs(recorded: Run, replayed: Run) -> list[str]:
    """`compare_runs` of two runs already read: each is scored by today's code once every trajectory is equal."""
    problems = []
    by_sim = [{t.simulation_id: t for t in run[0]} for run in (recorded, replayed)]
    for sim in sorted(by_sim[0].keys() | by_sim[1].keys()):
        before, after = (trajectories.get(sim) for trajectories in by_sim)
        if after is None:
            problems.append(f"{sim}: not replayed")
        elif before is None:
            problems.append(f"{sim}: replayed but not in the recording")
        elif after.termination.reason == "replay_mismatch":
            problems.append(after.termination.detail)
        else:
            diff = first_difference(before.canonical(), after.canonical())
            if diff:
                problems.append(f"{sim}: trajectory differs from the recording at {diff}")
    if not problems:
        scored = (metrics_document(*score_trajectories(*run), indent=None) for run in (recorded, replayed))
        if next(scored) != next(scored):
            problems.append("metrics differ from the recording's although every trajectory is equal")
    return problems


def replay_fixture(fixture: Path | str, out: Path | str, tools: ToolsMode = "reexecute",
                   concurrency: int = 8) -> ReplayResult:
    """Replay `fixture` into the run directory `out` with no network and no keys.

    Raises RunPlanError for input that is not a fixture, a tools mode not known, or an --out that does not
    fit (RunDirError, RunFileError). Everything that does not repeat is in the result's `problems`.
    """
    fixture, out = Path(fixture), Path(out)
    if tools not in TOOLS_MODES:
        raise RunPlanError(f"--tools {tools!r}: choose one of {', '.join(TOOLS_MODES)}")
    options = ExecutionOptions(concurrency=concurrency)
    missing = [name for name in (RUN_FILE, FIXTURE_FILE) if not (fixture / name).exists()]
    if missing:
        what = "a run directory, not a fixture" if missing == [FIXTURE_FILE] else "not a fixture"
        raise RunPlanError(f"{fixture} is {what} (no {' nor '.join(missing)}); record a fixture with "
                           "`shiftbox run … --record DIR` and replay DIR")
    if (out / RUN_FILE).exists():
        raise RunDirError(f"--out {out} already holds a run; a replay writes a new run directory: choose another "
                          "--out (or remove that one)")
    try:
        metadata = read_run_metadata(fixture)
        task_file = load_task_file(fixture / "tasks.json")
        hooks = ReplayHooks(fixture, tools)
    except (ValueError, OSError) as exc:
        raise RunPlanError(str(exc)) from None
    if hooks.problems:  # the transcripts are part of the recording: every result in them is checked
        return ReplayResult(out, 0, list(hooks.problems))
    config = metadata.config
    selected = selected_tasks(config, task_file.tasks)
    prepare_run_dir(out, metadata, task_file, resume=False)
    try:
        replayed = run_sync(lambda: execute_run(
            config, selected, out, options, make_agent=lambda: agent_from_spec(config.agent, config.agent_args),
            make_user=lambda: user_from_spec(config.user, config.user_args), finished=set(), hooks=hooks))
    except ReplayDivergence as exc:
        return ReplayResult(out, 0, failed=str(exc))
    # Neither run is read again: the recording's trajectories are the ones its file held when the replay started, the
    # replayed run's the ones it wrote (its file holds each dumped, in this order, and a trajectory reads back with
    # every field equal; only the MCP result a tool call keeps aside in memory is not written, and nothing compares
    # or scores it): `compare_runs(fixture, out)` finds what this finds, each file read once more.
    # The recording's tasks are the ones its files held when the replay started (read once, as `read_run_tasks` reads
    # them); the replayed run's are read from the directory it wrote, as `shiftbox metrics` would score it.
    recorded_tasks: dict[str, Task] = {}
    add_tasks(recorded_tasks, tasks_as_run(config, task_file.tasks), fixture)
    problems = _compared_runs((hooks.trajectories, recorded_tasks), (replayed, read_run_tasks(out)))
    return ReplayResult(out, len(replayed), problems)
