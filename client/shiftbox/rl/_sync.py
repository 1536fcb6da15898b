"""`ShiftboxEnv` from synchronous code (a training loop without an event loop): the same calls, blocking."""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..tasks import Task
from ._env import AssistantMessage, Observation, ShiftboxEnv


class SyncShiftboxEnv:
    """A `ShiftboxEnv` (built with the same arguments) driven from an event loop in a thread of its own;
    `close()` (or `with`) stops the environment, then that thread."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._stack: contextlib.ExitStack | None = contextlib.ExitStack()
        self._portal: BlockingPortal = self._stack.enter_context(start_blocking_portal("asyncio"))
        self.env = ShiftboxEnv(*args, **kwargs)

    def __enter__(self) -> SyncShiftboxEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self, task: Task | str, *, trial: int = 0) -> Observation:
        return self._portal.call(functools.partial(self.env.reset, task, trial=trial))

    def step(self, message: AssistantMessage) -> tuple[Observation, float, bool, dict[str, Any]]:
        return self._portal.call(self.env.step, message)

    def truncate(self) -> tuple[float, dict[str, Any]] | None:
        return self._portal.call(self.env.truncate)

    def close(self) -> None:
        if self._stack is None:
            return
        stack, self._stack = self._stack, None
        with stack:
            self._portal.call(self.env.close)
