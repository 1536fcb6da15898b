"""A run's simulations as calls to Ray actors (`shiftbox run --executor ray`), on one machine or a cluster.

Each actor holds a warm world: its own domain servers (as `--servers` says, on its own node, so an episode's
database never crosses the network), opened at its first simulation. The driver (this process) hands out the
simulations (`_dispatch`) and stays the one writer of trajectories.jsonl and run.json. An actor that dies fails
only its in-flight simulations, as infrastructure errors retried under `--retry-infra`; Ray restarts it, and
never re-sends a call on its own (`max_task_retries=0`), so no tool call is replayed behind the run's back.
Ray is imported only here, and only when this executor runs (`shiftbox[ray]`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

from .._text import first_line
from ..cluster import import_ray, local_ray_cluster
from ..errors import RunWorkerError
from ..llm import RayLlmGate
from ..orchestrator import simulation_id
from ..trajectory import ServerInfo, Trajectory
from ._config import default_workers
from ._dispatch import Dispatch, Slot, WorkerLost
from ._simulations import SimulationJob, Simulations, open_simulations, record_server_info
from ._workers import RunSurroundings, concurrency_shares


class SimulationActor:
    """A Ray actor's state: the job, and the world it opens for the job at its first simulation (kept open in a
    task of its own, so the world's task groups are entered and left in one task)."""

    def __init__(self, job: SimulationJob, surroundings: RunSurroundings):
        self.job = job
        surroundings.fill_in()  # the driver's directory and the variables this node lacks (an API key)
        self._world: asyncio.Future | None = None
        self._closing = asyncio.Event()
        self._closed = asyncio.Event()

    async def _simulations(self) -> Simulations:
        if self._world is None:
            self._world = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().create_task(self._hold())
        return await asyncio.shield(self._world)

    async def _hold(self) -> None:
        assert self._world is not None
        try:
            async with open_simulations(self.job, None) as simulations:
                self._world.set_result(simulations)
                await self._closing.wait()
        except BaseException as exc:  # noqa: BLE001 - given to every caller waiting for the world
            if not self._world.done():
                self._world.set_exception(exc)
        finally:
            self._closed.set()

    async def simulate(self, index: int, attempt: int) -> Trajectory:
        simulate = await self._simulations()
        return await simulate(*self.job.work[index], attempt)

    async def server(self) -> dict[str, ServerInfo]:
        """Domain -> its server's identity (several in a cross-domain run), for the driver's run.json."""
        return (await self._simulations()).world.servers

    async def close(self) -> None:
        """Close the world (its servers end with it)."""
        if self._world is not None:
            self._closing.set()
            await self._closed.wait()



@functools.cache
def actor_class(ray: Any) -> Any:
    """`SimulationActor` as a Ray actor class; Ray neither restarts it nor re-sends a call to it (the run replaces
    a dead actor itself, and retries only whole simulations, in fresh episodes)."""
    return ray.remote(max_restarts=0, max_task_retries=0)(SimulationActor)


