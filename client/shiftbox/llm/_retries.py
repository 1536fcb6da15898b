"""Retries at the LLM boundary: which failures are transient, how long to wait, and what is raised.

Agents, user simulators and the judge call `complete_with_retries()` rather than `complete()`. It
retries transient failures (rate limit, timeout, connection error, 5xx) itself, with a deterministic
exponential backoff that honours the provider's `retry-after-ms` / `retry-after` header, and asks
nothing of the boundary, which never retries by itself, so the count is exact whatever the SDK
underneath would do. Only the final, successful exchange reaches a recording cassette: a replay
sees the same requests in the same order.

When a call still fails it raises, with a message that names the cause:
- `LLMUnavailable` — the provider could not be used: transient failures outlasted the retries, or the
  credentials/model/endpoint are wrong (401/403/404). Not the agent's (or the user's) behaviour: it
  is an `InfrastructureError`, so a harness that maps those blames infrastructure. A missing, wrong or
  unauthorised key (cause `auth`) is never retried and is named with the model, the endpoint, the
  provider's whole message and the fix (`_credentials.auth_failure`); other messages are shortened at a
  word boundary.
- `LLMRequestRejected` — the provider refused this request (400/422: context window exceeded,
  content policy, a bad parameter). Counted against the role that made it.
- `LLMError` — any other failure.
(`LLMBadReply`, a completion that came back unusable, is raised by the caller that finds it so.)

`ReplayDivergence` (a cassette miss) is never caught or wrapped here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._text import clip
from ..errors import LLMError, LLMRequestRejected, LLMUnavailable, ReplayDivergence
from ..redact import redact_text
from ._boundary import complete
from ._credentials import auth_failure, is_missing_key, provider_message
from ._model import LLMConnection, LLMRequest

MAX_RETRY_DELAY_S = 30.0
"""Longest wait before a retry, whatever the provider's retry-after header asks for."""
BRIEF_CHARS = 300
"""A failure's message is shortened to this many characters (at a word boundary); an auth failure's never."""
AUTH_ERRORS = frozenset({"AuthenticationError", "PermissionDeniedError"})
"""litellm's and the openai SDK's classes of a refused key (whatever status they carry)."""


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def cause_of(exc: BaseException) -> str:
    """rate_limit, timeout, connection, server_error, auth, not_found, bad_request or error."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = _status(exc)
    if status == 429 or "RateLimitError" in names:
        return "rate_limit"
    if status in (401, 403) or names & AUTH_ERRORS or is_missing_key(str(exc)):
        return "auth"  # before the 5xx: litellm raises a missing key as an InternalServerError
    if status == 408 or names & {"Timeout", "APITimeoutError"}:
        return "timeout"
    if "Connection error" in str(exc) or ("APIConnectionError" in names and (status is None or status >= 500)):
        return "connection"
    if status is not None and status >= 500:
        return "server_error"
    if status == 404:
        return "not_found"
    if status is not None and 400 <= status < 500:
        return "bad_request"
    return "error"


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: rate limit, timeout, connection failure, 5xx."""
    if isinstance(exc, ReplayDivergence):
        return False
    return cause_of(exc) in ("rate_limit", "timeout", "connection", "server_error")


def _header(exc: BaseException, name: str) -> str | None:
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None)):
        try:
            value = headers.get(name) if headers is not None else None
        except Exception:
            value = None
        if value:
            return str(value)
    return None


def retry_delay(exc: BaseException, attempt: int, backoff_s: float) -> float:
    """Seconds to wait before retry number `attempt` (0-based): the provider's hint, else exponential."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = _header(exc, name)
        if value is not None:
            try:
                return min(max(float(value) * scale, 0.0), MAX_RETRY_DELAY_S)
            except ValueError:
                pass
    return min(backoff_s * (2 ** attempt), MAX_RETRY_DELAY_S)


def _brief(exc: BaseException) -> str:
    return clip(redact_text(" ".join(str(exc).split())), BRIEF_CHARS)  # a provider's message may quote the api_base


async def complete_with_retries(request: LLMRequest, connection: LLMConnection, *, retries: int,
                                backoff_s: float = 0.5, what: str | None = None) -> dict[str, Any]:
    """`complete()` with up to `retries` retries of transient failures; raises an `LLMError`.

    `what` names the caller in error messages (default: the request's role and model).
    """
    who = what or f"{request.role} model {request.model}"
    attempt = 0
    while True:
        try:
            return await complete(request, connection)
        except ReplayDivergence:
            raise
        except Exception as exc:
            cause = cause_of(exc)
            if is_transient(exc) and attempt < retries:
                await asyncio.sleep(retry_delay(exc, attempt, backoff_s))
                attempt += 1
                continue
            tries = f" after {attempt + 1} attempts" if attempt else ""
            message = f"{who}: LLM call failed ({cause}){tries}: {_brief(exc)}"
            if cause == "auth":
                message = f"{who}: " + auth_failure(request.model, connection.api_base, connection.api_key_env,
                                                    request.role, provider_message(exc))
            if is_transient(exc) or cause in ("auth", "not_found"):
                raise LLMUnavailable(message, cause) from exc
            if cause == "bad_request":
                raise LLMRequestRejected(message, cause) from exc
            raise LLMError(message, cause) from exc
