"""A run's simulations as calls to Ray actors (`shiftbox run --executor ray`), on one machine or a cluster.

Each actor holds a warm world: its own domain servers (as `--servers` says, on its own node, so an episode's
database never crosses the network), opened at its first simulation. The driver (this process) hands out the
simulations (`_dispatch`) and stays the one writer of trajectories.jsonl and run.json. An actor that dies fails
only its in-flight simulations, as infrastructure errors retried under `--retry-infra`; Ray restarts it, and
never re-sends a call on its own (`max_task_retries=0`), so no tool call is replayed behind the run's back.
Each actor reserves `--worker-cpus` CPUs (and `--worker-memory-mb`) on its node for the whole run, and the actors
are spread across the nodes (Ray's SPREAD strategy); a cluster without room for every actor is refused before any
starts. Before any simulation, every actor checks its node (`preflight`: the snapshots there, the same as the
driver's, and a writable temporary directory) and the run stops naming each node that fails and the fix. A
fixture (`--record`) is recorded on each actor's own disk and shipped to the driver, which writes it: the nodes
need not share a file system. With `--ray-keep-actors`, the actors outlive the run (`KeptActor`: detached, named by
the code they run, leased to one run at a time, which gives back its world, variables and directory at its end) and
the next runs on the cluster lease them instead of starting their own. Without it, a run on a cluster that outlives it
has the raylets prestart one idle worker per actor as it ends (`prestart_workers`), which imports the harness as it
starts (`actor_runtime_env`), and in which the next run's actors start. A run that connected to a cluster, and whose
caller exits next (`ExecutionOptions.leave_cluster_in_background`, as `shiftbox run`), leaves it in a thread, joined by
the process's exit and the next connection (`_disconnect`), not before it returns. Ray is imported
only here, and only when this executor runs (`shiftbox[ray]`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

from shiftbox_servers.kit import Snapshot, SnapshotError

from .._text import first_line
from .._versions import distribution_version, installed_code_digest
from ..cluster import connect_ray, import_ray, local_ray_cluster
from ..errors import RunWorkerError
from ..llm import RayLlmGate, forget_api_keys
from ..orchestrator import simulation_id
from ..trajectory import ServerInfo, Trajectory
from ._config import ExecutionOptions, default_workers
from ._dispatch import Dispatch, Slot, WorkerLost
from ._record import RecordHooks
from ._simulations import SimulationJob, Simulations, open_simulations, record_server_info
from ._workers import RunSurroundings, concurrency_shares


class SimulationActor:
    """A Ray actor's state: the job, and the world it opens for the job at its first simulation (kept open in a
    task of its own, so the world's task groups are entered and left in one task)."""

    def __init__(self, job: SimulationJob, surroundings: RunSurroundings):
        self._begin(job, surroundings)

    def _begin(self, job: SimulationJob, surroundings: RunSurroundings) -> None:
        """Take on the run: its surroundings, its job, and no world yet."""
        surroundings.fill_in()  # the driver's directory and the variables this node lacks (an API key)
        self._scratch: Path | None = None
        if isinstance(job.hooks, RecordHooks):  # recorded on this node's disk, shipped to the driver
            self._scratch = Path(tempfile.mkdtemp(prefix="shiftbox-record-"))
            job = dataclasses.replace(job, hooks=job.hooks.elsewhere(self._scratch))
        self.job = job
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

    async def simulate(self, index: int, attempt: int, run: str | None = None) -> tuple[Trajectory, dict[str, bytes]]:
        """The simulation's trajectory and, when recording, its recorded files (for the driver to write). `run`, in
        this and the other calls, is the run's lease, which only a kept actor checks (`KeptActor`)."""
        simulate = await self._simulations()
        trajectory = await simulate(*self.job.work[index], attempt)
        hooks = self.job.hooks
        return trajectory, hooks.take(trajectory.simulation_id) if isinstance(hooks, RecordHooks) else {}

    def preflight(self, snapshots: dict[str, str], run: str | None = None) -> list[str]:
        """What keeps this node from running the job (each snapshot directory -> the sha256 the driver has), each
        problem naming the node and the fix; none when it is ready."""
        ray = import_ray()
        node_id = ray.get_runtime_context().get_node_id()
        about = next((n for n in ray.nodes() if n["NodeID"] == node_id), {})
        node = f"node {about.get('NodeName') or about.get('NodeManagerAddress', '?')} (id {node_id[:12]})"
        problems = []
        for directory, sha256 in sorted(snapshots.items()):
            try:
                found = Snapshot.load(directory).manifest.sha256
            except (SnapshotError, OSError) as exc:
                problems.append(f"{node}: {exc} (the snapshot must be at the same path on every node: build it there "
                                "with `shiftbox snapshots build`, or put it on a shared file system)")
                continue
            if sha256 and found != sha256:
                problems.append(f"{node}: the snapshot {directory} there has sha256 {found[:12]}…, the driver's "
                                f"{sha256[:12]}…; build the same snapshot on every node (`shiftbox snapshots build`)")
        try:
            with tempfile.TemporaryFile() as probe:
                probe.write(b"shiftbox")
        except OSError as exc:
            problems.append(f"{node}: cannot write its temporary directory {tempfile.gettempdir()} ({exc}); free "
                            "space there or set TMPDIR on that node to a writable directory")
        return problems

    async def server(self, run: str | None = None) -> dict[str, ServerInfo]:
        """Domain -> its server's identity (several in a cross-domain run), for the driver's run.json."""
        return (await self._simulations()).world.servers

    def node_id(self) -> str:
        """The id of the Ray node this actor runs on (where the run prestarts a worker for the next run)."""
        return import_ray().get_runtime_context().get_node_id()

    async def close(self, run: str | None = None) -> None:
        """Close the world (its servers end with it), and remove the recording scratch directory."""
        if self._world is not None:
            self._closing.set()
            await self._closed.wait()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)



