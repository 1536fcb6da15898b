"""The preflight: before a live run, one cheap request per distinct endpoint the run's roles call, so a missing,
wrong or unauthorised key (or an endpoint nobody serves) stops the run before any simulation starts.

An `Endpoint` is what a role calls (`Agent.endpoints()`, `UserSimulator.endpoints()`, the LLM judge's): an
`LLMEndpoint` here, an A2A agent's card in `shiftbox.agents`. For an LLM the cheapest request that proves the key:
- OpenAI-compatible routes (`openai/`, `hosted_vllm/` with a known base): `GET <base>/models`, which costs
  nothing; a 403 there (a key restricted from listing models) is confirmed with a 1-token completion;
- any other provider: a 1-token completion through litellm.
A missing key is found without a request. The calls go around the boundary (`call_litellm`, no cassette, no
gate), so a preflight is never recorded; a replay never runs one. Only what would fail every call stops the
run (credentials, nobody listening, an unknown model); a rate limit or a 5xx is left to the run's retries.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._text import clip
from ..errors import InfrastructureError, LLMUnavailable
from ._credentials import (
    OPENAI_BASE,
    OPTION_FLAG,
    auth_failure,
    endpoint_base,
    provider,
    provider_message,
)
from ._http_bare import bare_get, httpx_response
from ._http_connection import HTTPFailure, TimeoutFailure
from ._import import import_litellm
from ._litellm import call_litellm
from ._model import LLMConnection, LLMRequest, Role
from ._openai_http import builds_without_litellm, error_text
from ._retries import BRIEF_CHARS, cause_of

if TYPE_CHECKING:
    import httpx

PREFLIGHT_TIMEOUT_S = 10.0
"""Longest wait for one endpoint's answer before the run is refused as unreachable."""
LISTING_ROUTES = ("openai", "hosted_vllm")
"""Routes whose endpoints list models (`GET /models`) for free."""


class Endpoint(ABC):
    """A remote service a role calls (an LLM endpoint, an A2A agent), checked once before a live run."""

    shown: str
    """How messages name it (no credentials)."""

    @property
    @abstractmethod
    def key(self) -> Hashable:
        """Endpoints with the same key are checked once."""

    @abstractmethod
    async def check(self, timeout_s: float) -> None:
        """One cheap request, each of its waits bounded by `timeout_s`; raises an `InfrastructureError` naming the
        endpoint, the problem and the fix."""


