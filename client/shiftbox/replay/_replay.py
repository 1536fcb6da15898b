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
from ..runs._files import read_run
from ..tasks import load_task_file
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
    return _compared(recorded_dir, replayed_dir)[1]


def _compared(recorded_dir: Path, replayed_dir: Path) -> tuple[int, list[str]]:
    """(simulations replayed, `compare_runs`' problems), each run read once."""
    problems = []
    (recorded_trajectories, recorded_tasks), (replayed_trajectories, replayed_tasks) = (
        read_run(d, allow_empty=True) for d in (recorded_dir, replayed_dir))
    recorded = {t.simulation_id: t for t in recorded_trajectories}
    replayed = {t.simulation_id: t for t in replayed_trajectories}
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
        before, after = (metrics_document(*score_trajectories(*run), indent=None)
                         for run in ((recorded_trajectories, recorded_tasks), (replayed_trajectories, replayed_tasks)))
        if before != after:
            problems.append("metrics differ from the recording's although every trajectory is equal")
    return len(replayed_trajectories), problems


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
        run_sync(lambda: execute_run(
            config, selected, out, options, make_agent=lambda: agent_from_spec(config.agent, config.agent_args),
            make_user=lambda: user_from_spec(config.user, config.user_args), finished=set(), hooks=hooks))
    except ReplayDivergence as exc:
        return ReplayResult(out, 0, failed=str(exc))
    return ReplayResult(out, *_compared(fixture, out))
