"""trajectories.jsonl: one trajectory per line, appended and fsynced, read back tolerating a torn last line."""

from __future__ import annotations

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

    A complete line that is not a trajectory is a RunFileError naming the file and the line.
    """
    path = run_dir / TRAJECTORIES_FILE
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    trajectories = []
    for number, line in enumerate(complete.splitlines(), 1):
        if not line.strip():
            continue
        try:
            trajectories.append(load_json(Trajectory, line))
        except ValidationError as exc:
            raise RunFileError(f"{path} line {number}: does not parse as a trajectory ({describe_invalid(exc)}); remove or "
                               "restore that line") from None
    if repair and len(complete) != len(data):
        with path.open("r+b") as f:
            f.truncate(len(complete))
    return trajectories


class TrajectoryWriter:
    """Appends one trajectory per line and fsyncs it: what is written survives a kill -9; what could not be written
    (a full disk) is a RecordWriteError and leaves nothing behind, so `--resume` runs that simulation again."""

    def __init__(self, path: Path, *, sync_each: bool = True):
        """`sync_each=False`: the file is synced once, by `close`, not after every line (for a run never resumed)."""
        self._path, self._sync_each = path, sync_each
        self._file = path.open("ab", buffering=0)
        self._lock = anyio.Lock()

    async def append(self, trajectory: Trajectory) -> None:
        line = dump_json(trajectory).encode() + b"\n"  # a lone surrogate an agent sent: escaped
        async with self._lock:
            append_line(self._file.fileno(), line, self._path, sync=self._sync_each)

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