class LeaseLost(RuntimeError):
    """A call to a kept actor from a run whose lease has lapsed (or ended): the actor may serve another run now."""


class KeptActor(SimulationActor):
    """A simulation actor that outlives runs (`--ray-keep-actors`): detached, named for the code it runs
    (`kept_name`), it serves one run at a time under a lease. The run's calls (and its driver's `renew`, every
    `LEASE_S / 4`) renew the lease; one not renewed for `LEASE_S` lapses (its driver is gone), and the run ends as a
    released one does: its simulations cancelled, its world closed, the environment variables and working
    directory it gave the actor restored and the values that hold its API key dropped (`forget_api_keys`: no key
    stays for the next run). Idle `idle_s`, the actor exits."""

    def __init__(self, idle_s: float):
        self.code, self.runs, self._idle_s = installed_code_digest(), 0, idle_s  # the code this node runs
        self._holder: str | None = None  # the run holding the lease
        self._renewed = self._used = time.monotonic()
        self._lease_s = LEASE_S
        self._saved: RunSurroundings | None = None  # this actor's own, while a run's are taken on
        self._in_flight: set[asyncio.Task] = set()
        self._turn = asyncio.Lock()  # a lease taken or ended at a time
        self._watchdog: asyncio.Task | None = None

    async def lease(self, run: str, code: str, job: SimulationJob, surroundings: RunSurroundings, lease_s: float,
                    idle_s: float) -> str:
        """"leased" (the actor is `run`'s until it releases it or the lease lapses), or "busy" (another run's)."""
        if code != self.code:  # the name says the driver's code; the node runs its own installed code
            raise RunWorkerError(f"a kept Ray actor runs shiftbox code {self.code[:12]}…, this driver {code[:12]}…: "
                                 "install the same shiftbox on every node and the driver's machine")
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch())
        async with self._turn:
            if self._holder is not None and not self._lapsed():
                return "busy"
            if self._holder is not None:
                await self._end()
            self._saved = RunSurroundings.of_this_process()
            self._holder, self._lease_s, self._idle_s, self._renewed = run, lease_s, idle_s, time.monotonic()
            self._begin(job, surroundings)
            self.runs += 1
            return "leased"

    def renew(self, run: str | None) -> None:
        """Keep `run`'s lease (raises `LeaseLost` when it has lapsed or ended)."""
        if run is None or run != self._holder or self._lapsed():
            raise LeaseLost(f"the kept Ray actor's lease for this run lapsed (no call for over {self._lease_s:g} s) "
                            "or ended; the actor may serve another run now")
        self._renewed = time.monotonic()

    async def simulate(self, index: int, attempt: int, run: str | None = None) -> tuple[Trajectory, dict[str, bytes]]:
        self.renew(run)
        task = asyncio.current_task()
        assert task is not None
        self._in_flight.add(task)
        try:
            return await super().simulate(index, attempt)
        except asyncio.CancelledError:
            if self._holder == run:
                raise
            raise LeaseLost("the kept Ray actor's lease for this run lapsed during the simulation") from None
        finally:
            self._in_flight.discard(task)

    def preflight(self, snapshots: dict[str, str], run: str | None = None) -> list[str]:
        self.renew(run)
        return super().preflight(snapshots)

    async def server(self, run: str | None = None) -> dict[str, ServerInfo]:
        self.renew(run)
        return await super().server()

    async def close(self, run: str | None = None) -> None:
        """End `run`'s lease (nothing when another run holds it): the actor stays for the next run."""
        async with self._turn:
            if run is not None and run == self._holder:
                await self._end()

    def _lapsed(self) -> bool:
        return time.monotonic() - self._renewed > self._lease_s

    async def _end(self) -> None:
        """End the holder's run: cancel its simulations, close its world, restore what it changed."""
        self._holder = None  # its calls are refused from now on
        for task in list(self._in_flight):
            task.cancel()
        await SimulationActor.close(self)
        forget_api_keys()
        if self._saved is not None:
            self._saved.enter()
            self._saved = None
        self.job = None  # type: ignore[assignment]
        self._used = time.monotonic()

    async def _watch(self) -> None:
        """End a lapsed lease; exit once idle for `idle_s`."""
        while True:
            await asyncio.sleep(WATCH_S)
            if self._holder is not None and self._lapsed():
                async with self._turn:
                    if self._holder is not None and self._lapsed():
                        await self._end()
            elif self._holder is None and not self._turn.locked() and time.monotonic() - self._used > self._idle_s:
                os._exit(0)  # nothing is held (the last world closed); Ray frees the name and the CPUs


