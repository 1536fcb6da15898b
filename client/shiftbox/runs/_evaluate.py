"""Executing a `RunPlan`: the run directory prepared (or reopened with resume), every missing simulation run,
the fixture finished when recording; what `shiftbox run` does between its checks and its summary."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from ..trajectory import Trajectory, read_trajectories
from ._execute import RunHooks, execute_run
from ._files import prepare_run_dir
from ._plan import RunPlan
from ._record import RecordHooks, finish_fixture, refuse_fixture


@dataclass
class RunResult:
    """A finished run: every trajectory in its directory (earlier ones too, when resumed)."""

    out: Path
    trajectories: list[Trajectory]
    resumed: int
    fixture: Path | None = None
    fixture_refused: str | None = None
    """Why `--record`'s fixture was not finished (simulations that failed for reasons not the agent's), or None."""

    @property
    def not_the_agents_fault(self) -> list[Trajectory]:
        """Simulations that ended for a reason not the agent's (user simulator or infrastructure)."""
        return [t for t in self.trajectories if t.termination.blame in ("user", "infrastructure")]


async def run_evaluation_async(
    plan: RunPlan,
    *,
    on_start: Callable[[int, int], None] = lambda to_run, finished: None,
    on_done: Callable[[Trajectory], None] = lambda t: None,
) -> RunResult:
    """Run the plan; `on_start(to_run, already_finished)` once, `on_done(trajectory)` as each one is written.

    Raises RunDirError / RunFileError for an --out that does not fit, SnapshotError, DockerError and
    ToolContractError for servers that cannot serve the run.
    """
    finished = prepare_run_dir(plan.out, plan.metadata, plan.task_file, plan.resume)
    hooks: RunHooks | None = None
    if plan.record is not None:
        hooks = RecordHooks(plan.record, plan.llm_cassettes)
    await execute_run(plan.config, plan.tasks, plan.out, make_agent=plan.make_agent, make_user=plan.make_user,
                      concurrency=plan.concurrency, finished=finished,
                      on_start=lambda n: on_start(n, len(finished)), on_done=on_done,
                      hooks=hooks, retry_infra=plan.retry_infra, executor=plan.executor, workers=plan.workers,
                      ray_address=plan.ray_address, max_llm_concurrency=plan.max_llm_concurrency)
    result = RunResult(plan.out, read_trajectories(plan.out), len(finished))
    if plan.record is not None:  # a fixture of failures would replay them as if they were the agent's results
        if result.not_the_agents_fault:
            result.fixture_refused = refuse_fixture(plan.record, result.not_the_agents_fault, len(result.trajectories))
        else:
            finish_fixture(plan.record, plan.out)
            result.fixture = plan.record
    return result


def run_evaluation(
    plan: RunPlan,
    *,
    on_start: Callable[[int, int], None] = lambda to_run, finished: None,
    on_done: Callable[[Trajectory], None] = lambda t: None,
) -> RunResult:
    """`run_evaluation_async` from synchronous code (a script, a notebook cell without a running loop)."""
    return anyio.run(lambda: run_evaluation_async(plan, on_start=on_start, on_done=on_done))
