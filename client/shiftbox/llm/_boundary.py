"""The boundary call: every completion (agent, user simulator, judge) goes through `complete()`.

Live, it calls litellm. Under a recording cassette it also writes each request and response; under
a replaying one it serves the recorded response and never touches the network. Recording at this
boundary (rather than patching HTTP, which is process-global) keeps concurrent simulations apart and
keeps credentials out of fixtures by construction: headers and keys are never part of a request here.
Under an LLM gate (`use_llm_gate`, for `--max-llm-concurrency`) a live call first waits for a slot
(the wait counts in `llm_s`); a replay takes none. Under an HTTP cassette (`HttpCassette`, `--llm-cassettes http`)
the call runs through litellm as if live, and its HTTP exchange is recorded or replayed by vcrpy.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from .._stopwatch import timed
from ._cassette import current_cassette
from ._gate import current_llm_gate
from ._litellm import call_litellm
from ._model import LLMConnection, LLMRequest


async def complete(request: LLMRequest, connection: LLMConnection | None = None) -> dict[str, Any]:
    """One chat completion as JSON (`choices[0].message`, `usage`): live, recorded or replayed.

    It never retries: callers use `complete_with_retries`, which counts what it retries."""
    cassette = current_cassette.get()
    if cassette is not None and cassette.mode == "replay" and not cassette.over_http:
        return cassette.replay(request)
    gate = None if cassette is not None and cassette.mode == "replay" else current_llm_gate.get()
    connection = connection or LLMConnection()
    with timed("llm_s"), cassette.serving(connection) if cassette is not None else nullcontext(connection) as used:
        if gate is None:
            response = await call_litellm(request, used)
        else:  # --max-llm-concurrency: only a call that reaches the provider takes a slot
            async with gate.slot():
                response = await call_litellm(request, used)
    if cassette is not None:
        cassette.record(request, response)
    return response