@functools.cache
def kept_actor_class(ray: Any) -> Any:
    """`KeptActor` as a Ray actor class: never restarted, never re-sent a call (as `actor_class`)."""
    return ray.remote(max_restarts=0, max_task_retries=0)(KeptActor)


def warm() -> None:
    """Nothing to do: a Ray worker that runs this as its setup hook (`actor_runtime_env`) has imported this module,
    and with it the harness, as it started, before it was given an actor."""


def actor_runtime_env(ray: Any) -> dict[str, Any]:
    """The runtime environment of a run's actors and of the workers prestarted for them (`prestart_workers`): only
    Ray's setup-hook variable, naming `warm`, so a worker imports the harness as it starts; a raylet gives a worker
    only to an actor of the same runtime environment."""
    hook = sys.modules["ray._private.ray_constants"].WORKER_PROCESS_SETUP_HOOK_ENV_VAR
    return {"env_vars": {hook: f"{__name__}.{warm.__name__}"}}


@functools.cache
def actor_class(ray: Any) -> Any:
    """`SimulationActor` as a Ray actor class; Ray neither restarts it nor re-sends a call to it (the run replaces
    a dead actor itself, and retries only whole simulations, in fresh episodes)."""
    return ray.remote(max_restarts=0, max_task_retries=0)(SimulationActor)


