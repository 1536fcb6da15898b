"""A run directory: `run.json` (configuration and versions), `tasks.json` (the tasks as run) and
`trajectories.jsonl` (one trajectory per line, appended and fsynced per simulation, never rewritten).

Reading tolerates a torn last line left by a crash (`--resume` cuts it off and runs only what is
missing): a kill -9 mid-run loses nothing already written and duplicates nothing.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import (
    NoSimulationsError,
    RecordWriteError,
    RunDirError,
    RunFileError,
    make_output_folder,
)
from ..tasks import Task, TaskFile, load_task_file, task_file_json
from ..trajectory import Trajectory, describe_invalid, read_trajectories
from ._config import RunConfig, RunMetadata, tasks_as_run

RUN_FILE, TASKS_FILE = "run.json", "tasks.json"
M = TypeVar("M", bound=BaseModel)


def read_model_file(path: Path, model: type[M], fix: str) -> M:
    """The file at `path` as `model`, or a RunFileError naming it and saying `fix` (a tampered file, never a
    traceback: pydantic bounds the nesting it parses)."""
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise RunFileError(f"{path}: does not parse as a shiftbox {path.name} ({describe_invalid(exc)}); {fix}") from None


def read_run_metadata(run_dir: Path) -> RunMetadata:
    """run.json, or a RunFileError naming it."""
    return read_model_file(run_dir / RUN_FILE, RunMetadata, "restore it or start a new run with another --out")


def write_run_metadata(run_dir: Path, metadata: RunMetadata) -> None:
    """Replace run.json whole."""
    write_whole(run_dir / RUN_FILE, metadata.model_dump_json(indent=2) + "\n")


def write_whole(path: Path, text: str) -> None:
    """Replace `path` whole (write, then rename): a crash leaves the old file or the new one, and a write that fails
    (a full disk) is a RecordWriteError that leaves the old one."""
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise RecordWriteError.of(path, exc) from exc


def _restore(path: Path, task_file: TaskFile) -> None:
    """Write the task file `path` again when it is gone or no longer reads as a task file; else leave it as it is."""
    if path.is_dir():
        raise RunFileError(f"{path} is a directory, not the run's task file: remove it and resume again (--resume "
                           "writes the task file as the run has it)")
    try:
        load_task_file(path)
    except (OSError, ValueError):
        write_whole(path, task_file_json(task_file))


def run_dirs(path: Path) -> list[Path]:
    """A run directory, or a folder holding run directories at any depth (sorted): what `metrics`, `report` and
    `compare` read."""
    if (path / TASKS_FILE).exists():
        return [path]
    found = sorted({p.parent for p in path.rglob(TASKS_FILE)}) if path.is_dir() else []
    if not found:
        raise FileNotFoundError(f"{path} is not a run directory (no {TASKS_FILE}) nor a folder of them; "
                                "create one with `shiftbox run --out DIR`")
    return found


def read_run(path: Path, *, allow_empty: bool = False) -> tuple[list[Trajectory], dict[str, Task]]:
    """Every trajectory and task of a run directory or of a folder of run directories; none is a
    NoSimulationsError (nothing to score) unless `allow_empty`."""
    trajectories: list[Trajectory] = []
    tasks: dict[str, Task] = {}
    for run_dir in run_dirs(path):
        _add_run_tasks(tasks, run_dir, path)
        trajectories += read_trajectories(run_dir)
    if not trajectories and not allow_empty:
        raise NoSimulationsError(f"no simulations in {path}: nothing to score (the run ended before its first "
                                 "simulation did); finish it with `shiftbox run` and the same options plus --resume")
    return trajectories, tasks


def read_run_tasks(path: Path) -> dict[str, Task]:
    """The tasks `read_run` returns, without reading any trajectory (for a caller that holds them already)."""
    tasks: dict[str, Task] = {}
    for run_dir in run_dirs(path):
        _add_run_tasks(tasks, run_dir, path)
    return tasks


def _add_run_tasks(tasks: dict[str, Task], run_dir: Path, path: Path) -> None:
    """Add one run directory's tasks as run (tasks.json, with run.json's configuration applied) to `tasks`."""
    file_tasks = load_task_file(run_dir / TASKS_FILE).tasks
    if (run_dir / RUN_FILE).exists():  # a run.json that does not parse is an error here too, not ignored
        file_tasks = tasks_as_run(read_run_metadata(run_dir).config, file_tasks)
    add_tasks(tasks, file_tasks, path)


def add_tasks(tasks: dict[str, Task], file_tasks: list[Task], path: Path) -> None:
    """Add tasks as run to `tasks` by id (a caller that read the run's files already); one id that names two
    different tasks is a ValueError."""
    for task in file_tasks:
        if tasks.setdefault(task.id, task) != task:
            raise ValueError(f"task {task.id!r} differs between the run directories under {path}; "
                             "score them separately")


def prepare_run_dir(run_dir: Path, metadata: RunMetadata, task_file: TaskFile, resume: bool) -> set[str]:
    """Create or reopen a run directory; returns the simulation ids already finished. Reopened, its tasks.json is
    written again when lost or damaged (it is the task file as run, whose digest run.json holds and was compared)."""
    run_file = run_dir / RUN_FILE
    if run_file.exists():
        if not resume:
            raise RunDirError(f"{run_dir} already holds a run; add --resume to finish it, or choose another --out")
        previous = read_run_metadata(run_dir).config
        if previous != metadata.config:
            changed = [k for k in RunConfig.model_fields
                       if getattr(previous, k) != getattr(metadata.config, k)]
            raise RunDirError(f"{run_dir} holds a run with a different configuration ({', '.join(changed)} "
                              "changed); use the original options or another --out")
        finished = {t.simulation_id for t in read_trajectories(run_dir, repair=True)}
        _restore(run_dir / TASKS_FILE, task_file)
        return finished
    if resume and run_dir.is_dir() and any(run_dir.iterdir()):
        raise RunDirError(f"{run_dir} is not a shiftbox run directory (no {RUN_FILE}); nothing to resume: restore its "
                          f"{RUN_FILE}, or start the run without --resume in another --out")
    make_output_folder(run_dir, "--out")
    write_whole(run_dir / TASKS_FILE, task_file_json(task_file))
    write_run_metadata(run_dir, metadata)
    return set()


