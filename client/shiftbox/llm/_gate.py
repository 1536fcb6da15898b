"""Gates on in-flight LLM calls (`--max-llm-concurrency`): `complete()` holds a slot around each live call.

A provider's rate limit counts requests from every worker, so the cap is shared: by one process's simulations
(`LocalLlmGate`), by worker processes on one machine (`ProcessLlmGate`), or by Ray actors on a cluster
(`RayLlmGate`). A gate is bound with `use_llm_gate` like a cassette; without one the boundary runs as before, and
a replay from a cassette never takes a slot (it does not reach the provider).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import anyio

from ..cluster import import_ray

FIRST_POLL_S = 0.001
"""A worker process waiting for a slot looks again after this long, doubling up to `LAST_POLL_S`."""
LAST_POLL_S = 0.008
RAY_ACTOR_CONCURRENCY = 100_000
"""Waiting acquires are coroutines of the slot keeper; a release must never queue behind them."""


def _checked(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"an LLM concurrency limit is a whole number >= 1, not {limit!r}")
    return limit


class LlmGate(ABC):
    """At most `limit` LLM calls in flight among everyone holding this gate (or a pickled copy of it)."""

    limit: int

    @abstractmethod
    async def acquire(self) -> None:
        """Wait for a free slot and take it (without blocking the event loop)."""

    @abstractmethod
    async def release(self) -> None:
        """Give back a slot this process took."""

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the block; it is given back even when the block is cancelled."""
        await self.acquire()
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.release()


class LocalLlmGate(LlmGate):
    """One process's simulations share `limit` slots, first come first served.

    Loop- and thread-safe rather than an asyncio semaphore: the judge's calls run on an event loop of their own
    (`complete_blocking`) with the caller's context, so a bound gate can be reached from two loops."""

    def __init__(self, limit: int):
        self.limit = _checked(limit)
        self._free = limit
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()
        self._lock = threading.Lock()

    async def acquire(self) -> None:
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            loop = asyncio.get_running_loop()
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except BaseException:
            with self._lock:
                if waiter in self._waiters:  # still waiting: nothing to give back
                    self._waiters.remove(waiter)
                    raise
            if waiter[1].done() and not waiter[1].cancelled():
                self._give_back()  # the slot arrived just before the cancellation
            raise  # otherwise `_hand_over` finds the future cancelled and passes the slot on

    async def release(self) -> None:
        self._give_back()

    def _give_back(self) -> None:
        with self._lock:
            if not self._waiters:
                self._free += 1
                return
            loop, granted = self._waiters.popleft()
        loop.call_soon_threadsafe(self._hand_over, granted)

    def _hand_over(self, granted: asyncio.Future[None]) -> None:
        if granted.cancelled():
            self._give_back()
        else:
            granted.set_result(None)


def _remove_in(owner: int, directory: Path) -> None:
    """Remove the slot files, in the process that made them only (a forked child inherits the finalizer)."""
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)


class ProcessLlmGate(LlmGate):
    """Worker processes on one machine share `limit` slots: one file per slot, held with `flock`.

    The kernel drops a process's file locks when it exits, so a killed worker's slots are free at once (a
    multiprocessing semaphore would stay down by them for the rest of the run). It pickles in any way (its
    directory and limit) and each process opens the files itself. Waiting polls with a short backoff
    (`FIRST_POLL_S` to `LAST_POLL_S`): no thread per waiter, the event loop never blocks. The process that
    made the gate removes the directory when the gate is collected: keep it while workers use it."""

    def __init__(self, limit: int):
        self.limit = _checked(limit)
        self.directory = Path(tempfile.mkdtemp(prefix="shiftbox-llm-gate-"))
        for n in range(self.limit):
            (self.directory / f"slot{n}").touch()
        weakref.finalize(self, _remove_in, os.getpid(), self.directory)
        self._opened()

    def __getstate__(self) -> dict[str, Any]:
        return {"limit": self.limit, "directory": self.directory}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.limit, self.directory = state["limit"], state["directory"]
        self._opened()

    def _opened(self) -> None:
        self._pid, self._files, self._held = os.getpid(), [], set()
        self._lock = threading.Lock()

    def _slot_files(self) -> list[int]:
        """This process's descriptors (opened again after a fork: a shared one would share its locks)."""
        if self._pid != os.getpid():
            for fd in self._files:  # the parent's: closing them here frees nothing the parent holds
                os.close(fd)
            self._opened()
        if not self._files:
            self._files = [os.open(self.directory / f"slot{n}", os.O_RDWR | os.O_CLOEXEC) for n in range(self.limit)]
        return self._files

    def _try_acquire(self) -> bool:
        with self._lock:
            for n, fd in enumerate(self._slot_files()):
                if n in self._held:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                self._held.add(n)
                return True
            return False

    async def acquire(self) -> None:
        wait = FIRST_POLL_S
        while not self._try_acquire():
            await anyio.sleep(wait)
            wait = min(2 * wait, LAST_POLL_S)

    async def release(self) -> None:
        with self._lock:
            n = self._held.pop()
            fcntl.flock(self._files[n], fcntl.LOCK_UN)


