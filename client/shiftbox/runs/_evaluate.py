"""Executing a `RunPlan`: the run directory prepared (or reopened with resume), every missing simulation run,
the fixture finished when recording; what `shiftbox run` does between its checks and its summary.

`--resume` also runs again every simulation that ended because the agent program did not run or the
infrastructure failed (after a fixed key, a restarted server): their lines leave trajectories.jsonl first.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio

from ..trajectory import TRAJECTORIES_FILE, Trajectory, read_trajectories
from ._execute import execute_run
from ._files import prepare_run_dir
from ._plan import RunPlan
from ._record import RecordHooks, finish_fixture, refuse_fixture
from ._simulations import is_retryable

T = TypeVar("T")


@dataclass
class RunResult:
    """A finished run: every trajectory in its directory (earlier ones too, when resumed)."""

    out: Path
    trajectories: list[Trajectory]
    resumed: int
    fixture: Path | None = None
    rerun: int = 0
    """Simulations `--resume` ran again (they had ended in an agent program or infrastructure failure)."""
    fixture_refused: str | None = None
    """Why `--record`'s fixture was not finished (simulations that failed for reasons not the agent's), or None."""

    @property
    def not_the_agents_fault(self) -> list[Trajectory]:
        """Simulations that ended for a reason not the agent's (user simulator or infrastructure)."""
        return [t for t in self.trajectories if t.termination.blame in ("user", "infrastructure")]

    @property
    def agent_program_failures(self) -> list[Trajectory]:
        """Simulations that ended because the agent program did not run (not scored), in file order."""
        return [t for t in self.trajectories if t.termination.blame == "agent_program"]


def runs_again(trajectory: Trajectory) -> bool:
    """What `--resume` runs again: the agent program did not run, or an infrastructure failure (retryable)."""
    return trajectory.termination.blame == "agent_program" or is_retryable(trajectory)


def drop_failed(run_dir: Path) -> list[str]:
    """Take the simulations `--resume` runs again out of trajectories.jsonl (rewritten whole, then renamed: a crash
    leaves the old file or the new one); returns their ids, sorted."""
    path = run_dir / TRAJECTORIES_FILE
    trajectories = read_trajectories(run_dir)
    failed = {t.simulation_id for t in trajectories if runs_again(t)}
    if not failed:
        return []
    kept = [line for line, t in zip([ln for ln in path.read_bytes().splitlines(keepends=True) if ln.strip()],
                                    trajectories, strict=True) if t.simulation_id not in failed]
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        f.writelines(kept)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    return sorted(failed)


async def run_evaluation_async(
    plan: RunPlan,
    *,
    on_start: Callable[[int, int], None] = lambda to_run, finished: None,
    on_done: Callable[[Trajectory], None] = lambda t: None,
    on_rerun: Callable[[list[str]], None] = lambda ids: None,
) -> RunResult:
    """Run the plan; `on_start(to_run, already_finished)` once, `on_done(trajectory)` as each one is written;
    when resuming, `on_rerun(ids)` after it with the failed simulations run again (`runs_again`), if any.

    Raises RunDirError / RunFileError / OutputPathError for an --out (or --record) that does not fit, SnapshotError,
    DockerError and ToolContractError for servers that cannot serve the run; RunPlanError for a plan whose caller
    brings the agent (`ExternalAgent`: that caller runs its simulations).
    """
    if plan.external_agent:
        plan.make_agent()  # raises, naming the problem
    # the fixture's folders first: one that cannot be made leaves no run directory in the way of the next command
    hooks = RecordHooks(plan.record, plan.llm_cassettes) if plan.record is not None else None
    finished = prepare_run_dir(plan.out, plan.metadata, plan.task_file, plan.resume)
    rerun = drop_failed(plan.out) if plan.resume else []
    finished -= set(rerun)

    def started(to_run: int) -> None:
        on_start(to_run, len(finished))
        if rerun:
            on_rerun(rerun)

    written = plan.out / TRAJECTORIES_FILE
    earlier = written.exists() and written.stat().st_size > 0
    new = await execute_run(plan.config, plan.tasks, plan.out, plan.options, make_agent=plan.make_agent,
                            make_user=plan.make_user, finished=finished, on_start=started, on_done=on_done,
                            hooks=hooks)
    # the file holds what was there before (read back) and then the new trajectories, in the order written
    result = RunResult(plan.out, read_trajectories(plan.out) if earlier else new, len(finished), rerun=len(rerun))
    if plan.record is not None:  # a fixture of failures would replay them as if they were the agent's results
        failed = result.not_the_agents_fault + result.agent_program_failures
        if failed:
            result.fixture_refused = refuse_fixture(plan.record, failed, len(result.trajectories))
        else:
            finish_fixture(plan.record, plan.out, result.trajectories)
            result.fixture = plan.record
    return result


def run_evaluation(
    plan: RunPlan,
    *,
    on_start: Callable[[int, int], None] = lambda to_run, finished: None,
    on_done: Callable[[Trajectory], None] = lambda t: None,
    on_rerun: Callable[[list[str]], None] = lambda ids: None,
) -> RunResult:
    """`run_evaluation_async` from synchronous code (a script, a notebook cell without a running loop)."""
    return run_sync(lambda: run_evaluation_async(plan, on_start=on_start, on_done=on_done, on_rerun=on_rerun))


def run_sync(run: Callable[[], Awaitable[T]]) -> T:
    """`anyio.run(run)`, its result handed over beside the event loop's main task rather than as that task's result:
    Python 3.11's asyncio runner formats that task with its result (every trajectory) as it restores the main
    thread's Ctrl-C handler, twice, for nothing."""
    result: list[T] = []

    async def main() -> None:
        result.append(await run())

    anyio.run(main)
    return result[0]
