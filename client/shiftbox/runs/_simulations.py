"""One job's simulations: the world (and gateway) opened for it, each simulation run with its infrastructure
retries, the server identities put in run.json. The same in this process and in a worker process or Ray actor;
`_execute` decides where they run."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ..agents import Agent
from ..llm import Cassette, LlmGate, use_cassette, use_llm_gate
from ..orchestrator import SimulationLimits, run_simulation, simulation_id
from ..tasks import Task
from ..trajectory import ServerInfo, Trajectory
from ..users import UserSimulator
from ..world import CrossWorld, ToolSession, World, episode_id_for, open_world
from ._config import RunConfig
from ._dispatch import lost_trajectory
from ._files import RUN_FILE, read_run_metadata, write_run_metadata


def record_server(run_dir: Path, world: World | CrossWorld,
                  make_user: Callable[[], UserSimulator] | None = None) -> None:
    """Put the connected servers' identity (version, snapshot, image id if a container, tool contract)
    and the user simulator's in run.json."""
    record_server_info(run_dir, world.servers, make_user)


def record_server_info(run_dir: Path, servers: dict[str, ServerInfo],
                       make_user: Callable[[], UserSimulator] | None = None) -> None:
    """`record_server` from the servers' identities alone (domain -> identity, what a Ray actor sends back to the
    driver); run.json is read and written once, whatever the number of domains."""
    run_file = run_dir / RUN_FILE
    if not run_file.exists():
        return
    metadata = read_run_metadata(run_dir)
    for domain, info in servers.items():
        metadata.server[domain] = info.model_dump(mode="json")
        if info.tool_contract is not None:
            metadata.tool_contracts[domain] = info.tool_contract
    if make_user is not None:
        metadata.user_simulator = make_user().identity().model_dump(mode="json", exclude_none=True)
    write_run_metadata(run_dir, metadata)


class RunHooks:
    """What record and replay change about a run; the defaults are a plain live run."""

    sync_each_trajectory = True
    """fsync trajectories.jsonl after every trajectory (`--resume` goes on from what is on disk); when False, once at
    the end (a replay, which is never resumed: a sync blocks every simulation of the process while the disk works)."""

    def world(self, config: RunConfig):
        return open_world(config.domain, servers=config.servers, snapshot_dir=Path(config.snapshot),
                          toolset=config.toolset, dependency_graph=config.dependency_graph,
                          graph_refusal=config.graph_refusal)

    def cassette(self, simulation_id: str) -> Cassette | None:
        return None

    def episode(self, world: World, task: Task, trial: int, episode_id: str) -> ToolSession | None:
        return None

    def agent(self, task: Task, trial: int, make_agent: Callable[[], Agent]) -> Agent:
        return make_agent()

    def finished(self, trajectory: Trajectory, world: World) -> None:
        return None


@dataclass(frozen=True)
class SimulationJob:
    """What a run's simulations need, the same in this process and in a worker process (so it pickles)."""

    config: RunConfig
    work: list[tuple[Task, int]]
    make_agent: Callable[[], Agent]
    make_user: Callable[[], UserSimulator]
    hooks: RunHooks
    retry_infra: int
    run_tag: str
    llm_gate: LlmGate | None = None  # --max-llm-concurrency, shared by every worker of the run

    def lost(self, index: int, attempt: int, why: str) -> Trajectory:
        """The trajectory written for `work[index]` when its worker died on its last allowed attempt."""
        return lost_trajectory(self.work, self.config.seed, self.config.agent, self.config.user, index, attempt, why)


@dataclass(frozen=True)
class Simulations:
    """The world open for a job: call it as `simulate(task, trial, first_attempt=0)`."""

    world: World
    simulate: Callable[..., Awaitable[Trajectory]]

    async def __call__(self, task: Task, trial: int, first_attempt: int = 0) -> Trajectory:
        return await self.simulate(task, trial, first_attempt)


@contextlib.asynccontextmanager
async def open_simulations(job: SimulationJob, run_dir: Path | None,
                           world: World | CrossWorld | None = None) -> AsyncIterator[Simulations]:
    """The world (and the gateway, for agents that need one) open for the job (`world` when the caller holds one
    open, else the one `hooks.world` opens); yields `simulate(task, trial,
    first_attempt=0)`, which runs one simulation with its infrastructure retries (attempts `first_attempt` to
    `retry_infra`: a driver hands a simulation whose worker died to another as its next attempt). The server's
    identity goes to `run_dir`'s run.json."""
    hooks, retry_infra = job.hooks, job.retry_infra
    limits = SimulationLimits(job.config.max_steps, job.config.max_tool_errors, job.config.one_tool_per_turn,
                              give_policy=job.config.policy == "domain")
    needs_gateway = bool(job.work) and hooks.agent(*job.work[0], job.make_agent).uses_gateway
    opened = contextlib.nullcontext(world) if world is not None else hooks.world(job.config)
    async with opened as world, contextlib.AsyncExitStack() as stack:
        if run_dir is not None:
            record_server(run_dir, world, job.make_user)
        world.read_only_retries = retry_infra  # a read-only call is resent after a transport failure
        gateway = None
        if needs_gateway:  # the gateway speaks MCP: the SDK is loaded for it only
            from ..world import open_run_gateway

            gateway = await stack.enter_async_context(open_run_gateway(world))

        async def attempt(task: Task, trial: int, number: int) -> Trajectory:
            parts = (job.run_tag, task.id, str(trial)) + ((f"retry{number}",) if number else ())
            episode_id = episode_id_for(*parts)  # a retry never reuses the failed attempt's database
            episode = hooks.episode(world, task, trial, episode_id) or world.episode(episode_id)
            with use_cassette(hooks.cassette(simulation_id(task.id, trial))), use_llm_gate(job.llm_gate):
                return await run_simulation(task, trial, job.config.seed, hooks.agent(task, trial, job.make_agent),
                                            job.make_user(), world, limits, job.run_tag, episode, gateway)

        async def simulate(task: Task, trial: int, first_attempt: int = 0) -> Trajectory:
            for number in range(first_attempt, retry_infra + 1):
                trajectory = await attempt(task, trial, number)
                if not is_retryable(trajectory) or number == retry_infra:
                    break
                await world.recover()  # restart the server if it died
            if number:
                trajectory.timing["attempts"] = number + 1
            hooks.finished(trajectory, world)
            return trajectory

        yield Simulations(world, simulate)


def is_retryable(trajectory: Trajectory) -> bool:
    """Infrastructure failures are retried; a replay mismatch is a finding, never retried."""
    return trajectory.termination.blame == "infrastructure" and trajectory.termination.reason != "replay_mismatch"