class _SlotKeeper:
    """The Ray actor behind `RayLlmGate`: an asyncio semaphore, and who holds or waits for which slot."""

    def __init__(self, limit: int):
        self.free = asyncio.Semaphore(limit)
        self.waiting: dict[str, str] = {}  # token -> holder (the Ray actor asking, "" outside actors)
        self.held: dict[str, str] = {}
        self.abandoned: set[str] = set()  # tokens whose caller stopped waiting: their grant goes back

    async def acquire(self, token: str, holder: str) -> None:
        self.waiting[token] = holder
        try:
            await self.free.acquire()
        finally:
            del self.waiting[token]
        if token in self.abandoned:
            self.abandoned.discard(token)
            self.free.release()
        else:
            self.held[token] = holder

    async def release(self, token: str) -> None:
        """Give back the token's slot; a token that holds none yet is remembered, so its grant goes back."""
        if self.held.pop(token, None) is not None:
            self.free.release()
        else:
            self.abandoned.add(token)

    async def release_holder(self, holder: str) -> int:
        """Give back the slots a (dead) actor holds and those it waits for; how many it held."""
        self.abandoned.update(token for token, who in self.waiting.items() if who == holder)
        tokens = [token for token, who in self.held.items() if who == holder]
        for token in tokens:
            await self.release(token)
        return len(tokens)


class RayLlmGate(LlmGate):
    """Ray actors and tasks, on any node, share `limit` slots kept by one actor (`num_cpus=0`).

    It pickles as that actor's handle, so it can be passed to remote actors. Each slot has a token: a caller
    cancelled while waiting sends its token back, and the slot, granted or not yet, is never lost. The slots of
    an actor that died are freed by `release_slots_of` (Ray does not tell the keeper)."""

    def __init__(self, limit: int, actor: Any = None):
        self.limit = _checked(limit)
        if actor is None:
            ray = import_ray()  # an optional extra: imported only when a Ray gate is made
            keeper = ray.remote(num_cpus=0, max_concurrency=RAY_ACTOR_CONCURRENCY)(_SlotKeeper)
            actor = keeper.remote(limit)
        self.actor = actor
        self._held: list[str] = []
        self._holder: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (RayLlmGate, (self.limit, self.actor))

    def _holder_id(self) -> str:
        if self._holder is None:
            self._holder = import_ray().get_runtime_context().get_actor_id() or ""
        return self._holder

    async def acquire(self) -> None:
        token = uuid.uuid4().hex
        try:
            await self.actor.acquire.remote(token, self._holder_id())
        except BaseException:
            self.actor.release.remote(token)
            raise
        self._held.append(token)

    async def release(self) -> None:
        self.actor.release.remote(self._held.pop())

    async def release_slots_of(self, actor_id: str) -> int:
        """Free the slots held (or waited for) by the Ray actor `actor_id` (hex, as `get_actor_id()` in it), one
        that died; how many it held. Its later calls, if Ray restarts it, take slots as before."""
        return await self.actor.release_holder.remote(actor_id)


current_llm_gate: ContextVar[LlmGate | None] = ContextVar("shiftbox_llm_gate", default=None)


@contextmanager
def use_llm_gate(gate: LlmGate | None) -> Iterator[LlmGate | None]:
    """Bind a gate to the current context (its task and the tasks it starts); None binds none."""
    token = current_llm_gate.set(gate)
    try:
        yield gate
    finally:
        current_llm_gate.reset(token)
