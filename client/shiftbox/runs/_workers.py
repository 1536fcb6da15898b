"""A run's simulations in worker processes (`shiftbox run --workers N`), so a run uses every core.

Each worker opens its own servers (as `--servers` says) and takes the next simulation not yet taken
from a shared counter; the parent process stays the one writer of trajectories.jsonl, appending and
fsyncing each trajectory as a worker reports it. Results and resume are therefore those of one
process. A worker that dies loses only the simulations it had in flight: everything finished is
written, and `--resume` runs what is missing.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import Any

import anyio

from ..errors import RunWorkerError
from ..orchestrator import simulation_id
from ..trajectory import Trajectory
from ._execute import SimulationJob, open_simulations

# forkserver, not fork: a worker is forked from a clean server process that has imported the harness once
# (so it starts in milliseconds), never from this one with its threads and running event loop; it takes
# this process's environment and working directory as they are when the run starts (`_Surroundings`)
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


@dataclass
class _Progress:
    """What the parent knows: the simulations written, the workers that ended (cleanly or not), a worker's failure."""

    written: set[int] = field(default_factory=set)
    ended: set[int] = field(default_factory=set)
    died: dict[int, int | None] = field(default_factory=dict)  # worker -> exit code, for those that sent no goodbye
    failure: BaseException | None = None


async def run_in_processes(job: SimulationJob, run_dir: Path, workers: int, concurrency: int,
                           write: Callable[[Trajectory], Awaitable[None]]) -> None:
    """Run `job.work` in `workers` processes; `write` each trajectory here as it arrives.

    A worker's exception (the servers cannot start, a bug) stops the others and is raised here. A worker that
    dies without one (killed) loses the simulations it had in flight; the others finish the rest, and then a
    RunWorkerError names the simulations missing.
    """
    _CONTEXT.set_forkserver_preload(preloaded_modules(job))  # takes effect when the fork server starts
    claim = _CONTEXT.Value("q", 0)
    results = _CONTEXT.Queue()
    run_alive, this_run = _CONTEXT.Pipe(duplex=False)  # this process holds the writing end and never writes
    surroundings = _Surroundings.of_this_process()
    processes = [
        _CONTEXT.Process(target=worker_main, name=f"shiftbox-worker-{number}", daemon=True,
                         args=(job, number, share, run_dir if number == 0 else None, claim, results,
                               surroundings, run_alive))
        for number, share in enumerate(concurrency_shares(concurrency, workers))
    ]
    progress, finished = _Progress(), False
    try:
        for process in processes:
            process.start()
        while progress.failure is None and len(progress.ended) < workers:
            message = await anyio.to_thread.run_sync(_next_message, results, _POLL_S, abandon_on_cancel=True)
            if message is not None:
                await _handle(message, progress, write)
                continue
            gone = [n for n, p in enumerate(processes) if n not in progress.ended and not p.is_alive()]
            if gone:
                while progress.failure is None and (message := _next_message(results, _POLL_S)) is not None:
                    await _handle(message, progress, write)  # what they sent before they went
                for number in gone:
                    if number not in progress.ended:
                        progress.ended.add(number)
                        progress.died[number] = processes[number].exitcode
        finished = progress.failure is None
    finally:  # on a worker's failure, an interrupt or any error here, the workers left are stopped at once
        for process in processes:
            if process.is_alive() and not finished:
                process.terminate()
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
        results.close()
        run_alive.close()  # the workers have their own copies
        this_run.close()
    if progress.failure is not None:
        raise progress.failure
    missing = [i for i in range(len(job.work)) if i not in progress.written]
    if missing:
        raise _lost(job, missing, progress.died)


def _next_message(results: Any, timeout: float) -> tuple | None:
    try:
        return results.get(timeout=timeout)
    except queue.Empty:
        return None


async def _handle(message: tuple, progress: _Progress, write: Callable[[Trajectory], Awaitable[None]]) -> None:
    kind, number, payload = message
    if kind == "finished":
        index, trajectory = payload
        await write(trajectory)
        progress.written.add(index)
    elif kind == "exited":
        progress.ended.add(number)
    else:  # "failed": the worker's own exception, raised here as it would be in one process
        progress.ended.add(number)
        progress.failure = payload


def _lost(job: SimulationJob, missing: list[int], died: dict[int, int | None]) -> RunWorkerError:
    names = ", ".join(simulation_id(job.work[i][0].id, job.work[i][1]) for i in missing)
    how = "; ".join(f"worker process {n} ended unexpectedly (exit code {code})" for n, code in sorted(died.items()))
    return RunWorkerError(f"{how or 'the worker processes ended'} before {len(missing)} simulation(s) finished: "
                          f"{names}; every other simulation is written, run again with --resume to run the ones "
                          "missing")


@dataclass(frozen=True)
class _Surroundings:
    """The parent's environment variables and working directory, which a forked-from-the-server worker takes on."""

    environ: dict[str, str]
    cwd: str

    @classmethod
    def of_this_process(cls) -> _Surroundings:
        return cls(dict(os.environ), os.getcwd())

    def enter(self) -> None:
        os.environ.clear()
        os.environ.update(self.environ)
        os.chdir(self.cwd)


def worker_main(job: SimulationJob, number: int, concurrency: int, run_dir: Path | None, claim: Synchronized,
                results: Any, surroundings: _Surroundings, run_alive: Connection) -> None:
    """A worker process: run simulations until none is left, reporting each to the parent through `results`."""
    try:
        surroundings.enter()
        anyio.run(_work, job, number, concurrency, run_dir, claim, results, run_alive)
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent, which raises it
        results.put(("failed", number, _transportable(exc)))
    else:
        results.put(("exited", number, None))


async def _work(job: SimulationJob, number: int, concurrency: int, run_dir: Path | None, claim: Synchronized,
                results: Any, run_alive: Connection) -> None:
    def claim_next() -> int | None:
        with claim.get_lock():
            index = claim.value
            claim.value += 1
        return index if index < len(job.work) else None

    async with open_simulations(job, run_dir) as simulate:
        async def simulations() -> None:
            while (index := claim_next()) is not None:
                trajectory = await simulate(*job.work[index])
                results.put(("finished", number, (index, trajectory)))

        async with anyio.create_task_group() as watch:
            watch.start_soon(_exit_when_gone, run_alive, results)
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(simulations)
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
