"""Models as lines of JSON, also when some text in them is not valid Unicode.

An LLM can emit a lone UTF-16 surrogate ("\\ud83d"). JSON can escape one but UTF-8 cannot carry it,
and pydantic refuses it both ways: serializing raises, and its JSON parser rejects the escape. Such a
model is written with JSON escapes instead (that line is then all ASCII) and read back with `json`;
every other model is written and read exactly as pydantic does. Lines are appended with `append_line`, the one
writer of shiftbox's append-only files: a line is on disk whole, or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from shiftbox_servers.kit import loads_json

from .errors import RecordWriteError

M = TypeVar("M", bound=BaseModel)


def dump_json(model: BaseModel) -> str:
    """`model.model_dump_json()`, or the same value with ASCII escapes when it holds a lone surrogate."""
    try:
        return model.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(model.model_dump(mode="json"), separators=(",", ":"))


def load_json(cls: type[M], line: str | bytes) -> M:
    """The inverse of `dump_json`."""
    try:
        return cls.model_validate_json(line)
    except ValidationError as exc:
        try:
            data = loads_json(line, "a line", finite=False)  # bounded: a line nested 100,000 deep is refused
        except ValueError:
            raise exc from None
        return cls.model_validate(data)


def append_line(fd: int, line: bytes, path: Path, *, sync: bool = True) -> None:
    """Append `line` to the file open as `fd` and fsync it (unless not `sync`: the caller syncs the file later). A
    write or fsync that fails (a full disk, a failing one)
    leaves no part of the line behind (the file is cut back to its old end) and raises RecordWriteError naming
    `path`: a reader never finds a record that was reported as not written, nor a torn line before the next one.
    The caller keeps other writers of the file out meanwhile (one writer per file, or a lock)."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise RecordWriteError.of(path, exc) from exc
