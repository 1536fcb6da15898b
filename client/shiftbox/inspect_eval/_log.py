"""An Inspect log read back as shiftbox trajectories, to score them with all of shiftbox's metrics."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import EvalLog, read_eval_log

from ..metrics import RunMetrics, SimulationMetrics
from ..runs import score_trajectories
from ..tasks import Task
from ..trajectory import Trajectory
from ._solver import TASK_KEY, TRAJECTORY_KEY


def log_trajectories(log: EvalLog | str | Path) -> tuple[list[Trajectory], dict[str, Task]]:
    """The trajectories an eval's samples hold, and their tasks by id (a run directory's `read_run` for a log)."""
    log = log if isinstance(log, EvalLog) else read_eval_log(str(log))
    trajectories: list[Trajectory] = []
    tasks: dict[str, Task] = {}
    for sample in log.samples or []:
        if TRAJECTORY_KEY in sample.store:
            trajectories.append(Trajectory.model_validate(sample.store[TRAJECTORY_KEY]))
            task = Task.model_validate(sample.metadata[TASK_KEY])
            tasks[task.id] = task
    return trajectories, tasks


def log_metrics(log: EvalLog | str | Path, success_threshold: float = 1.0) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """shiftbox's run metrics of an Inspect log, as `shiftbox metrics` gives them for a run directory: the pooled
    headlines, bootstrap intervals, pass^k for every k, breakdowns."""
    trajectories, tasks = log_trajectories(log)
    return score_trajectories(trajectories, tasks, success_threshold=success_threshold)
