"""Many simulations of a run, run concurrently, each result appended to the run directory the moment it finishes."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable
from pathlib import Path

import anyio

from ..agents import Agent
from ..llm import Cassette, use_cassette
from ..orchestrator import SimulationLimits, run_simulation, simulation_id
from ..tasks import Task
from ..trajectory import TRAJECTORIES_FILE, Trajectory, TrajectoryWriter
from ..users import UserSimulator
from ..world import ToolSession, World, episode_id_for, open_run_gateway, open_world
from ._config import RunConfig
from ._files import RUN_FILE, read_run_metadata, write_run_metadata


def record_server(run_dir: Path, world: World, make_user: Callable[[], UserSimulator] | None = None) -> None:
    """Put the connected server's identity (version, snapshot, image id if a container, tool contract)
    and the user simulator's in run.json."""
    run_file = run_dir / RUN_FILE
    if not run_file.exists():
        return
    metadata = read_run_metadata(run_dir)
    metadata.server[world.domain.name] = world.info.model_dump(mode="json")
    if world.info.tool_contract is not None:
        metadata.tool_contracts[world.domain.name] = world.info.tool_contract
    if make_user is not None:
        metadata.user_simulator = make_user().identity().model_dump(mode="json", exclude_none=True)
    write_run_metadata(run_dir, metadata)


class RunHooks:
    """What record and replay change about a run; the defaults are a plain live run."""

    def world(self, config: RunConfig):
        return open_world(config.domain, servers=config.servers, snapshot_dir=Path(config.snapshot),
                          toolset=config.toolset)

    def cassette(self, simulation_id: str) -> Cassette | None:
        return None

    def episode(self, world: World, task: Task, trial: int, episode_id: str) -> ToolSession | None:
        return None

    def agent(self, task: Task, trial: int, make_agent: Callable[[], Agent]) -> Agent:
        return make_agent()

    def finished(self, trajectory: Trajectory, world: World) -> None:
        return None


async def execute_run(
    config: RunConfig,
    tasks: list[Task],
    run_dir: Path,
    *,
    make_agent: Callable[[], Agent],
    make_user: Callable[[], UserSimulator],
    concurrency: int,
    finished: set[str],
    on_done: Callable[[Trajectory], None] = lambda t: None,
    on_start: Callable[[int], None] = lambda n: None,
    hooks: RunHooks | None = None,
    retry_infra: int = 0,
) -> list[Trajectory]:
    """Run every (task, trial) not in `finished`; returns the new trajectories in completion order.

    A simulation that ends in an infrastructure error (server gone, LLM provider down) is run again
    from the start, in a fresh episode, up to `retry_infra` times; only its last attempt is written.
    Before that, at the call level, a read-only tool call (`readOnlyHint`) whose transport failed is
    resent up to `retry_infra` times; a call to any other tool is never resent (it may have acted).
    """
    hooks = hooks or RunHooks()
    work = [(task, trial) for task in tasks for trial in range(config.trials)
            if simulation_id(task.id, trial) not in finished]
    on_start(len(work))
    results: list[Trajectory] = []
    limits = SimulationLimits(config.max_steps, config.max_tool_errors, config.one_tool_per_turn)
    writer = TrajectoryWriter(run_dir / TRAJECTORIES_FILE)
    limiter = anyio.CapacityLimiter(max(1, concurrency))
    # random, so no other program can name this run's episodes on a server it reaches (docs/servers.md)
    run_tag = "r" + secrets.token_hex(8)
    needs_gateway = bool(work) and hooks.agent(*work[0], make_agent).uses_gateway
    try:
        async with hooks.world(config) as world, contextlib.AsyncExitStack() as stack:
            record_server(run_dir, world, make_user)
            world.read_only_retries = retry_infra  # a read-only call is resent after a transport failure
            gateway = await stack.enter_async_context(open_run_gateway(world)) if needs_gateway else None

            async def attempt(task: Task, trial: int, number: int) -> Trajectory:
                parts = (run_tag, task.id, str(trial)) + ((f"retry{number}",) if number else ())
                episode_id = episode_id_for(*parts)  # a retry never reuses the failed attempt's database
                episode = hooks.episode(world, task, trial, episode_id) or world.episode(episode_id)
                with use_cassette(hooks.cassette(simulation_id(task.id, trial))):
                    return await run_simulation(task, trial, config.seed, hooks.agent(task, trial, make_agent),
                                                make_user(), world, limits, run_tag, episode, gateway)

            async def one(task: Task, trial: int) -> None:
                async with limiter:
                    for number in range(retry_infra + 1):
                        trajectory = await attempt(task, trial, number)
                        if not is_retryable(trajectory) or number == retry_infra:
                            break
                        await world.recover()  # restart the server if it died
                    if number:
                        trajectory.timing["attempts"] = number + 1
                    hooks.finished(trajectory, world)
                    await writer.append(trajectory)
                    results.append(trajectory)
                    on_done(trajectory)

            async with anyio.create_task_group() as tg:
                for task, trial in work:
                    tg.start_soon(one, task, trial)
    finally:
        writer.close()
    return results


def is_retryable(trajectory: Trajectory) -> bool:
    """Infrastructure failures are retried; a replay mismatch is a finding, never retried."""
    return trajectory.termination.blame == "infrastructure" and trajectory.termination.reason != "replay_mismatch"


