"""Many simulations of a run, run concurrently, each result appended to the run directory the moment it finishes."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

import anyio

from ..agents import Agent
from ..llm import LlmGate, LocalLlmGate, ProcessLlmGate
from ..orchestrator import simulation_id
from ..tasks import Task
from ..trajectory import TRAJECTORIES_FILE, Trajectory, TrajectoryWriter
from ..users import UserSimulator
from ._config import ExecutionOptions, RunConfig
from ._simulations import RunHooks, SimulationJob, open_simulations


async def execute_run(
    config: RunConfig,
    tasks: list[Task],
    run_dir: Path,
    options: ExecutionOptions,
    *,
    make_agent: Callable[[], Agent],
    make_user: Callable[[], UserSimulator],
    finished: set[str],
    on_done: Callable[[Trajectory], None] = lambda t: None,
    on_start: Callable[[int], None] = lambda n: None,
    hooks: RunHooks | None = None,
) -> list[Trajectory]:
    """Run every (task, trial) not in `finished`, as `options` says; returns the new trajectories in completion order.

    A simulation that ends in an infrastructure error (server gone, LLM provider down) is run again
    from the start, in a fresh episode, up to `options.retry_infra` times; only its last attempt is written.
    Before that, at the call level, a read-only tool call (`readOnlyHint`) whose transport failed is
    resent up to `retry_infra` times; a call to any other tool is never resent (it may have acted).

    Executor "processes" runs the simulations in `workers` processes of this machine (`_workers`), "ray" in
    `workers` Ray actors (`_ray`; on the cluster at `ray_address`, or a local one started for the run), with
    `concurrency` shared between them; this process stays the one writer of trajectories.jsonl, and a worker
    that dies fails only its in-flight simulations, as infrastructure errors retried under `retry_infra`
    (`_dispatch`). `make_agent`, `make_user` and `hooks` must then pickle.

    `max_llm_concurrency` caps the live LLM calls in flight in all of them together, with the gate that fits the
    executor (`LocalLlmGate`, `ProcessLlmGate`, `RayLlmGate`); a replayed call takes no slot.
    """
    concurrency = options.concurrency
    work = [(task, trial) for task in tasks for trial in range(config.trials)
            if simulation_id(task.id, trial) not in finished]
    on_start(len(work))
    job = SimulationJob(config, work, make_agent, make_user, hooks or RunHooks(), options.retry_infra,
                        # random, so no other program can name this run's episodes on a server it reaches
                        # (docs/servers.md)
                        run_tag="r" + secrets.token_hex(8),
                        llm_gate=_llm_gate(options))
    results: list[Trajectory] = []
    writer = TrajectoryWriter(run_dir / TRAJECTORIES_FILE, sync_each=job.hooks.sync_each_trajectory)

    async def write(trajectory: Trajectory) -> None:
        # A run that is stopping (another simulation's write failed, an interrupt) writes nothing more: its
        # cancellation arrives here even for a simulation that never waited (scripted roles, in-process servers).
        await anyio.lowlevel.checkpoint()
        await writer.append(trajectory)
        results.append(trajectory)
        on_done(trajectory)

    try:
        workers = max(1, min(options.workers or 1, concurrency, len(work)))
        if options.executor == "processes":
            from ._workers import run_in_processes  # the process machinery only when asked for
            await run_in_processes(job, run_dir, workers, concurrency, write)
        elif options.executor == "ray":
            from ._ray import run_on_ray  # imports Ray (optional) only when asked for
            await run_on_ray(job, run_dir, workers, write, options)
        else:
            async with open_simulations(job, run_dir) as simulate:
                limiter = anyio.CapacityLimiter(max(1, concurrency))

                async def one(task: Task, trial: int) -> None:
                    async with limiter:
                        await write(await simulate(task, trial))

                async with anyio.create_task_group() as tg:
                    for task, trial in work:
                        tg.start_soon(one, task, trial)
    finally:
        writer.close()
    return results


def _llm_gate(options: ExecutionOptions) -> LlmGate | None:
    """The gate for `--max-llm-concurrency` on this machine (Ray's is made once connected, in `_ray`)."""
    limit = options.max_llm_concurrency
    if limit is None or options.executor == "ray":
        return None
    return ProcessLlmGate(limit) if options.executor == "processes" else LocalLlmGate(limit)
