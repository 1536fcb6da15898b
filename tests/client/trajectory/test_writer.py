"""TrajectoryWriter: every line synced as it is written (a run resumes from what is on disk), or (`sync_each=False`,
a replay) once when it closes; a sync that fails then is a RecordWriteError naming the file, never a traceback."""

from __future__ import annotations

import errno
import os
import re

import anyio
import pytest

from shiftbox.errors import RecordWriteError
from shiftbox.trajectory import TrajectoryWriter, read_trajectories
from tests.client.harness import REPO

RECORDED = read_trajectories(REPO / "fixtures" / "banking-litellm")[:3]


@pytest.mark.parametrize(("sync_each", "syncs"), [(True, 3), (False, 1)])
def test_lines_are_synced_each_or_once_at_close(tmp_path, monkeypatch, sync_each, syncs):
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    writer = TrajectoryWriter(tmp_path / "trajectories.jsonl", sync_each=sync_each)

    async def write() -> None:
        for trajectory in RECORDED:
            await writer.append(trajectory)

    anyio.run(write)
    writer.close()
    assert len(synced) == syncs
    assert [t.simulation_id for t in read_trajectories(tmp_path)] == [t.simulation_id for t in RECORDED]


def test_a_sync_that_fails_at_close_is_named(tmp_path, monkeypatch):
    writer = TrajectoryWriter(tmp_path / "trajectories.jsonl", sync_each=False)
    anyio.run(writer.append, RECORDED[0])

    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(RecordWriteError, match=r"cannot sync \S+trajectories.jsonl to disk \(Input/output error\)"):
        writer.close()


class HeldSync:
    """os.fsync that holds its first call until the test lets it go (or 5 s pass: the event loop was stuck in it, as
    when the sync ran on the loop's thread), noting the file's size at each call; `fail_after` good calls, it fails."""

    def __init__(self, monkeypatch, fail_after: int | None = None):
        import threading

        self.release, self.held, self.stuck = threading.Event(), threading.Event(), False
        self.sizes: list[int] = []
        self.fail_after, self.real = fail_after, os.fsync
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd: int) -> None:
        if not self.sizes:
            self.held.set()
            self.stuck = not self.release.wait(5)
        if self.fail_after is not None and len(self.sizes) >= self.fail_after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.sizes.append(os.fstat(fd).st_size)
        self.real(fd)


async def _lines_written(path, count: int) -> None:
    """Until `count` lines are in the file (the event loop running meanwhile), at most 3 s."""
    with anyio.move_on_after(3):
        while path.read_bytes().count(b"\n") < count:
            await anyio.sleep(0.005)


def test_a_sync_leaves_the_event_loop_free_and_the_next_covers_every_line_written_meanwhile(tmp_path, monkeypatch):
    sync = HeldSync(monkeypatch)
    path = tmp_path / "trajectories.jsonl"
    writer = TrajectoryWriter(path)
    covered: dict[str, int] = {}  # simulation -> bytes synced when its append returned

    async def one(trajectory) -> None:
        await writer.append(trajectory)
        covered[trajectory.simulation_id] = max(sync.sizes)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, RECORDED[0])
            await anyio.to_thread.run_sync(sync.held.wait, 5)  # the first line's sync has started, and waits
            for trajectory in RECORDED[1:]:
                tg.start_soon(one, trajectory)
            await _lines_written(path, len(RECORDED))  # written while the first sync still waits
            sync.release.set()

    anyio.run(main)
    writer.close()
    assert not sync.stuck, "the event loop waited in the fsync"
    assert len(sync.sizes) == 2, "the lines written during the first sync were not synced together by one more"
    data = path.read_bytes()
    for trajectory in RECORDED:  # no append returned before its line was on disk
        end = data.index(b"\n", data.index(trajectory.simulation_id.encode())) + 1
        assert covered[trajectory.simulation_id] >= end
    assert [t.simulation_id for t in read_trajectories(tmp_path)] == [t.simulation_id for t in RECORDED]


def test_a_failed_sync_cuts_every_line_it_was_to_cover_and_each_of_their_appends_raises(tmp_path, monkeypatch):
    sync = HeldSync(monkeypatch, fail_after=1)  # the first sync is good, the next fails
    path = tmp_path / "trajectories.jsonl"
    writer = TrajectoryWriter(path)
    outcomes: dict[str, str] = {}

    async def one(trajectory) -> None:
        try:
            await writer.append(trajectory)
            outcomes[trajectory.simulation_id] = "written"
        except RecordWriteError as exc:
            outcomes[trajectory.simulation_id] = str(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, RECORDED[0])
            await anyio.to_thread.run_sync(sync.held.wait, 5)
            for trajectory in RECORDED[1:]:
                tg.start_soon(one, trajectory)
            await _lines_written(path, len(RECORDED))
            sync.release.set()
        sync.fail_after = None  # the disk has room again: a later line is written and kept
        await one(RECORDED[1].model_copy(update={"simulation_id": "again"}))

    anyio.run(main)
    writer.close()
    assert outcomes[RECORDED[0].simulation_id] == "written"
    for trajectory in RECORDED[1:]:
        assert re.search(r"cannot write \S+trajectories.jsonl: No space left on device", outcomes[trajectory.simulation_id])
    assert outcomes["again"] == "written"
    assert [t.simulation_id for t in read_trajectories(tmp_path)] == [RECORDED[0].simulation_id, "again"]
