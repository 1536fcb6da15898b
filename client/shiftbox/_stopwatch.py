"""Where a simulation's time goes: seconds inside the LLM boundary and inside MCP calls.

The orchestrator opens a `stopwatch()` per simulation; `llm.complete` and the world's episode calls
add to it with `timed(kind)`. The sums land in `Trajectory.timing` (`llm_s`, `mcp_s`), next to
`wall_s`; like every timing they are left out of equality, so replays still compare equal.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_current: ContextVar[dict[str, float] | None] = ContextVar("shiftbox_stopwatch", default=None)


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """Collect the timed sections of this task (and the tasks it starts) into a fresh dict."""
    spent: dict[str, float] = {}
    token = _current.set(spent)
    try:
        yield spent
    finally:
        _current.reset(token)


@contextmanager
def timed(kind: str) -> Iterator[None]:
    """Add the block's wall time to `kind` of the enclosing stopwatch (no-op without one)."""
    spent = _current.get()
    if spent is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        spent[kind] = spent.get(kind, 0.0) + time.perf_counter() - start