@dataclass(frozen=True)
class LLMEndpoint(Endpoint):
    """A model as a role calls it: where, and which variable holds its key (None: the provider's)."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    role: Role = "agent"

    @property
    def key(self) -> Hashable:
        return ("llm", self.model, self.api_base, self.api_key_env)

    @property
    def shown(self) -> str:  # type: ignore[override]
        return f"model {self.model} at {endpoint_base(self.model, self.api_base)}"

    def _auth(self, detail: str) -> LLMUnavailable:
        return LLMUnavailable(auth_failure(self.model, self.api_base, self.api_key_env, self.role, detail), "auth")

    def _unreachable(self, detail: str) -> LLMUnavailable:
        return LLMUnavailable(f"cannot reach {self.shown}: {detail}; fix: start the model server there, or give its "
                              f"address with {OPTION_FLAG[self.role]} api_base=URL", "connection")

    async def check(self, timeout_s: float) -> None:
        route = provider(self.model)
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if self.api_key_env and not key:
            raise self._auth(f"no API key: {self.api_key_env} is not set")
        if route == "openai" and not (key or os.environ.get("OPENAI_API_KEY")):
            raise self._auth("no API key: OPENAI_API_KEY is not set")
        base = self.api_base or (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or OPENAI_BASE
                                 if route == "openai" else os.environ.get("HOSTED_VLLM_API_BASE"))
        if route in LISTING_ROUTES and base:
            listing_key = key or os.environ.get("OPENAI_API_KEY" if route == "openai" else "HOSTED_VLLM_API_KEY")
            status = await self._list_models(base, listing_key or "fake-api-key", timeout_s)
            if status != 403:
                return
        await self._one_token(LLMConnection(api_base=self.api_base, api_key=key, api_key_env=self.api_key_env,
                                            timeout_s=timeout_s))

    async def _list_models(self, base: str, api_key: str, timeout_s: float) -> int:
        """`GET <base>/models`, asked once: its status; a refused key (401) raises, and so does an endpoint nobody
        serves. Sent without httpx where `bare_get` can (a plain http endpoint, no proxy); its failures are named as
        httpx's client names them (the same exception names, `HTTPFailure`)."""
        url = f"{base.rstrip('/')}/models"
        try:
            reply = await bare_get(url, api_key, timeout_s)
        except TimeoutFailure:
            raise self._unreachable(f"no answer within {timeout_s:g} s") from None
        except HTTPFailure as failure:
            raise self._unreachable(provider_message(repr(failure))) from None
        if reply is not None:
            return self._listed(reply.status, lambda: httpx_response(reply))
        import httpx

        from ._http_client import shared_ssl_context

        try:
            async with httpx.AsyncClient(timeout=timeout_s, verify=shared_ssl_context()) as client:
                response = await client.get(url, headers={"Authorization": f"Bearer {api_key}"})
        except httpx.TimeoutException:
            raise self._unreachable(f"no answer within {timeout_s:g} s") from None
        except httpx.TransportError as exc:
            raise self._unreachable(provider_message(repr(exc))) from None
        return self._listed(response.status_code, lambda: response)

    def _listed(self, status: int, response: Callable[[], httpx.Response]) -> int:
        """The listing's status; a refused key (401) raises, with the error the response (made now) gives."""
        if status == 401:
            raise self._auth(provider_message(error_text(response()) or f"HTTP {status}"))
        return status

    async def _one_token(self, connection: LLMConnection) -> None:
        """A 1-token completion, around the boundary (never recorded, no gate); litellm, when the call needs it,
        is imported first, in a thread (seconds, not the endpoint's answer time)."""
        request = LLMRequest(role=self.role, model=self.model, messages=[{"role": "user", "content": "Say OK."}],
                             params={"max_tokens": 1, "drop_params": True})
        if not builds_without_litellm(request, connection):
            await asyncio.to_thread(import_litellm)
        try:
            await call_litellm(request, connection)
        except Exception as exc:
            cause = cause_of(exc)
            if cause == "auth":
                raise self._auth(provider_message(exc)) from None
            if cause in ("connection", "timeout"):
                raise self._unreachable(clip(provider_message(exc), BRIEF_CHARS)) from None
            if cause == "not_found":
                raise LLMUnavailable(f"{self.shown} does not serve this model: {clip(provider_message(exc), BRIEF_CHARS)}; "
                                     "fix: check the model's name (litellm:<provider>/<model>)", cause) from None
            # anything else (a rate limit, a 5xx, a parameter the model refuses) is for the run's retries to meet


def check_endpoints(endpoints: Iterable[Endpoint], timeout_s: float = PREFLIGHT_TIMEOUT_S) -> list[str]:
    """Check each distinct endpoint once, all at once (in a thread of their own, so it works with or without a
    running event loop); the problems found, in the endpoints' order (empty: all fine)."""
    distinct: dict[Hashable, Endpoint] = {}
    for endpoint in endpoints:
        distinct.setdefault(endpoint.key, endpoint)
    if not distinct:
        return []

    async def every() -> list[BaseException | None]:
        return await asyncio.gather(*(e.check(timeout_s) for e in distinct.values()), return_exceptions=True)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        results = pool.submit(asyncio.run, every()).result()
    problems = []
    for result in results:
        if isinstance(result, InfrastructureError):
            problems.append(str(result))
        elif isinstance(result, BaseException):
            raise result
    return problems
