"""The boundary for synchronous callers (the LLM judge, called while scoring a run).

Its calls run on one background event loop shared by every such call: the caller may or may not be
inside an event loop of its own, and litellm's cached async clients stay on the loop that made them.
The caller's context goes along (`run_coroutine_threadsafe` copies it), so a bound cassette records or
replays the call like any other.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ._model import LLMConnection, LLMRequest
from ._retries import complete_with_retries

_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="shiftbox-llm", daemon=True).start()
        return _loop


def complete_blocking(request: LLMRequest, connection: LLMConnection, *, retries: int,
                      backoff_s: float = 0.5, what: str | None = None) -> dict[str, Any]:
    """`complete_with_retries()` from synchronous code: waits for the answer; raises what it raises."""
    call = complete_with_retries(request, connection, retries=retries, backoff_s=backoff_s, what=what)
    return asyncio.run_coroutine_threadsafe(call, _background_loop()).result()