async def run_on_ray(job: SimulationJob, run_dir: Path, workers: int,
                     write: Callable[[Trajectory], Awaitable[None]], options: ExecutionOptions) -> None:
    """Run `job.work` on `workers` Ray actors (`options.concurrency` shared between them), each reserving
    `options.worker_cpus` CPUs and `worker_memory_mb`, spread across the nodes; `write` each trajectory here. With
    `max_llm_concurrency`, the actors share a `RayLlmGate`; a dead actor's slots are freed. With `ray_keep_actors`,
    the actors are kept ones (`KeptActor`), leased for this run and left running after it."""
    ray = import_ray()
    dispatch = Dispatch(len(job.work), job.retry_infra, job.lost, write)
    shares = concurrency_shares(options.concurrency, workers)
    memory = None if options.worker_memory_mb is None else options.worker_memory_mb * 2**20
    with connected(ray, options.ray_address, workers, options.worker_cpus, memory,
                   background=options.leave_cluster_in_background) as lasting:
        if options.max_llm_concurrency is not None:
            job = dataclasses.replace(job, llm_gate=RayLlmGate(options.max_llm_concurrency))
        # sent once; held here for as long as actors may start
        job_ref, surroundings = ray.put(job), ray.put(RunSurroundings.of_this_process())
        placed = {"num_cpus": options.worker_cpus, "scheduling_strategy": "SPREAD",
                  **({"memory": memory} if memory is not None else {})}
        run = uuid.uuid4().hex  # this run's lease on kept actors
        kept: list[Any] = []
        renewing: asyncio.Task | None = None
        # on a cluster that outlives the run, its actors start in workers the run before prestarted, with the harness
        # imported, and it prestarts the next run's; elsewhere they take the workers Ray prestarted (its own runtime
        # environment's) as the cluster started
        prestarting = lasting and options.ray_keep_actors is None
        environment = {"runtime_env": actor_runtime_env(ray)} if prestarting else {}
        if options.ray_keep_actors is None:
            firsts = [actor_class(ray).options(max_concurrency=share + 1, **environment, **placed).remote(
                job_ref, surroundings) for share in shares]
        else:
            firsts = kept = await _lease_kept(ray, run, job_ref, surroundings, placed, workers,
                                              options.ray_keep_actors)
            renewing = asyncio.get_running_loop().create_task(_renew(kept, run))
        members = [_Member(first, functools.partial(actor_class(ray).options(max_concurrency=share + 1, num_cpus=0,
                                                                             **environment).remote,
                                                    job_ref, surroundings))
                   for first, share in zip(firsts, shares, strict=True)]
        # where the actors run, asked now (answered with their start): a worker is prestarted there for the next run
        nodes = [first.node_id.remote() for first in firsts] if prestarting else []
        try:
            try:
                serving = members[0].handle.server.remote(run=run)  # its servers open while the nodes are checked
                try:
                    await _preflight(ray, job, [member.handle for member in members], run)
                except Exception:
                    with contextlib.suppress(Exception), anyio.move_on_after(10):
                        await serving  # read (Ray reports an error never read), but the run fails as the nodes say
                    raise
                servers = await serving
            except ray.exceptions.RayTaskError as exc:
                raise _cause(exc) from None
            except ray.exceptions.RayActorError as exc:  # before any simulation: nothing to fail but the run
                raise RunWorkerError(f"the Ray actor ended unexpectedly while opening its servers ({_why(exc)}); "
                                     "nothing was lost: run the same command again with --resume") from None
            record_server_info(run_dir, servers, job.make_user)
            slots = [_slot(ray, job, member, run) for member, share in zip(members, shares, strict=True)
                     for _ in range(share)]
            await dispatch.run(slots)
        finally:
            with anyio.CancelScope(shield=True):
                if renewing is not None:
                    renewing.cancel()
                await _close(ray, [member.handle for member in members], run, kept)
                if nodes:
                    await prestart_workers(ray, nodes)
                if isinstance(job.llm_gate, RayLlmGate):  # its slot keeper, which would outlive the run
                    with contextlib.suppress(Exception):
                        ray.kill(job.llm_gate.actor)
    dispatch.raise_failure()


class _Member:
    """A place for an actor in the run. When its actor dies, the place gets a fresh actor (a new process, a new
    world) for the simulations sent after; only what the dead one had in flight fails. The fresh actor reserves
    nothing: when a node is lost, its CPUs are gone, and a replacement waiting for room would wait forever."""

    def __init__(self, first_actor: Any, replacement: Callable[[], Any]):
        self.replacement = replacement
        self.handle = first_actor

    def lost(self, handle: Any) -> None:
        if handle is self.handle:  # the first of its in-flight calls to fail replaces it
            self.handle = self.replacement()


