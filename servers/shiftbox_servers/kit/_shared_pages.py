"""Episode databases that share the snapshot's pages instead of copying them.

`Connection.deserialize` gives every episode a private copy of the whole snapshot (3 MB for banking,
all of it resident, and glibc keeps the freed copies after the episode is dropped). Here the snapshot's
bytes are held once per process in an anonymous memory file (memfd); each episode maps that file
privately (`MAP_PRIVATE`: the kernel copies a page only when the episode first writes to it), followed
by reserved, untouched address space the database can grow into, and SQLite's memdb VFS is pointed at
that buffer with `sqlite3_deserialize` (called through ctypes: Python's `deserialize` always copies).
A dropped episode's mapping is unmapped, and `trim_heap` hands freed heap back to the system.

Wherever any piece is missing (not Linux, not CPython 3.11-3.14, another sqlite3 module layout, the
mapping refused), `open_database` falls back to the private copy: same behaviour, more memory.
`SHIFTBOX_EPISODE_MEMORY=copy` forces the fallback (the benchmark compares both).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import sqlite3
import sys
import threading
import weakref
from typing import Any

GROWTH_BYTES = 256 << 20
"""How far an episode's database may grow beyond the snapshot (address space only; a write past it
fails like a full disk)."""
MEMORY_ENV = "SHIFTBOX_EPISODE_MEMORY"
_MAP_FIXED, _MAP_NORESERVE = 0x10, 0x4000  # Linux values on x86-64 and arm64 (the mmap module lacks them)
_SQLITE_LIMIT_VARIABLE_NUMBER = 9


class _Native:
    """libc and the sqlite3 library the `sqlite3` module itself uses, or the reason they are unusable."""

    def __init__(self) -> None:
        self.problem: str | None = None
        self.libc: Any = None
        self.sqlite: Any = None
        self.verified = False
        try:
            self._load()
        except (OSError, AttributeError, ImportError) as exc:
            self.problem = f"{type(exc).__name__}: {exc}"

    def _load(self) -> None:
        import _sqlite3
        import platform

        if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"):
            raise OSError(f"shared snapshot pages need Linux on x86-64 or arm64, not {sys.platform}/{platform.machine()}")
        if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 14):
            raise OSError(f"shared snapshot pages need CPython 3.11-3.14, not {sys.implementation.name} {sys.version}")
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.mmap.restype = ctypes.c_void_p
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.munmap.restype = ctypes.c_int
        lib = ctypes.CDLL(_sqlite3.__file__)  # resolves to the very library the module links
        lib.sqlite3_libversion.restype = ctypes.c_char_p
        if lib.sqlite3_libversion().decode() != sqlite3.sqlite_version:
            raise OSError("ctypes found another sqlite3 library than the sqlite3 module uses")
        lib.sqlite3_deserialize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
                                            ctypes.c_int64, ctypes.c_uint]
        lib.sqlite3_deserialize.restype = ctypes.c_int
        lib.sqlite3_limit.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.sqlite3_limit.restype = ctypes.c_int
        self.libc, self.sqlite = libc, lib

    def handle(self, conn: sqlite3.Connection) -> int:
        """The `sqlite3 *` of a connection: CPython's Connection object holds it right after its header.

        Checked once against a limit set through the public API before it is trusted."""
        pointer = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
        if not pointer:
            raise OSError("no sqlite3 handle in the connection object")
        if not self.verified:
            old = conn.getlimit(_SQLITE_LIMIT_VARIABLE_NUMBER)
            try:
                for probe in (old - 7, old - 11):
                    conn.setlimit(_SQLITE_LIMIT_VARIABLE_NUMBER, probe)
                    if self.sqlite.sqlite3_limit(pointer, _SQLITE_LIMIT_VARIABLE_NUMBER, -1) != probe:
                        raise OSError("the sqlite3 module's connection layout is not the one expected")
            finally:
                conn.setlimit(_SQLITE_LIMIT_VARIABLE_NUMBER, old)
            self.verified = True
        return pointer


_native: _Native | None = None
_native_lock = threading.Lock()


def _get_native() -> _Native:
    global _native
    with _native_lock:
        if _native is None:
            _native = _Native()
        return _native


class MappedDatabase(sqlite3.Connection):
    """A connection whose database is a private mapping of shared snapshot pages; unmapped on close."""

    _mapping: tuple[int, int] | None = None

    def close(self) -> None:
        if self._mapping is not None:
            with contextlib.suppress(sqlite3.Error):
                if self.in_transaction:  # a rollback writes pages back: while they are still mapped
                    self.execute("ROLLBACK")
        super().close()  # SQLite never touches the buffer after this (it does not own it)
        mapping, self._mapping = self._mapping, None
        if mapping is not None:
            _get_native().libc.munmap(*mapping)

    def __del__(self) -> None:
        self.close()


class SharedPages:
    """One snapshot's bytes in a memory file, mapped copy-on-write into every episode database."""

    def __init__(self, data: bytes):
        self.size = len(data)
        self._fd: int | None = None
        self.problem = f"{MEMORY_ENV}=copy" if os.environ.get(MEMORY_ENV) == "copy" else _get_native().problem
        if self.problem is None:
            try:
                fd = os.memfd_create("shiftbox-snapshot", os.MFD_CLOEXEC)
                with open(fd, "wb", closefd=False) as f:
                    f.write(data)
                self._fd = fd
                # mappings keep the file alive on their own: closing the fd with this object is safe
                weakref.finalize(self, os.close, fd)
            except (OSError, AttributeError) as exc:
                self.problem = f"memfd: {exc}"

    def open(self) -> sqlite3.Connection | None:
        """A new database over private mappings of the pages, or None (then the caller copies)."""
        if self._fd is None:
            return None
        native = _get_native()
        length = self.size + GROWTH_BYTES
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None, factory=MappedDatabase)
        try:
            handle = native.handle(conn)
        except OSError as exc:
            conn.close()
            self.problem = str(exc)
            return None
        prot = mmap.PROT_READ | mmap.PROT_WRITE
        base = native.libc.mmap(None, length, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)
        if base in (None, ctypes.c_void_p(-1).value):  # out of address space or mappings: copy instead
            conn.close()
            return None
        conn._mapping = (base, length)
        if native.libc.mmap(base, self.size, prot, mmap.MAP_PRIVATE | _MAP_FIXED, self._fd, 0) != base:
            conn.close()
            return None
        # flags 0: SQLite neither frees nor resizes the buffer; it grows in place up to `length`
        if native.sqlite.sqlite3_deserialize(handle, b"main", base, self.size, length, 0) != 0:
            conn.close()
            return None
        conn.execute(f"PRAGMA mmap_size = {length}")  # read pages in place, no copies in SQLite's cache
        return conn


def trim_heap() -> None:
    """Give freed heap memory back to the system (glibc keeps it otherwise); no-op elsewhere."""
    native = _get_native()
    trim = getattr(native.libc, "malloc_trim", None) if native.libc is not None else None
    if trim is not None:
        trim(0)
