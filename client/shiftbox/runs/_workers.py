"""A run's simulations in worker processes (`shiftbox run --executor processes --workers N`), so a run uses
every core.

Each worker opens its own servers (as `--servers` says) and runs the simulations the parent hands it
(`_dispatch`); the parent process stays the one writer of trajectories.jsonl, appending and fsyncing each
trajectory as a worker reports it. Results and resume are therefore those of one process. A worker that
dies fails only the simulations it had in flight, as infrastructure errors retried under `--retry-infra`
on a fresh worker; everything finished is written.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import queue
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import anyio

from ..errors import RunWorkerError
from ..orchestrator import simulation_id
from ..trajectory import Trajectory
from ._dispatch import Dispatch, Slot, WorkerLost
from ._execute import SimulationJob, open_simulations

# forkserver, not fork: a worker is forked from a clean server process that has imported the harness once
# (so it starts in milliseconds), never from this one with its threads and running event loop; it takes
# this process's environment and working directory as they are when the run starts (`RunSurroundings`)
_CONTEXT = multiprocessing.get_context("forkserver")
_POLL_S = 0.2


def concurrency_shares(concurrency: int, workers: int) -> list[int]:
    """`concurrency` simulations at once split between `workers` as evenly as it goes (the run's total stays)."""
    return [concurrency // workers + (k < concurrency % workers) for k in range(workers)]


def preloaded_modules(job: SimulationJob) -> list[str]:
    """What the fork server imports once for every worker: the harness, and litellm (seconds to import) when an
    LLM plays a role. A process starts one fork server, so its first run with workers decides."""
    llm = any(spec.partition(":")[0] == "litellm" for spec in (job.config.agent, job.config.user))
    return [__name__, *(["litellm"] if llm else [])]


class _Seat:
    """One worker place: its process (a replacement after a death), its requests queue and what it has in flight."""

    def __init__(self, number: int, process: Any, requests: Any):
        self.number, self.process, self.requests = number, process, requests
        self.in_flight: dict[int, _Pending] = {}
        self.said_goodbye = False


@dataclass
class _Pending:
    """A simulation handed to a worker: its trajectory when it comes back, or why it never will."""

    done: anyio.Event = field(default_factory=anyio.Event)
    trajectory: Trajectory | None = None
    lost: str | None = None


class _ProcessPool:
    """Worker processes of this machine, one per seat; a dead worker's seat gets a fresh process."""

    def __init__(self, job: SimulationJob, run_dir: Path, shares: list[int], dispatch: Dispatch):
        self.job, self.run_dir, self.shares, self.dispatch = job, run_dir, shares, dispatch
        self.results = _CONTEXT.Queue()
        self.run_alive, self.this_run = _CONTEXT.Pipe(duplex=False)  # this process holds the writing end
        self.surroundings = RunSurroundings.of_this_process()
        self.started = 0
        self.seats = [self._start(seat) for seat in range(len(shares))]

    def _start(self, seat: int) -> _Seat:
        number, requests = self.started, _CONTEXT.Queue()
        self.started += 1
        process = _CONTEXT.Process(
            target=worker_main, name=f"shiftbox-worker-{number}", daemon=True,
            args=(self.job, number, self.run_dir if number == 0 else None, requests, self.results,
                  self.surroundings, self.run_alive))
        process.start()
        return _Seat(number, process, requests)

    def slot(self, seat: int) -> Slot:
        async def run(index: int, attempt: int) -> Trajectory:
            place = self.seats[seat]
            pending = place.in_flight[index] = _Pending()
            place.requests.put((index, attempt))
            await pending.done.wait()
            if pending.trajectory is None:
                raise WorkerLost(pending.lost or "the worker process ended")
            return pending.trajectory
        return run

    async def watch(self) -> None:
        """Deliver what the workers send; a worker gone without a goodbye fails what it had in flight."""
        while True:
            message = await anyio.to_thread.run_sync(_next_message, self.results, _POLL_S, abandon_on_cancel=True)
            if message is not None:
                self._deliver(message)
                continue
            for seat, place in enumerate(self.seats):
                if not place.process.is_alive() and not place.said_goodbye:
                    while (message := _next_message(self.results, 0.05)) is not None:
                        self._deliver(message)  # what it sent before it went
                    self._lose(seat, place)

    def _deliver(self, message: tuple) -> None:
        kind, number, payload = message
        place = next((p for p in self.seats if p.number == number), None)
        if kind == "failed":  # the worker's own exception, raised here as it would be in one process
            self.dispatch.fail(payload)
        elif place is None:
            return  # from a worker already given up for dead
        elif kind == "exited":
            place.said_goodbye = True
        elif (pending := place.in_flight.pop(payload[0], None)) is not None:  # "finished"
            pending.trajectory = payload[1]
            pending.done.set()

    def _lose(self, seat: int, place: _Seat) -> None:
        code = place.process.exitcode
        for index, pending in sorted(place.in_flight.items()):
            pending.lost = (f"worker process {place.number} ended unexpectedly (exit code {code}) while "
                            f"running {simulation_id(self.job.work[index][0].id, self.job.work[index][1])}")
            pending.done.set()
        self.seats[seat] = self._start(seat)

    def close(self, finished: bool) -> None:
        """Tell the workers to stop (or stop them at once when the run did not finish) and wait for them."""
        for place in self.seats:
            if finished and place.process.is_alive():
                place.requests.put(None)
        for place in self.seats:
            if not finished and place.process.is_alive():
                place.process.terminate()
            place.process.join(timeout=10)
            if place.process.is_alive():
                place.process.kill()
        self.results.close()
        self.run_alive.close()  # the workers have their own copies
        self.this_run.close()


async def run_in_processes(job: SimulationJob, run_dir: Path, workers: int, concurrency: int,
                           write: Callable[[Trajectory], Awaitable[None]]) -> None:
    """Run `job.work` in `workers` processes; `write` each trajectory here as it arrives.

    A worker's exception (the servers cannot start, a bug) stops the others and is raised here. A worker that
    dies without one (killed) fails the simulations it had in flight as infrastructure errors, given again to a
    fresh worker while `job.retry_infra` allows (`Dispatch`).
    """
    _CONTEXT.set_forkserver_preload(preloaded_modules(job))  # takes effect when the fork server starts
    dispatch = Dispatch(len(job.work), job.retry_infra, job.lost, write)
    shares = concurrency_shares(concurrency, workers)
    pool, finished = _ProcessPool(job, run_dir, shares, dispatch), False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pool.watch)
            slots = [pool.slot(seat) for seat, share in enumerate(shares) for _ in range(share)]
            await dispatch.run(slots)
            tg.cancel_scope.cancel()
        finished = dispatch.failure is None
    finally:  # on a worker's failure, an interrupt or any error here, the workers left are stopped at once
        pool.close(finished)
    dispatch.raise_failure()


def _next_message(results: Any, timeout: float) -> tuple | None:
    try:
        return results.get(timeout=timeout)
    except queue.Empty:
        return None


@dataclass(frozen=True)
class RunSurroundings:
    """The run's environment variables and working directory, which its workers take on (a worker forked from the
    fork server, or a Ray actor, would otherwise have those of the process that started it)."""

    environ: dict[str, str]
    cwd: str

    @classmethod
    def of_this_process(cls) -> RunSurroundings:
        return cls(dict(os.environ), os.getcwd())

    def enter(self) -> None:
        """Take them on entirely (a worker process of this machine)."""
        os.environ.clear()
        os.environ.update(self.environ)
        os.chdir(self.cwd)

    def fill_in(self) -> None:
        """Take on the variables this process does not set itself, and the directory if this node has it (a Ray
        actor, maybe on another machine: its node's own PATH, HOME... stay; an API key set only where the run
        was started reaches it)."""
        for name, value in self.environ.items():
            os.environ.setdefault(name, value)
        with contextlib.suppress(OSError):
            os.chdir(self.cwd)


def worker_main(job: SimulationJob, number: int, run_dir: Path | None, requests: Any, results: Any,
                surroundings: RunSurroundings, run_alive: Connection) -> None:
    """A worker process: run the simulations the parent hands it until it says stop, reporting each through
    `results`."""
    try:
        surroundings.enter()
        anyio.run(_work, job, number, run_dir, requests, results, run_alive)
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, which raises it
        results.put(("failed", number, _transportable(exc)))
    else:
        results.put(("exited", number, None))


async def _work(job: SimulationJob, number: int, run_dir: Path | None, requests: Any, results: Any,
                run_alive: Connection) -> None:
    async with open_simulations(job, run_dir) as simulate:
        async def one(index: int, attempt: int) -> None:
            trajectory = await simulate(*job.work[index], attempt)
            results.put(("finished", number, (index, trajectory)))

        async with anyio.create_task_group() as watch:
            watch.start_soon(_exit_when_gone, run_alive, results)
            async with anyio.create_task_group() as tg:
                while (request := await anyio.to_thread.run_sync(requests.get, abandon_on_cancel=True)) is not None:
                    tg.start_soon(one, *request)
            watch.cancel_scope.cancel()


async def _exit_when_gone(run_alive: Connection, results: Any) -> None:
    """End this worker at once when the run's process is gone (killed): nobody would write what it finishes, and
    its servers end with it (stdio on EOF, containers with their stdin). `run_alive` is the reading end of a pipe
    only the run's process can write to: it reads as closed the moment that process dies, reaped or not."""
    while not run_alive.poll(0):
        await anyio.sleep(_POLL_S)
    results.cancel_join_thread()  # what is still queued for the dead reader is dropped, not waited on
    os._exit(1)


def _transportable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (so the parent raises the same type), else a RunWorkerError
    carrying its type, message and traceback."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception that does not round-trip
        text = "".join(traceback.format_exception(exc))
        return RunWorkerError(f"a worker process failed: {type(exc).__name__}: {exc}\n{text}")