def _slot(ray: Any, job: SimulationJob, member: _Member, lease: str) -> Slot:
    async def run(index: int, attempt: int) -> Trajectory:
        handle = member.handle
        try:
            trajectory, recorded = await handle.simulate.remote(index, attempt, run=lease)
            if recorded:  # shipped from the actor's node; the driver writes the fixture
                assert isinstance(job.hooks, RecordHooks)
                job.hooks.put(recorded)
            return trajectory
        except ray.exceptions.RayActorError as exc:  # its process died (killed, out of memory, node lost)
            member.lost(handle)
            if isinstance(job.llm_gate, RayLlmGate):  # Ray does not tell the slot keeper an actor died
                await job.llm_gate.release_slots_of(handle._actor_id.hex())
            task, trial = job.work[index]
            raise WorkerLost(f"Ray actor ended unexpectedly while running {simulation_id(task.id, trial)}: "
                             f"{_why(exc)}") from None
        except ray.exceptions.RayTaskError as exc:
            if isinstance(cause := _cause(exc), LeaseLost):  # a kept actor this run no longer holds
                member.lost(handle)
                task, trial = job.work[index]
                raise WorkerLost(f"{cause} (while running {simulation_id(task.id, trial)})") from None
            raise cause from None
    return run


KEPT_NAMESPACE = "shiftbox-kept"
"""The Ray namespace of the kept actors (`--ray-keep-actors`), where `shiftbox ray-actors stop` finds them."""
LEASE_S = 30.0
"""A kept actor's lease lapses when its run has not called it for this long (its driver renews every quarter)."""
WATCH_S = 0.5
KEPT_CONCURRENCY = 1000  # a kept actor serves runs with any share of the concurrency; the run's slots bound it


def kept_name(version: str, code: str, cpus: float, memory: int | None, number: int) -> str:
    """A kept actor's name: shiftbox's version, its code's digest and what the actor reserves, so a run finds only
    actors that run its own code with its own resources; `number` tells them apart."""
    return f"shiftbox-{version}-{code[:16]}-cpu{cpus:g}-mem{memory or 0}-{number}"


def kept_actor_names(ray: Any) -> list[str]:
    """The names of the kept actors on the cluster, any version's, sorted."""
    return sorted(entry["name"] for entry in ray.util.list_named_actors(all_namespaces=True)
                  if entry["namespace"] == KEPT_NAMESPACE)


async def _lease_kept(ray: Any, run: str, job_ref: Any, surroundings: Any, placed: dict[str, Any], workers: int,
                      idle_s: int) -> list[Any]:
    """`workers` kept actors of this code leased for `run`: the idle ones there are, then fresh ones (refused,
    naming the stop command, when the cluster has no free CPUs for them); the ones another run holds are passed."""
    code = installed_code_digest()
    existing, leased, number = set(kept_actor_names(ray)), [], 0
    while len(leased) < workers:
        names = [kept_name(distribution_version("shiftbox"), code, placed["num_cpus"], placed.get("memory"), number + k)
                 for k in range(workers - len(leased))]
        number += len(names)
        fresh = [name for name in names if name not in existing]
        free = ray.available_resources().get("CPU", 0.0)
        if fresh and free + 1e-9 < len(fresh) * placed["num_cpus"]:
            raise RunWorkerError(
                f"the Ray cluster has {free:g} CPUs free, too few for {len(fresh)} more kept actors of "
                f"{placed['num_cpus']:g} CPUs (--ray-keep-actors); kept actors of other runs, versions or sizes may "
                f"hold them ({len(existing)} kept: {', '.join(sorted(existing)) or 'none'}): stop them with "
                "`shiftbox ray-actors stop --ray-address ADDRESS`, or lower --workers")
        handles = [kept_actor_class(ray).options(name=name, namespace=KEPT_NAMESPACE, lifetime="detached",
                                                 get_if_exists=True, max_concurrency=KEPT_CONCURRENCY,
                                                 **placed).remote(idle_s) for name in names]
        answers = await asyncio.gather(*(handle.lease.remote(run, code, job_ref, surroundings, LEASE_S, idle_s)
                                         for handle in handles), return_exceptions=True)
        for handle, answer in zip(handles, answers, strict=True):
            if isinstance(answer, ray.exceptions.RayTaskError):
                raise _cause(answer) from None
            if answer == "leased":
                leased.append(handle)
            # else "busy" (another run's), or it died as it was asked (its idle exit): the next name
        existing.update(names)
    return leased


async def _renew(actors: list[Any], run: str) -> None:
    """Renew the run's lease on its kept actors every `LEASE_S / 4` while the run lasts."""
    while True:
        await asyncio.sleep(LEASE_S / 4)
        await asyncio.gather(*(actor.renew.remote(run) for actor in actors), return_exceptions=True)


