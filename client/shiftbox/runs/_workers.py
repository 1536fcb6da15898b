"""A run's simulations in worker processes (`shiftbox run --executor processes --workers N`), so a run uses
every core.

Each worker opens its own servers (as `--servers` says) and runs the simulations the parent hands it
(`_dispatch`); the parent process stays the one writer of trajectories.jsonl, appending and fsyncing each
trajectory as a worker reports it. Results and resume are therefore those of one process. A worker that
dies fails only the simulations it had in flight, as infrastructure errors retried under `--retry-infra`
on a fresh worker; everything finished is written. Each worker reports through a pipe of its own: a worker
killed in the middle of sending a result leaves half a message in its own pipe only (a queue shared by the
workers would keep its write lock held forever and stall every other worker and the run).

What a worker costs before its first simulation, and how it is kept small: the fork server it is forked from is
started by `plan_run` (`start_fork_server`), so its imports go on while the run is still being prepared; a worker
does not run the program's main script again (`_main_left_alone`: the `shiftbox` command would import the whole
CLI in every worker) unless its job refers to something defined there. (A worker has no interpreter teardown to
skip: the fork server ends each child with `os._exit` after multiprocessing's own exit steps.) Work is handed
out one simulation at a time to whichever worker has a free slot (`Dispatch`), so a worker that started late or runs slower simply takes fewer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.spawn
import os
import pickle
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import anyio

from ..errors import RunWorkerError
from ..llm import LLMSettings, set_litellm_environment
from ..orchestrator import simulation_id
from ..trajectory import Trajectory
from ._dispatch import Dispatch, Slot, WorkerLost
from ._simulations import SimulationJob, open_simulations

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
    LLM plays a role whose calls need it (not when the fast path makes them without it). A process starts one
    fork server, so its first run with workers decides."""
    llm = False
    for spec, make in ((job.config.agent, job.make_agent), (job.config.user, job.make_user)):
        if spec.partition(":")[0] == "litellm":
            settings = getattr(make(), "settings", None)
            llm = llm or not isinstance(settings, LLMSettings) or settings.calls_litellm()
    return [__name__, *(["litellm"] if llm else [])]


class _Seat:
    """One worker place: its process (a replacement after a death), its requests queue, the reading end of its
    results pipe (None once the worker closed it) and what it has in flight. `never_started` says why its process
    never ran (killed while this process was handing it its job), else None."""

    def __init__(self, number: int, process: Any, requests: Any, results: Connection, never_started: str | None):
        self.number, self.process, self.requests = number, process, requests
        self.results: Connection | None = results
        self.in_flight: dict[int, _Pending] = {}
        self.said_goodbye = False
        self.never_started = never_started

    def alive(self) -> bool:
        return self.never_started is None and self.process.is_alive()

    def lost(self, simulation: str) -> str:
        """Why `simulation`, handed to this worker, never came back."""
        if self.never_started is not None:
            return f"worker process {self.number} was killed as it started ({self.never_started}) before it ran {simulation}"
        return (f"worker process {self.number} ended unexpectedly (exit code {self.process.exitcode}) while running "
                f"{simulation}")


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
        self.run_alive, self.this_run = _CONTEXT.Pipe(duplex=False)  # this process holds the writing end
        self.surroundings = RunSurroundings.of_this_process()
        self.leave_main = not refers_to_main(job)
        self.started = 0
        self.seats = [self._start(seat) for seat in range(len(shares))]

    def _start(self, seat: int) -> _Seat:
        number, requests = self.started, _CONTEXT.Queue()
        results, sending_end = _CONTEXT.Pipe(duplex=False)
        self.started += 1
        process = _CONTEXT.Process(
            target=worker_main, name=f"shiftbox-worker-{number}", daemon=True,
            args=(self.job, number, self.run_dir if number == 0 else None, requests, sending_end,
                  self.surroundings, self.run_alive))
        never_started = None
        try:
            with _main_left_alone(self.leave_main):
                process.start()
        except OSError as exc:  # the worker was killed before it had read its job (larger than a pipe holds)
            never_started = f"its job could not be handed to it: {exc}"
        sending_end.close()  # the worker has its own copy: its death then reads as the end of the pipe
        return _Seat(number, process, requests, results, never_started)

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
            open_pipes = {place.results: place for place in self.seats if place.results is not None}
            received = await anyio.to_thread.run_sync(_receive, list(open_pipes), _POLL_S, abandon_on_cancel=True)
            for pipe, message in received:
                self._deliver(open_pipes[pipe], message)
            for seat, place in enumerate(self.seats):
                if not place.alive() and not place.said_goodbye:
                    while place.results is not None and (left := _receive([place.results], 0)):
                        self._deliver(place, left[0][1])  # what it sent before it went, up to its pipe's end
                    self._lose(seat, place)

    def _deliver(self, place: _Seat, message: tuple | None) -> None:
        if message is None:  # the worker closed its pipe: it exited, or died (maybe halfway through a message)
            assert place.results is not None
            place.results.close()
            place.results = None
            return
        kind, _, payload = message
        if kind == "failed":  # the worker's own exception, raised here as it would be in one process
            self.dispatch.fail(payload)
        elif kind == "exited":
            place.said_goodbye = True
        elif (pending := place.in_flight.pop(payload[0], None)) is not None:  # "finished"
            pending.trajectory = payload[1]
            pending.done.set()

    def _lose(self, seat: int, place: _Seat) -> None:
        for index, pending in sorted(place.in_flight.items()):
            pending.lost = place.lost(simulation_id(self.job.work[index][0].id, self.job.work[index][1]))
            pending.done.set()
        place.requests.cancel_join_thread()  # nobody reads what is still queued for the dead worker
        if place.results is not None:
            place.results.close()
        self.seats[seat] = self._start(seat)

    def close(self, finished: bool) -> None:
        """Tell the workers to stop (or stop them at once when the run did not finish) and wait for them."""
        for place in self.seats:
            if finished and place.alive():
                place.requests.put(None)
        for place in self.seats:
            if place.never_started is not None:
                continue
            if not finished and place.process.is_alive():
                place.process.terminate()
            place.process.join(timeout=10)
            if place.process.is_alive():
                place.process.kill()
        for place in self.seats:
            if place.results is not None:
                place.results.close()
        self.run_alive.close()  # the workers have their own copies
        self.this_run.close()


