"""trajectories.jsonl: one trajectory per line, appended and fsynced, read back tolerating a torn last line."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import anyio
from pydantic import ValidationError

from .._jsonl import append_line, dump_json, load_json
from ..errors import RecordWriteError, RunFileError
from ._model import Trajectory

TRAJECTORIES_FILE = "trajectories.jsonl"


def describe_invalid(exc: ValidationError) -> str:
    """A pydantic error in one line: where in the record, and what (JSON positions are within the line)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    what = re.sub(r" at line \d+ column (\d+)", r" at column \1", first.get("msg", "invalid"))
    more = f"; {exc.error_count() - 1} more" if exc.error_count() > 1 else ""
    return f"{where + ': ' if where else ''}{what}{more}"


def read_trajectories(run_dir: Path, *, repair: bool = False) -> list[Trajectory]:
    """Every complete trajectory line; a torn last line (crash mid-write) is ignored or cut off.

    A complete line that is not a trajectory, a simulation on a second line, or a file that cannot be read (a
    directory in its place), is a RunFileError naming the file (and the line).
    """
    path = run_dir / TRAJECTORIES_FILE
    if not path.exists():
        return []
    try:
        data = path.read_bytes()
    except OSError as exc:
        problem = "is a directory" if isinstance(exc, IsADirectoryError) else f"cannot be read ({exc.strerror or exc})"
        raise RunFileError(f"{path} {problem}; it holds the run's trajectories, one a line: restore that file") from None
    complete = data[: data.rfind(b"\n") + 1]
    trajectories = []
    first_line: dict[str, int] = {}  # simulation -> the line it is on
    for number, line in enumerate(complete.splitlines(), 1):
        if not line.strip():
            continue
        try:
            trajectory = load_json(Trajectory, line)
        except ValidationError as exc:
            raise RunFileError(f"{path} line {number}: does not parse as a trajectory ({describe_invalid(exc)}); remove or "
                               "restore that line") from None
        if (earlier := first_line.setdefault(trajectory.simulation_id, number)) != number:
            raise RunFileError(f"{path} line {number}: simulation {trajectory.simulation_id} again (it is on line "
                               f"{earlier}); a run writes each simulation once, so it would be scored twice: remove "
                               "the line that does not belong")
        trajectories.append(trajectory)
    if repair and len(complete) != len(data):
        with path.open("r+b") as f:
            f.truncate(len(complete))
    return trajectories


class TrajectoryWriter:
    """Appends one trajectory per line and fsyncs it: what is written survives a kill -9; what could not be written
    (a full disk) is a RecordWriteError and leaves nothing behind, so `--resume` runs that simulation again.

    `append` returns once its line is on disk. The fsync runs in a worker thread, so the event loop goes on with the
    other simulations meanwhile (an fsync takes milliseconds of waiting for the disk), and lines appended while one
    runs are synced together by the next (group commit: one fsync covers every line written before it started). A
    sync that fails cuts the file back to its end at the last good sync, and every append whose line that removed
    raises, as a failed write of its own would."""

    def __init__(self, path: Path, *, sync_each: bool = True):
        """`sync_each=False`: the file is synced once, by `close`, not after every line (for a run never resumed)."""
        self._path, self._sync_each = path, sync_each
        self._file = path.open("ab", buffering=0)
        self._lock = anyio.Lock()  # one writer of the file at a time (a write, or a cut after a failed sync)
        self._synced = self._written = os.lseek(self._file.fileno(), 0, os.SEEK_END)
        """The file's end at the last good sync, and its end now."""
        self._epoch = 0  # counts the cuts: a line written before one is gone, whatever offsets came after
        self._cuts: dict[int, tuple[int, OSError]] = {}  # epoch -> the end it was cut back to, and why
        self._syncing: anyio.Event | None = None  # set when the sync in flight ends

    async def append(self, trajectory: Trajectory) -> None:
        line = dump_json(trajectory).encode() + b"\n"  # a lone surrogate an agent sent: escaped
        with anyio.CancelScope(shield=True):  # reported written or not: never a line left half-way
            async with self._lock:
                append_line(self._file.fileno(), line, self._path, sync=False)
                self._written += len(line)
                end, epoch = self._written, self._epoch
            if self._sync_each:
                await self._synced_to(end, epoch)

    async def _synced_to(self, end: int, epoch: int) -> None:
        """Return once the file is synced up to `end` (a line written in `epoch`); raise if a failed sync cut it."""
        while True:
            if epoch != self._epoch:  # a sync failed since: the line is kept only if an earlier sync covered it
                kept, exc = self._cuts[epoch]
                if end <= kept:
                    return
                raise RecordWriteError.of(self._path, exc) from exc
            if self._synced >= end:
                return
            if self._syncing is not None:  # the sync in flight may have started before this line was written
                await self._syncing.wait()
                continue
            self._syncing, target = anyio.Event(), self._written
            try:
                await anyio.to_thread.run_sync(os.fsync, self._file.fileno())  # os.fsync looked up here: tests replace it
                self._synced = max(self._synced, target)
            except OSError as exc:
                await self._cut(exc)
            finally:
                self._syncing.set()
                self._syncing = None

    async def _cut(self, exc: OSError) -> None:
        """A sync failed: nothing past the last good sync is known to be on disk, so it is cut off (every append
        still waiting for it raises)."""
        async with self._lock:
            with contextlib.suppress(OSError):
                os.ftruncate(self._file.fileno(), self._synced)
            self._cuts[self._epoch] = (self._synced, exc)
            self._epoch += 1
            self._written = self._synced

    def close(self) -> None:
        try:
            if not self._sync_each:
                os.fsync(self._file.fileno())
        except OSError as exc:
            raise RecordWriteError(f"cannot sync {self._path} to disk ({exc.strerror or exc}): its trajectories are "
                                   "written but may not survive a crash of the machine. Free space on that disk (or "
                                   "fix it)") from exc
        finally:
            self._file.close()
