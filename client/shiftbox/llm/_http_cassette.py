"""The boundary's HTTP-level mode: one simulation's LLM exchanges as HTTP, in a vcrpy cassette (`--llm-cassettes
http`, needs the `vcr` extra).

The boundary still makes every call, but as if live: the request is built and the response converted as litellm
does (by litellm, or by the fast path's own equivalents), and the HTTP exchange underneath is recorded into, or answered
from, the simulation's own cassette. vcrpy's global patch is not used: httpx's async transport is wrapped once per
process (`_routed`), and each request goes to the cassette bound to its simulation's context while the boundary's
call runs, or straight through when none is (MCP traffic, other simulations without one, anything else). So
concurrent simulations never share a cassette. Credential headers are filtered as `shiftbox.vcr` filters them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from .._cassette_file import check_cassette_file
from ..errors import CassetteMiss
from ._cassette import Cassette
from ._model import LLMConnection, LLMRequest

REPLAY_API_KEY = "shiftbox-http-replay"
"""The key a replay sends when none is configured: the request never leaves the process, and keys are not matched."""

_bound: ContextVar[HttpCassette | None] = ContextVar("shiftbox_http_cassette", default=None)
_patch_lock = threading.Lock()
_original: list[Any] = []  # httpx.AsyncHTTPTransport.handle_async_request before `_routed` wrapped it


async def _routed(self: Any, request: Any) -> Any:
    """httpx's async transport, routed: through the bound simulation's vcrpy cassette, or as it was."""
    original = _original[0]
    cassette = _bound.get()
    if cassette is None:
        return await original(self, request)
    import httpx
    from vcr.errors import CannotOverwriteExistingCassetteException
    from vcr.stubs.httpx_stubs import vcr_handle_async_request

    try:
        return await vcr_handle_async_request(cassette.vcr_cassette, original, httpx)(self, request)
    except CannotOverwriteExistingCassetteException as exc:
        cassette.missed = exc  # the openai SDK wraps whatever its transport raises: remembered for `serving`
        raise


def _install_routing() -> None:
    """Wrap httpx's async transport once per process (kept: simulations may still be running)."""
    import httpx

    with _patch_lock:
        if not _original:
            _original.append(httpx.AsyncHTTPTransport.handle_async_request)
            httpx.AsyncHTTPTransport.handle_async_request = _routed  # type: ignore[method-assign]


def routing_installed() -> bool:
    """Whether httpx's async transport is wrapped (an HTTP cassette was made in this process): then every fast-path
    request goes through httpx's transport, where the wrapper sees it."""
    return bool(_original)


def http_cassette_file(path: Path) -> Path:
    """A simulation's HTTP cassette next to where its boundary cassette would be (`<sim>.yaml`, vcrpy's YAML)."""
    return path.with_suffix(".yaml")


class HttpCassette(Cassette):
    """One simulation's LLM exchanges as vcrpy HTTP interactions: recorded (every request sent, vcrpy mode `all`)
    or replayed (mode `none`: a request the cassette does not hold is a `CassetteMiss`, nothing is sent)."""

    over_http = True

    def __init__(self, simulation_id: str, path: Path, mode: Literal["record", "replay"]):
        from ..vcr import load_vcr_cassette, make_vcr

        self.simulation_id, self.path, self.mode = simulation_id, path, mode
        self.interactions, self.position, self.calls = [], 0, 0
        self.missed: Exception | None = None
        if mode == "replay" and not path.exists():
            raise CassetteMiss(f"cassette missing for {simulation_id}: {path} does not exist")
        if path.exists():
            check_cassette_file(path)
        self.vcr_cassette = load_vcr_cassette(make_vcr("none" if mode == "replay" else "all")
                                              .get_merged_config(path=str(path)))
        _install_routing()

    def replay(self, request: LLMRequest) -> dict[str, Any]:
        raise AssertionError("an HTTP cassette is answered below litellm, through `serving`")

    def record(self, request: LLMRequest, response: dict[str, Any]) -> None:
        """Nothing to do: the exchange was recorded at the HTTP level."""

    @contextmanager
    def serving(self, connection: LLMConnection) -> Iterator[LLMConnection]:
        """This simulation's HTTP requests go to the cassette for the block; yields the connection to call with
        (replaying without a key: a placeholder, never sent anywhere)."""
        if self.mode == "replay" and not connection.api_key:
            connection = connection.model_copy(update={"api_key": REPLAY_API_KEY})
        token = _bound.set(self)
        self.missed = None
        try:
            yield connection
        except Exception as exc:
            if self.missed is not None:
                reason = str(self.missed).splitlines()[0]
                raise CassetteMiss(f"cassette miss for {self.simulation_id}/call {self.calls}: {reason}") from exc
            raise
        finally:
            _bound.reset(token)
            self.calls += 1

    def save(self) -> None:
        if self.mode == "record":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.vcr_cassette._save(force=True)  # vcrpy's own writer (its format, its filters)