async def run_in_processes(job: SimulationJob, run_dir: Path, workers: int, concurrency: int,
                           write: Callable[[Trajectory], Awaitable[None]]) -> None:
    """Run `job.work` in `workers` processes; `write` each trajectory here as it arrives.

    A worker's exception (the servers cannot start, a bug) stops the others and is raised here. A worker that
    dies without one (killed) fails the simulations it had in flight as infrastructure errors, given again to a
    fresh worker while `job.retry_infra` allows (`Dispatch`).
    """
    start_fork_server(job)  # usually started already, by plan_run
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


def start_fork_server(run: Any) -> None:
    """Start the fork server the workers of `run` (its `config`, `make_agent` and `make_user`: a SimulationJob, a
    RunPlan) are forked from, without waiting for its imports (seconds: the harness, maybe litellm), so they go on
    while the caller prepares the run (`plan_run` calls this for the processes executor). Nothing happens when this
    process's fork server is already running."""
    modules = preloaded_modules(run)
    if "litellm" in modules:
        set_litellm_environment()  # the fork server imports litellm by name, in this environment
    _CONTEXT.set_forkserver_preload(modules)  # takes effect when the fork server starts
    multiprocessing.forkserver.ensure_running()


def refers_to_main(job: SimulationJob) -> bool:
    """Whether the job names something defined in the program's main script (a `make_agent` written there), which
    a worker can only unpickle after running that script again; its LLM gate is left out (it pickles only as a
    process starts, and is the harness's own)."""
    return b"__main__" in pickle.dumps(dataclasses.replace(job, llm_gate=None))


@contextlib.contextmanager
def _main_left_alone(leave: bool):
    """Start processes in this block without running the main script again in them (`leave`): multiprocessing runs
    it in each new process unless started with `python -m` (`shiftbox run`'s script would import the whole CLI,
    most of a second per worker, for nothing the worker uses)."""
    if not leave:
        yield
        return
    prepare = multiprocessing.spawn.get_preparation_data

    def without_main(name: str) -> dict[str, Any]:
        data = prepare(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    multiprocessing.spawn.get_preparation_data = without_main
    try:
        yield
    finally:
        multiprocessing.spawn.get_preparation_data = prepare


def _receive(pipes: list[Connection], timeout: float) -> list[tuple[Connection, tuple | None]]:
    """One message from each pipe that has one, waiting up to `timeout` for the first; None for a pipe whose
    worker closed it (exited or died, the second maybe halfway through a message)."""
    if not pipes:  # every worker's pipe has closed: wait as for a message, until its death is seen
        time.sleep(timeout)
        return []
    received: list[tuple[Connection, tuple | None]] = []
    for pipe in wait(pipes, timeout):
        assert isinstance(pipe, Connection)
        try:
            received.append((pipe, pipe.recv()))
        except (EOFError, OSError):
            received.append((pipe, None))
    return received


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


def worker_main(job: SimulationJob, number: int, run_dir: Path | None, requests: Any, results: Connection,
                surroundings: RunSurroundings, run_alive: Connection) -> None:
    """A worker process: run the simulations the parent hands it until it says stop, reporting each through
    `results` (the sending end of its own pipe)."""
    try:
        surroundings.enter()
        anyio.run(_work, job, number, run_dir, requests, results, run_alive)
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, which raises it
        _send(results, ("failed", number, _transportable(exc)))
    else:
        _send(results, ("exited", number, None))


async def _work(job: SimulationJob, number: int, run_dir: Path | None, requests: Any, results: Connection,
                run_alive: Connection) -> None:
    sending = anyio.Lock()  # one message at a time on the pipe, sent from a thread (a full pipe blocks)

    async with open_simulations(job, run_dir) as simulate:
        async def one(index: int, attempt: int) -> None:
            trajectory = await simulate(*job.work[index], attempt)
            async with sending:
                await anyio.to_thread.run_sync(_send, results, ("finished", number, (index, trajectory)))

        async with anyio.create_task_group() as watch:
            watch.start_soon(_exit_when_gone, run_alive)
            async with anyio.create_task_group() as tg:
                while (request := await anyio.to_thread.run_sync(requests.get, abandon_on_cancel=True)) is not None:
                    tg.start_soon(one, *request)
            watch.cancel_scope.cancel()


def _send(results: Connection, message: tuple) -> None:
    """Report to the run's process; when it is gone (killed), end this worker at once, as `_exit_when_gone` does."""
    try:
        results.send(message)
    except OSError:  # its end of the pipe is closed
        os._exit(1)


async def _exit_when_gone(run_alive: Connection) -> None:
    """End this worker at once when the run's process is gone (killed): nobody would write what it finishes, and
    its servers end with it (stdio on EOF, containers with their stdin). `run_alive` is the reading end of a pipe
    only the run's process can write to: it reads as closed the moment that process dies, reaped or not."""
    while not run_alive.poll(0):
        await anyio.sleep(_POLL_S)
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