async def _preflight(ray: Any, job: SimulationJob, actors: list[Any], run: str) -> None:
    """Every actor checks its node before any simulation starts; raises `RunWorkerError` naming each node that
    failed (once, however many actors it holds) and the fix."""
    snapshots, here = {}, None
    for directory in job.config.snapshot.split(","):
        try:
            snapshots[directory] = Snapshot.load(directory).manifest.sha256
        except SnapshotError as exc:  # the driver may run off the cluster, without snapshots; the nodes must not
            snapshots[directory], here = "", here or exc
    answers = await asyncio.gather(*(actor.preflight.remote(snapshots, run=run) for actor in actors))
    problems = list(dict.fromkeys(problem for answer in answers for problem in answer))
    if problems and here is not None:  # broken here too: refused as a run in one process refuses it
        raise here
    if problems:
        raise RunWorkerError("the Ray nodes are not ready for this run (nothing ran):\n" + "\n".join(problems))


def _why(exc: BaseException) -> str:
    """What Ray says of a dead actor, on one line."""
    return first_line(str(exc), 300) or type(exc).__name__


def _cause(exc: Any) -> BaseException:
    """The exception the actor raised, as it was raised there (so the run fails as it would in one process)."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, BaseException) else RunWorkerError(f"a Ray actor failed: {exc}")


async def _close(ray: Any, actors: list[Any], run: str, kept: list[Any]) -> None:
    """Close each actor's world (its servers end), then the actors; a dead or stuck one is killed. A kept actor
    ends the run's lease instead, and stays."""
    refs = [actor.close.remote(run=run) for actor in actors]
    with contextlib.suppress(Exception), anyio.move_on_after(10):
        await asyncio.gather(*refs, return_exceptions=True)
    for actor in actors:
        if not any(actor is held for held in kept):
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)


PRESTART_KEEP_S = 600
"""How long the workers a run prestarts for the next run stay at least, idle (then Ray's own rule: a node keeps
up to its CPUs' number of idle workers)."""
PRESTART_TIMEOUT_S = 2.0


async def prestart_workers(ray: Any, nodes: list[Any]) -> None:
    """Ask the raylet of each node in `nodes` (the run's actors' `node_id` answers) to start, now, one idle Python
    worker per actor the run had there, for the next run's actors: a worker no job has used, started by the raylet
    in its own environment (none of this run's) with the actors' runtime environment (`actor_runtime_env`: it
    imports the harness as it starts), which holds no CPUs while idle. An actor of the next run then starts in it
    instead of waiting for a fresh process to import Ray and the harness (most of an actor's start-up). Best effort:
    a node that does not answer is passed over; through the Ray Client the raylets are not reached."""
    if ray.util.client.ray.is_connected():
        return
    with contextlib.suppress(Exception):
        with anyio.move_on_after(PRESTART_TIMEOUT_S):
            ids = [node for node in await asyncio.gather(*nodes, return_exceptions=True) if isinstance(node, str)]
        await anyio.to_thread.run_sync(_prestart, ray, collections.Counter(ids))


def _prestart(ray: Any, workers: collections.Counter) -> None:
    """`workers[node_id]` idle Python workers started on each node (Ray's `PrestartWorkers` call to its raylet, over
    Ray's own channel: its token authentication and TLS as the cluster has them)."""
    from ray._common.network_utils import build_address
    from ray._private.grpc_utils import init_grpc_channel
    from ray._private.utils import get_runtime_env_info
    from ray.core.generated import common_pb2, node_manager_pb2, node_manager_pb2_grpc
    from ray.runtime_env import RuntimeEnv

    environment = RuntimeEnv(**actor_runtime_env(ray))  # the actors', as Ray serializes it: the workers match them
    info = get_runtime_env_info(environment, serialize=False)
    info.serialized_runtime_env = environment.serialize()
    for node in ray.nodes():
        if node.get("Alive") and (count := workers.get(node["NodeID"])):
            with contextlib.suppress(Exception):
                channel = init_grpc_channel(build_address(node["NodeManagerAddress"], node["NodeManagerPort"]))
                with contextlib.closing(channel):
                    node_manager_pb2_grpc.NodeManagerServiceStub(channel).PrestartWorkers(
                        node_manager_pb2.PrestartWorkersRequest(language=common_pb2.Language.PYTHON, num_workers=count,
                                                                keep_alive_duration_secs=PRESTART_KEEP_S,
                                                                runtime_env_info=info),
                        timeout=PRESTART_TIMEOUT_S)


