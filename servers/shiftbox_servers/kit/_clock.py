"""Deterministic time and ids for one episode: the same calls in the same order give the same values."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

CLOCK_STEP = timedelta(minutes=1)
"""How far an episode's clock moves per write (a tool call that changed the database)."""


class EpisodeClock:
    """Time that moves only with the episode's writes, so the time a state holds depends on its writes alone.

    The n-th tool call that changes the database runs at `start + n * CLOCK_STEP` (start: the snapshot's
    fixed `clock_start`), and so does every call between the (n-1)-th write and it: reads, rejected or
    failed calls and calls that change nothing see the time of the next write and never move the clock.
    `Episode.atomic` is the one place that decides what counts as a write and calls `record_write`.
    """

    def __init__(self, start: datetime):
        self._start = start
        self._writes = 0

    @property
    def writes(self) -> int:
        """Tool calls so far that changed the database."""
        return self._writes

    def record_write(self) -> None:
        self._writes += 1

    def now(self) -> datetime:
        return self._start + (self._writes + 1) * CLOCK_STEP

    def now_iso(self) -> str:
        return self.now().isoformat(timespec="seconds")


class IdCounters:
    """Per-episode id generator: `prefix_000001`, … continuing after the highest id of that shape the
    episode's table already holds (one query per prefix, then pure counting)."""

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def next_id(self, db: sqlite3.Connection, table: str, column: str, prefix: str) -> str:
        n = self._next.get(prefix)
        if n is None:
            start = len(prefix) + 2
            (highest,) = db.execute(
                f'SELECT MAX(CAST(SUBSTR("{column}", ?) AS INTEGER)) FROM "{table}" '
                f'WHERE "{column}" GLOB ? AND SUBSTR("{column}", ?) NOT GLOB \'*[^0-9]*\'',
                (start, f"{prefix}_[0-9]*", start),
            ).fetchone()
            n = (highest or 0) + 1
        self._next[prefix] = n + 1
        return f"{prefix}_{n:06d}"
