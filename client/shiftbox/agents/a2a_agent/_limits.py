"""What an A2A agent sends is bounded as a `cmd:` agent's lines are: every response to shiftbox's requests is read
no further than `MAX_LINE_BYTES` (a 40 MB answer once took the harness to 1 GB), and a JSON one (the agent card, a
blocking call's answer) no deeper than `MAX_JSON_DEPTH` before the a2a-sdk parses it (Python's JSON parser and
protobuf's recurse: a card nested 100,000 deep was a raw RecursionError)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._cassette_file import json_depth
from .._external import MAX_LINE_BYTES
from .._gateway_agent import ExternalAgentError

if TYPE_CHECKING:
    import httpx

CARD_PATH = "/.well-known/agent-card.json"
MAX_JSON_DEPTH = 64
"""Arrays and objects nested in an agent's JSON answer: an A2A card or message nests fewer than 10 deep."""


class A2AReplyRefused(ExternalAgentError):
    """An A2A agent's answer over a limit (size, JSON nesting): the agent did not answer as an agent, so its
    simulation is not scored (and a card so refused refuses the run)."""


def too_large(shown: str) -> A2AReplyRefused:
    return A2AReplyRefused(f"the A2A agent at {shown} sent an answer over {MAX_LINE_BYTES} bytes (the limit, as for a "
                           f"cmd: agent's line) and was not read further: keep each answer under {MAX_LINE_BYTES} "
                           "bytes")


def capped_client(shown: str, **options: Any) -> httpx.AsyncClient:
    """An httpx client (`options` are httpx's) whose responses are checked before anyone reads them: a declared
    length over the limit is refused at once, every body is counted as it streams in and refused past the limit,
    and a JSON body is read (so bounded) and its nesting checked. `shown` names the agent (credentials redacted)."""
    import httpx

    class Capped(httpx.AsyncByteStream):
        def __init__(self, inner: Any):
            self.inner = inner

        async def __aiter__(self) -> Any:
            taken = 0
            async for chunk in self.inner:
                taken += len(chunk)
                if taken > MAX_LINE_BYTES:
                    raise too_large(shown)
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    async def check(response: httpx.Response) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_LINE_BYTES:
            await response.aclose()
            raise too_large(shown)
        response.stream = Capped(response.stream)
        if "json" in response.headers.get("content-type", ""):
            body = await response.aread()
            if json_depth(body.decode("utf-8", "replace")) > MAX_JSON_DEPTH:
                what = (f"the agent card of the A2A agent at {shown}" if response.request.url.path.endswith(CARD_PATH)
                        else f"the answer of the A2A agent at {shown}")
                raise A2AReplyRefused(f"{what} nests deeper than {MAX_JSON_DEPTH} arrays and objects (the limit); it "
                                      "is not an A2A answer shiftbox reads")

    return httpx.AsyncClient(event_hooks={"response": [check]}, **options)
