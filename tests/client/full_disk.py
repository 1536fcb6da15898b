"""A full disk, simulated for chosen files: no tmpfs, no root, deterministic.

`FullDisk.fill(path, after=n)` lets `n` more appends to `path` (each ended by an fsync) succeed, then makes every
write to it fail as a full disk does: `os.write` puts the first half of the bytes on disk (a torn line) and raises
ENOSPC, and `os.fsync` raises ENOSPC (what a filesystem with delayed allocation reports when the written pages
cannot be placed). `path` need not exist yet. Every other file is untouched.
"""

from __future__ import annotations

import errno
import os

import pytest

_real_write, _real_fsync = os.write, os.fsync


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class FullDisk:
    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self._full: dict[str, int] = {}
        """path -> appends still allowed"""
        self.failures = 0
        monkeypatch.setattr(os, "write", self._write)
        monkeypatch.setattr(os, "fsync", self._fsync)

    def fill(self, *paths: os.PathLike[str] | str, after: int = 0) -> None:
        for path in paths:
            self._full[os.fspath(path)] = after

    def free(self) -> None:
        self._full.clear()

    def _armed(self, fd: int) -> str | None:
        if not self._full:
            return None
        try:
            st = os.fstat(fd)
        except OSError:
            return None
        for path in self._full:
            try:
                other = os.stat(path)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                return path
        return None

    def _is_full(self, fd: int, *, append_ends: bool = False) -> bool:
        path = self._armed(fd)
        if path is None or self._full[path] > 0:
            if path is not None and append_ends:
                self._full[path] -= 1
            return False
        return True

    def _write(self, fd: int, data: bytes) -> int:
        if self._is_full(fd):
            self.failures += 1
            if len(data) > 1:
                _real_write(fd, bytes(data)[: len(data) // 2])
            raise _enospc()
        return _real_write(fd, data)

    def _fsync(self, fd: int) -> None:
        if self._is_full(fd, append_ends=True):
            self.failures += 1
            raise _enospc()
        _real_fsync(fd)

