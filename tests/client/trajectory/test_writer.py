"""TrajectoryWriter: every line synced as it is written (a run resumes from what is on disk), or (`sync_each=False`,
a replay) once when it closes; a sync that fails then is a RecordWriteError naming the file, never a traceback."""

from __future__ import annotations

import errno
import os

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
