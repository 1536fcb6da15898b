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


class timed:  # noqa: N801  (used as a function: `with timed("llm_s"):`)
    """Add the block's wall time to `kind` of the enclosing stopwatch (no-op without one). A class rather than a
    generator: it wraps every completion and tool call, and a generator's context manager costs several calls more."""

    __slots__ = ("kind", "spent", "start")

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __enter__(self) -> None:
        self.spent = _current.get()
        if self.spent is not None:
            self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        spent = self.spent
        if spent is not None:
            spent[self.kind] = spent.get(self.kind, 0.0) + time.perf_counter() - self.start
