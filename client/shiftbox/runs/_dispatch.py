"""Handing a run's simulations to workers (processes or Ray actors) and writing each result here, in the driver.

The executors differ only in how a simulation reaches a worker (a `Slot`). What is shared lives here: every
simulation is given to a free slot; a slot whose worker died raises `WorkerLost`, and the simulation is given
again, from the start in a fresh episode, while `--retry-infra` allows, else written as an infrastructure error;
the first other exception stops the run and is raised as it was raised in the worker.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence

import anyio

from ..orchestrator import derive_seed, simulation_id
from ..trajectory import Termination, Trajectory

# one simulation on one worker: (index into job.work, attempt number) -> its trajectory
Slot = Callable[[int, int], Awaitable[Trajectory]]


class WorkerLost(Exception):
    """The worker running a simulation ended (killed process, lost node) before answering."""


class Dispatch:
    """One run's simulations handed to slots; the first failure anyone reports (`fail`) stops it."""

    def __init__(self, work_size: int, retry_infra: int, lost: Callable[[int, int, str], Trajectory],
                 write: Callable[[Trajectory], Awaitable[None]]):
        self.retry_infra, self.lost, self.write = retry_infra, lost, write
        self.left = work_size
        self.failure: BaseException | None = None
        self._scope: anyio.CancelScope | None = None
        self._send, self._receive = anyio.create_memory_object_stream[tuple[int, int]](math.inf)
        for index in range(work_size):
            self._send.send_nowait((index, 0))
        if not work_size:
            self._send.close()

    def fail(self, exc: BaseException) -> None:
        """Stop the run: `exc` is raised by `run` once every slot has stopped."""
        if self.failure is None:
            self.failure = exc
        if self._scope is not None:
            self._scope.cancel()

    async def run(self, slots: Sequence[Slot]) -> None:
        """Every simulation written once; returns when none is left or at the first failure (`raise_failure`)."""
        with anyio.CancelScope() as self._scope:
            if self.failure is None:
                async with anyio.create_task_group() as tg:
                    for slot in slots:
                        tg.start_soon(self._serve, slot)

    def raise_failure(self) -> None:
        """The first failure reported, raised as it was raised in the worker (outside any task group)."""
        if self.failure is not None:
            raise self.failure

    async def _serve(self, slot: Slot) -> None:
        async for index, attempt in self._receive:
            try:
                trajectory = await slot(index, attempt)
            except WorkerLost as lost:
                if attempt < self.retry_infra:
                    self._send.send_nowait((index, attempt + 1))
                    continue
                trajectory = self.lost(index, attempt, str(lost))
            except Exception as exc:  # noqa: BLE001 - the worker's own failure, raised by run()
                self.fail(exc)
                return
            await self.write(trajectory)
            self.left -= 1
            if not self.left:
                self._send.close()


def lost_trajectory(work: Sequence[tuple], run_seed: int, agent: str, user: str, index: int, attempt: int,
                    why: str) -> Trajectory:
    """What is written for a simulation whose worker died on its last allowed attempt: an infrastructure error,
    not scored, with nothing it did (a worker's episode is never continued elsewhere)."""
    task, trial = work[index]
    trajectory = Trajectory(
        simulation_id=simulation_id(task.id, trial), task_id=task.id, trial=trial, domain=task.domain,
        seed=derive_seed(run_seed, task.id, trial), agent=agent, user=user, persona=task.user_scenario.persona,
        goals=task.goals, servers={}, messages=[], tool_calls=[], shifts=[], final_state={},
        termination=Termination(reason="infrastructure_error", blame="infrastructure", detail=why))
    if attempt:
        trajectory.timing["attempts"] = attempt + 1
    return trajectory