def stop_kept_actors(address: str = "auto") -> list[str]:
    """Stop every kept actor (`--ray-keep-actors`) on the cluster at `address`, any version's, idle or serving a
    run (whose simulations in flight on them end as infrastructure errors); their names."""
    ray = import_ray()
    with connected(ray, address, 0):
        names = kept_actor_names(ray)
        for name in names:
            with contextlib.suppress(ValueError):  # gone already (its idle exit)
                ray.kill(ray.get_actor(name, namespace=KEPT_NAMESPACE), no_restart=True)
    return names


@contextlib.contextmanager
def connected(ray: Any, address: str | None, workers: int, cpus: float = 1.0,
              memory: int | None = None, background: bool = False) -> Iterator[bool]:
    """Connected to the cluster at `address` (left as the block ends; with `background`, the disconnection finished
    in a thread: `_disconnect`), or to a local one started now (and stopped after) with the CPUs every worker
    reserves; a Ray already initialized in this process is used as it is and left running. Refused
    (`RunWorkerError`) when the cluster's nodes have no room for every worker. Gives whether the cluster outlives
    the block (not one started for it)."""
    disconnected()  # the last run's connection gone first, not found still initialized
    with contextlib.ExitStack() as stack:
        lasting = True
        if not ray.is_initialized():
            if address is None:
                stack.enter_context(local_ray_cluster(max(math.ceil(workers * cpus), default_workers())))
                lasting = False
            else:
                connect_ray(address)
                if background:
                    stack.callback(_disconnect, ray)
                else:
                    stack.callback(ray.shutdown)
        nodes = [node["Resources"] for node in ray.nodes() if node.get("Alive")]
        if (room := workers_room(nodes, cpus, memory)) < workers:
            raise RunWorkerError(no_room(nodes, workers, room, cpus, memory))
        yield lasting


_leaving: list[threading.Thread] = []
"""Disconnections from a cluster still going on (`_disconnect`)."""


def _disconnect(ray: Any) -> None:
    """Leave the cluster (`ray.shutdown`) in a thread, and return: what the run needs is done (its actors closed,
    its results written), and Ray's shutdown waits in the driver (its core worker joins its RPC threads, which poll
    every 250 ms: 0.25 s more in 20 of the 25 ends measured), which the process's remaining work (the summary) need
    not wait for. The thread is not a daemon: Python's exit, and the CLI's fast exit, join it; so does the next
    connection (`disconnected`)."""
    leaving = threading.Thread(target=ray.shutdown, name="shiftbox-ray-disconnect")
    leaving.start()
    _leaving.append(leaving)


def disconnected() -> None:
    """Wait until this process has left the clusters it was leaving (`_disconnect`)."""
    while _leaving:
        _leaving.pop().join()


def workers_room(nodes: list[dict[str, float]], cpus: float, memory: int | None) -> int:
    """How many actors reserving `cpus` CPUs (and `memory` bytes) the nodes (each one's total resources) hold: an
    actor lives on one node, so each node holds as many as fit in it alone."""
    def fits(node: dict[str, float]) -> int:
        by_cpu = math.floor(node.get("CPU", 0) / cpus + 1e-9)
        return by_cpu if memory is None else min(by_cpu, math.floor(node.get("memory", 0) / memory))
    return sum(fits(node) for node in nodes)


def no_room(nodes: list[dict[str, float]], workers: int, room: int, cpus: float, memory: int | None) -> str:
    """What Ray would do with more workers than the cluster holds, and what to change."""
    each = f"{cpus:g} CPU{'s' * (cpus != 1)}" + (f" and {memory / 2**20:g} MiB" if memory else "")
    sizes = ", ".join(f"{node.get('CPU', 0):g} CPUs" + (f"/{node.get('memory', 0) / 2**20:.0f} MiB" if memory else "")
                      for node in nodes)
    return (f"the Ray cluster has room for {room} of the --workers {workers} actors: each reserves {each} on one "
            f"node for the whole run (--worker-cpus, --worker-memory-mb), and Ray starts an actor only on a node with "
            f"that much free, so the others would wait forever (nodes: {sizes or 'none alive'}). Lower --workers or "
            "--worker-cpus, or add nodes or CPUs (`ray start --num-cpus N`)")
