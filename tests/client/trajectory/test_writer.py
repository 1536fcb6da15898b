"""`TrajectoryWriter.append` fsyncs each trajectory before it returns, off the event loop: the simulations running
beside it go on while the disk syncs (an fsync took 14 ms a trajectory on the project's shared machine, 2.8 s of a
200-simulation run during which every simulation of the process would otherwise stand still)."""

from __future__ import annotations

import os
import time

import anyio

from shiftbox.trajectory import TrajectoryWriter, read_trajectories
from tests.client.harness import HANDWRITTEN


def a_trajectory(tmp_path):
    from shiftbox.runs import plan_run, run_evaluation

    return run_evaluation(plan_run(HANDWRITTEN, tmp_path / "source", agent="scripted:oracle",
                                   task_ids=["hw_banking_001"])).trajectories[0]


def test_the_event_loop_goes_on_while_a_trajectory_is_synced_to_disk(tmp_path, monkeypatch):
    trajectory, synced = a_trajectory(tmp_path), []
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:  # a slow disk
        time.sleep(0.3)
        real_fsync(fd)
        synced.append(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    (tmp_path / "run").mkdir()
    writer = TrajectoryWriter(tmp_path / "run" / "trajectories.jsonl")
    ticks = []

    async def main() -> None:
        async def tick() -> None:
            while True:
                ticks.append(time.monotonic())
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            await anyio.sleep(0)
            await writer.append(trajectory)
            assert synced  # on disk when append returns
            tg.cancel_scope.cancel()

    anyio.run(main)
    writer.close()
    assert len(ticks) >= 10  # about 30 while the 0.3 s fsync ran; 1 when it held the event loop
    assert [t.simulation_id for t in read_trajectories(tmp_path / "run")] == [trajectory.simulation_id]