async def run_on_ray(job: SimulationJob, run_dir: Path, workers: int, concurrency: int,
                     write: Callable[[Trajectory], Awaitable[None]], address: str | None,
                     max_llm_concurrency: int | None = None) -> None:
    """Run `job.work` on `workers` Ray actors (`concurrency` shared between them); `write` each trajectory here.
    With `max_llm_concurrency`, the actors share a `RayLlmGate`; a dead actor's slots are freed."""
    ray = import_ray()
    dispatch = Dispatch(len(job.work), job.retry_infra, job.lost, write)
    shares = concurrency_shares(concurrency, workers)
    with connected(ray, address, workers):
        if max_llm_concurrency is not None:
            job = dataclasses.replace(job, llm_gate=RayLlmGate(max_llm_concurrency))
        # sent once; held here for as long as actors may start
        job_ref, surroundings = ray.put(job), ray.put(RunSurroundings.of_this_process())
        members = [_Member(functools.partial(actor_class(ray).options(max_concurrency=share + 1).remote, job_ref,
                                             surroundings)) for share in shares]
        try:
            try:
                servers = await members[0].handle.server.remote()
            except ray.exceptions.RayTaskError as exc:
                raise _cause(exc) from None
            except ray.exceptions.RayActorError as exc:  # before any simulation: nothing to fail but the run
                raise RunWorkerError(f"the Ray actor ended unexpectedly while opening its servers ({_why(exc)}); "
                                     "nothing was lost: run the same command again with --resume") from None
            record_server_info(run_dir, servers, job.make_user)
            slots = [_slot(ray, job, member) for member, share in zip(members, shares, strict=True)
                     for _ in range(share)]
            await dispatch.run(slots)
        finally:
            with anyio.CancelScope(shield=True):
                await _close(ray, [member.handle for member in members])
                if isinstance(job.llm_gate, RayLlmGate):  # its slot keeper, which would outlive the run
                    with contextlib.suppress(Exception):
                        ray.kill(job.llm_gate.actor)
    dispatch.raise_failure()


class _Member:
    """A place for an actor in the run. When its actor dies, the place gets a fresh actor (a new process, a new
    world) for the simulations sent after; only what the dead one had in flight fails."""

    def __init__(self, new_actor: Callable[[], Any]):
        self.new_actor = new_actor
        self.handle = new_actor()

    def lost(self, handle: Any) -> None:
        if handle is self.handle:  # the first of its in-flight calls to fail replaces it
            self.handle = self.new_actor()


def _slot(ray: Any, job: SimulationJob, member: _Member) -> Slot:
    async def run(index: int, attempt: int) -> Trajectory:
        handle = member.handle
        try:
            return await handle.simulate.remote(index, attempt)
        except ray.exceptions.RayActorError as exc:  # its process died (killed, out of memory, node lost)
            member.lost(handle)
            if isinstance(job.llm_gate, RayLlmGate):  # Ray does not tell the slot keeper an actor died
                await job.llm_gate.release_slots_of(handle._actor_id.hex())
            task, trial = job.work[index]
            raise WorkerLost(f"Ray actor ended unexpectedly while running {simulation_id(task.id, trial)}: "
                             f"{_why(exc)}") from None
        except ray.exceptions.RayTaskError as exc:
            raise _cause(exc) from None
    return run


def _why(exc: BaseException) -> str:
    """What Ray says of a dead actor, on one line."""
    return first_line(str(exc), 300) or type(exc).__name__


def _cause(exc: Any) -> BaseException:
    """The exception the actor raised, as it was raised there (so the run fails as it would in one process)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else RunWorkerError(f"a Ray actor failed: {exc}")


async def _close(ray: Any, actors: list[Any]) -> None:
    """Close each actor's world (its servers end), then the actors; a dead or stuck one is killed."""
    refs = [actor.close.remote() for actor in actors]
    with contextlib.suppress(Exception), anyio.move_on_after(10):
        await asyncio.gather(*refs, return_exceptions=True)
    for actor in actors:
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)


@contextlib.contextmanager
def connected(ray: Any, address: str | None, workers: int) -> Iterator[None]:
    """Connected to the cluster at `address`, or to a local one started now (and stopped after) with a CPU for
    every worker; a Ray already initialized in this process is used as it is and left running."""
    with contextlib.ExitStack() as stack:
        if not ray.is_initialized():
            if address is None:
                stack.enter_context(local_ray_cluster(max(workers, default_workers())))
            else:
                ray.init(address=address, log_to_driver=False)
                stack.callback(ray.shutdown)
        cpus = ray.cluster_resources().get("CPU", 0)
        if cpus < workers:
            raise RunWorkerError(f"the Ray cluster has {cpus:g} CPUs, fewer than --workers {workers} (each worker is "
                                 "an actor taking one CPU): lower --workers or add nodes")
        yield
