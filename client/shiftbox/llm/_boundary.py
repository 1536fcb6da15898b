"""The boundary call: every completion (agent, user simulator, judge) goes through `complete()`.

Live, it calls litellm. Under a recording cassette it also writes each request and response; under
a replaying one it serves the recorded response and never touches the network. Recording at this
boundary (rather than patching HTTP, which is process-global) keeps concurrent simulations apart and
keeps credentials out of fixtures by construction: headers and keys are never part of a request here.
Under an LLM gate (`use_llm_gate`, for `--max-llm-concurrency`) a live call first waits for a slot
(the wait counts in `llm_s`); a replay takes none.
"""

from __future__ import annotations

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
    if cassette is not None and cassette.mode == "replay":
        return cassette.replay(request)
    gate = current_llm_gate.get()
    with timed("llm_s"):
        if gate is None:
            response = await call_litellm(request, connection or LLMConnection())
        else:  # --max-llm-concurrency: only a live call takes a slot
            async with gate.slot():
                response = await call_litellm(request, connection or LLMConnection())
    if cassette is not None:
        cassette.record(request, response)
    return response
