"""Episodes: one simulation's private copy of a snapshot, with its own clock and id counters.

MCP 2026-07-28 has no protocol sessions, so the episode is shiftbox's unit of state. A request
belongs to the episode its connection names (the HTTP path `/episodes/<id>/mcp`, the legacy
`Mcp-Session-Id` header); only a connection that names none (plain `/mcp`, stdio, in-process) selects
episodes with `_meta["shiftbox/episode"]`; anything else uses the process's default episode (stdio: one
process, one episode). See `request_episode_id` and docs/servers.md.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, TypeVar

import anyio

from ._clock import EpisodeClock, IdCounters
from ._errors import DomainError, ErrorKind
from ._shared_pages import trim_heap
from ._snapshot import Snapshot, state_diff, state_digest

EPISODE_META_KEY = "shiftbox/episode"
CLOSE_META_KEY = "shiftbox/close"
"""On a resources/read: drop the episode once the read is answered (the harness's final digest)."""
DEFAULT_EPISODE = "default"
EPISODE_SCOPE_KEY = "shiftbox.episode"
"""The ASGI scope key under which the HTTP router keeps the episode an `/episodes/<id>/mcp` path names."""


def connection_episode(scope: Mapping[str, Any], session_id: str | None) -> str | None:
    """The episode an HTTP connection names: its `/episodes/<id>/mcp` path (the router's `EPISODE_SCOPE_KEY` in the
    request's ASGI `scope`), else `session_id`, its legacy `Mcp-Session-Id` header; None when it names neither (an
    empty header names none). The one spelling of that rule (`connection_episode_id`, the HTTP calls fast path)."""
    return scope.get(EPISODE_SCOPE_KEY) or session_id or None


EPISODE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
T = TypeVar("T")
_OPENED = itertools.count()
"""Numbers episodes in the order this process opens them (`Episode.opened`)."""
IN_PLACE_DIFF_CHANGES = 500
"""Up to this many rows written, an episode's diff is computed in place (milliseconds); past it, from a copy of its
database in a worker thread (`Episode.read_digest`, `read_diff`), so one large episode's digest does not stall every other
episode the server serves (30,000 writes took 2.5 s)."""


def is_full(exc: BaseException) -> bool:
    """`exc` is SQLite's "database or disk is full": an episode's database reached its size limit (`GROWTH_BYTES`
    beyond the snapshot, or SQLite's own in-memory limit)."""
    return isinstance(exc, sqlite3.Error) and getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL


class Episode:
    """An in-memory database copied from the snapshot, plus deterministic time and ids."""

    def __init__(self, episode_id: str, snapshot: Snapshot):
        self.id = episode_id
        self.snapshot = snapshot
        self.db = snapshot.open_copy()
        self.clock = EpisodeClock(snapshot.manifest.clock_start)
        self.ids = IdCounters()
        self.tool_calls = 0
        self.succeeded: set[str] = set()
        """Names of the tools that have succeeded in this episode (what the dependency graph checks)."""
        self.last_used = time.monotonic()
        self.opened = next(_OPENED)
        """Its place in the order episodes were opened (an idle sweep drops them in that order: `evict_idle`)."""

    def now_iso(self) -> str:
        return self.clock.now_iso()

    def next_id(self, table: str, column: str, prefix: str) -> str:
        return self.ids.next_id(self.db, table, column, prefix)

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        cur = self.db.execute(sql, params)
        cur.row_factory = sqlite3.Row
        return cur.fetchall()

    def query_one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> sqlite3.Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> int:
        """Run a write; returns the number of rows changed."""
        return self.db.execute(sql, params).rowcount

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One tool call: all its writes happen, or none do (a failed call leaves state unchanged).

        The only place the clock moves: one step when the block ends normally having changed the
        database. Reads, failed calls (rolled back) and calls that write no row leave the clock as is,
        so two episodes with the same successful writes in the same order hold the same state.
        """
        before = self.db.total_changes
        self.db.execute("SAVEPOINT tool_call")
        try:
            yield
        except BaseException:
            if self.db.in_transaction:  # SQLite may have rolled the whole transaction back itself (a full database)
                self.db.execute("ROLLBACK TO tool_call")
                self.db.execute("RELEASE tool_call")
            raise
        self.db.execute("RELEASE tool_call")
        if self.db.total_changes != before:
            self.clock.record_write()

    def digest(self) -> str:
        """Equal digests mean equal state (computed from the change log: cost grows with writes only)."""
        return self._digest_of(self.snapshot.base, self.db)

    def diff(self) -> dict[str, Any]:
        return state_diff(self.snapshot.base, self.db)

    async def read_digest(self) -> str:
        """`digest()`, without blocking the event loop when the episode has written much (`_read`)."""
        return await self._read(self._digest_of)

    async def read_diff(self) -> dict[str, Any]:
        """`diff()`, without blocking the event loop when the episode has written much (`_read`)."""
        return await self._read(state_diff)

    def _digest_of(self, base: sqlite3.Connection, current: sqlite3.Connection) -> str:
        return state_digest(self.snapshot.manifest.content_sha256, state_diff(base, current))

    async def _read(self, of_state: Callable[[sqlite3.Connection, sqlite3.Connection], T]) -> T:
        """`of_state(snapshot, episode)` of the state the episode is in now: in place for an episode that has written
        little; else its database is copied at once (calls made meanwhile do not change the copy) and `of_state`
        runs on the copy, in a worker thread, with a snapshot copy of that thread's own."""
        if self.db.total_changes <= IN_PLACE_DIFF_CHANGES:
            return of_state(self.snapshot.base, self.db)
        return await anyio.to_thread.run_sync(_of_copy, self.snapshot.data, self.db.serialize(), of_state)

    def close(self) -> None:
        self.db.close()


def _of_copy(snapshot: bytes, episode: bytes, of_state: Callable[[sqlite3.Connection, sqlite3.Connection], T]) -> T:
    base, current = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    try:
        base.deserialize(snapshot)
        current.deserialize(episode)
        return of_state(base, current)
    finally:
        base.close()
        current.close()


class EpisodeStore:
    """Creates episodes on first use, drops them on request or when idle, and bounds their number.

    An id once dropped or evicted stays closed: using it again is a `not_found` error naming the
    episode and why it closed, never a silently recreated empty database. The last `closed_ids_kept`
    closed ids are remembered (older ones are forgotten, and could be opened anew). The default
    episode (stdio: the process's one episode) is never evicted for being idle.
    """

    def __init__(self, snapshot: Snapshot, *, max_episodes: int = 1000, idle_timeout_s: float = 3600.0,
                 closed_ids_kept: int = 10_000):
        self.snapshot = snapshot
        self.max_episodes = max_episodes
        self.idle_timeout_s = idle_timeout_s
        self.closed_ids_kept = closed_ids_kept
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        """Open episodes, least recently used first (`get` moves the one it returns to the end), so the idle ones
        are the first ones: a sweep looks at those and stops at the first in use (`evict_idle`)."""
        self.closed_ids: OrderedDict[str, str] = OrderedDict()
        """Recently closed episode ids -> why they closed."""
        self._drops_untrimmed = 0
        """Drops since the heap was last trimmed (`drop`)."""

    def __len__(self) -> int:
        return len(self._episodes)

    def __contains__(self, episode_id: str) -> bool:
        return episode_id in self._episodes

    def get(self, episode_id: str) -> Episode:
        """The named episode, created fresh from the snapshot if it was never opened."""
        episode = self._episodes.get(episode_id)
        if episode is None:
            if not EPISODE_ID_PATTERN.match(episode_id):
                raise DomainError(
                    f"invalid episode id {episode_id!r}: use 1-128 letters, digits, '_', '.', ':' or '-'",
                    kind=ErrorKind.INVALID_ARGUMENTS,
                )
            why = self.closed_ids.get(episode_id)
            if why is not None:
                raise DomainError(f"episode {episode_id!r} is closed ({why}); its state is gone. "
                                  "Start a new episode under a new id", kind=ErrorKind.NOT_FOUND)
            self.evict_idle()
            if len(self._episodes) >= self.max_episodes:
                raise DomainError(
                    f"this server already holds {self.max_episodes} episodes; close finished ones "
                    "(DELETE /episodes/<id>) or start the server with a larger --max-episodes",
                    kind=ErrorKind.CAPACITY,
                )
            episode = self._episodes[episode_id] = Episode(episode_id, self.snapshot)
        else:
            self._episodes.move_to_end(episode_id)
        episode.last_used = time.monotonic()
        return episode

    def drop(self, episode_id: str, reason: str = "dropped") -> bool:
        """Close an open episode and free its memory; False if it was not open.

        The heap is trimmed once as many drops as episodes stay open have freed theirs (and when the last one
        closes): a trim walks the whole heap, which grows with the episodes open, so trimming at every drop cost
        each one more the more were open."""
        episode = self._episodes.pop(episode_id, None)
        if episode is None:
            return False
        episode.close()
        self.closed_ids[episode_id] = reason
        while len(self.closed_ids) > self.closed_ids_kept:
            self.closed_ids.popitem(last=False)
        self._drops_untrimmed += 1
        if self._drops_untrimmed >= len(self._episodes):
            self._drops_untrimmed = 0
            trim_heap()
        return True

    def evict_idle(self) -> int:
        """Drop every episode unused for longer than the idle timeout, in the order they were opened; returns how
        many. Looks at the idle episodes and the first one in use only (the store keeps them by last use), so
        a creation, which sweeps first, costs the same however many episodes are open."""
        cutoff = time.monotonic() - self.idle_timeout_s
        idle = []
        for episode in self._episodes.values():
            if episode.last_used >= cutoff:
                break
            if episode.id != DEFAULT_EPISODE:
                idle.append(episode)
        idle.sort(key=lambda episode: episode.opened)
        for episode in idle:
            self.drop(episode.id, f"evicted after more than {self.idle_timeout_s:g} s idle")
        return len(idle)


current_episode_id: ContextVar[str] = ContextVar("shiftbox_episode", default=DEFAULT_EPISODE)
"""The episode the request being handled belongs to (set by `in_episode`)."""


class in_episode:  # named for its `with` line, as `contextlib.suppress` is
    """`with in_episode(episode_id):` the request handled in the block belongs to that episode (`current_episode_id`,
    what the SDK's tool handlers and the resource readers read), and no longer after it: the server middleware and
    the in-process session run their requests in it."""

    __slots__ = ("_episode_id", "_token")
    _token: Token[str]

    def __init__(self, episode_id: str):
        self._episode_id = episode_id

    def __enter__(self) -> None:
        self._token = current_episode_id.set(self._episode_id)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        current_episode_id.reset(self._token)
