"""The fast path for OpenAI-compatible endpoints: one shared httpx client instead of litellm's call stack.

Taken for litellm's `openai/` and `hosted_vllm/` routes with an `api_base` (a local vLLM or SGLang
server, the fake server), unless `fast_path=false`. The request body is the one litellm's own request
building for that route gives (`get_optional_params` and the route's `transform_request`, so a model
litellm remaps, e.g. `max_tokens` to `max_completion_tokens`, is remapped the same), and the response is
the JSON of litellm's own conversion (`convert_to_model_response_object`): the same JSON as the litellm
path. For the common cases both are made here without litellm (`_openai_body.own_body`,
`_openai_response.own_response`), so a run whose every role takes them never imports litellm (or the
openai SDK); any other case goes through litellm's own code, imported then. What the fast path skips is
the openai SDK (its request-parameter transform was the largest cost per call) and litellm's logging and
callbacks. Failures become `ProviderHTTPError` with the status and message litellm's error would carry
(timeouts 408, connection errors "Connection error."), so `cause_of` gives them the same kinds, retries
and messages as on the litellm path. A plain `http://` endpoint with no proxy is posted to without httpx's client
(`_http_bare`), so httpx is imported only once something needs it (an error reply, a cookie, a proxy, a cassette).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import os
import sys
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._jsonl import dump_json
from ._http_bare import (
    LENGTH_SLOT,
    Head,
    bare_head,
    httpx_errors,
    httpx_response,
    no_proxies,
    timeouts,
)
from ._http_cassette import routing_installed
from ._http_connection import Reply, request_head
from ._http_pool import MAX_CONNECTIONS, POOL_ENV, StackPool, check_pool_name
from ._import import import_litellm
from ._model import LLMConnection, LLMRequest, connection_for
from ._openai_body import cached_body, dumps, own_body, remember
from ._openai_response import own_response

if TYPE_CHECKING:
    import httpx

ROUTE_KEY_ENV = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}
"""Routes the fast path serves, with the environment variable litellm reads the key from."""

FAST_PARAMS = frozenset({"temperature", "seed", "max_tokens", "max_completion_tokens", "drop_params", "tool_choice",
                         "parallel_tool_calls", "top_p", "stop", "presence_penalty", "frequency_penalty",
                         "response_format", "reasoning_effort", "user", "logit_bias"})
"""Request parameters the fast path passes through litellm's request building; any other (extra_headers,
extra_body, …) sends the call down the litellm path."""

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StackPool | None] = weakref.WeakKeyDictionary()


LITELLM_ERRORS = {400: "BadRequestError: ", 401: "AuthenticationError: AuthenticationError: ",
                  403: "APIError: APIError: ", 404: "NotFoundError: NotFoundError: ", 408: "Timeout: Timeout Error: ",
                  422: "BadRequestError: ", 429: "RateLimitError: RateLimitError: ",
                  500: "InternalServerError: InternalServerError: ", 502: "BadGatewayError: BadGatewayError: ",
                  503: "ServiceUnavailableError: ServiceUnavailableError: ", 504: "Timeout: Timeout Error: "}
"""How litellm names an error status in its message (any other: APIError), so a failure reads the same
(and is recorded the same in a trajectory's termination) on both paths."""


class ProviderHTTPError(Exception):
    """An OpenAI-compatible endpoint failed: the status litellm's error would carry, its message, and the
    response (whose retry-after headers the retries honour)."""

    def __init__(self, status_code: int, message: str, response: httpx.Response | None = None, *,
                 name: str | None = None):
        super().__init__(f"litellm.{name or LITELLM_ERRORS.get(status_code, 'APIError: APIError: ')}{message}")
        self.status_code = 408 if status_code == 504 else status_code  # litellm: a gateway timeout is a Timeout
        self.response = response


def fast_route(request: LLMRequest, connection: LLMConnection) -> tuple[str, str, str] | None:
    """(provider, model at the endpoint, api key) when the fast path serves this call, else None."""
    provider, _, model = request.model.partition("/")
    if not (connection.fast_path and connection.api_base and model and provider in ROUTE_KEY_ENV):
        return None
    if not request.params.keys() <= FAST_PARAMS:
        return None
    api_key = connection.api_key or os.environ.get(ROUTE_KEY_ENV[provider])
    if not api_key:
        if provider == "openai":
            return None  # litellm's path reports the missing key as it always did
        api_key = "fake-api-key"  # what litellm's hosted_vllm route sends without a key
    return provider, model, api_key


def builds_without_litellm(request: LLMRequest, connection: LLMConnection) -> bool:
    """Whether the fast path builds this call's body without litellm (its response may still need it)."""
    route = fast_route(request, connection)
    return route is not None and own_body(request, route[0], route[1]) is not None


def _client() -> httpx.AsyncClient:
    """One client per event loop (a pool is bound to the loop that uses it), over `PoolTransport`: its cost per
    request does not grow with the connections open, one a simulation in flight; over the loop's `_bare_pool` when
    it has one. `SHIFTBOX_HTTP_POOL=httpx` (read when a loop's client or pool is made) takes httpx's own pool
    instead, as before it."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        from ._http_client import fast_path_client

        client = fast_path_client(os.environ.get(POOL_ENV, "stack"), _pools.get(loop))
        _clients[loop] = client
    return client


def _bare_pool() -> StackPool | None:
    """The loop's pool to post into without httpx's client (made with the loop's first request), or None when every
    request takes the client: once it is made (an answer needed httpx's response, a cookie), with a proxy in the
    environment, or with `SHIFTBOX_HTTP_POOL=httpx`."""
    loop = asyncio.get_running_loop()
    if loop in _clients:
        return None
    if loop not in _pools:
        pool = os.environ.get(POOL_ENV, "stack")
        check_pool_name(pool)
        _pools[loop] = StackPool(MAX_CONNECTIONS, MAX_CONNECTIONS) if pool == "stack" and no_proxies() else None
    return _pools[loop]


@functools.lru_cache(maxsize=256)
def _chat_config(provider: str, model: str) -> Any:
    """litellm's chat config for the route and model (made once: it keeps no state between calls)."""
    import_litellm()
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    return ProviderConfigManager.get_provider_chat_config(model=model, provider=LlmProviders(provider))


async def request_body(request: LLMRequest, provider: str, model: str) -> dict[str, Any]:
    """The JSON body litellm's route would send: its message clean-up, optional params and transform, with
    `extra_body` merged in as the openai SDK does."""
    import_litellm()
    from litellm.utils import get_optional_params, validate_and_fix_openai_messages

    messages = validate_and_fix_openai_messages(messages=copy.deepcopy(request.messages))  # a role's own: not changed
    params = dict(request.params)
    if request.tools:
        params["tools"] = copy.deepcopy(request.tools)
    optional = get_optional_params(model=model, custom_llm_provider=provider, messages=messages, **params)
    body = await _chat_config(provider, model).async_transform_request(
        model=model, messages=messages, optional_params=optional, litellm_params={}, headers={})
    if body.get("stream") is False:
        body.pop("stream")
    body.update(body.pop("extra_body", None) or {})
    return body


def error_text(response: httpx.Response) -> str:
    """An OpenAI-style error body's message, else the body as text."""
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (ValueError, AttributeError):
        message = None
    return str(message or response.text)


def _error_message(response: httpx.Response) -> str:
    return f"OpenAIException - {error_text(response)}"


async def encoded_body(request: LLMRequest, provider: str, model: str) -> bytes:
    """The bytes litellm's route would send: from a template when one fits (`_openai_body`), else built as
    litellm builds it (here when `own_body` knows how, else by litellm) and kept as a template. UTF-8, as httpx
    sends the openai SDK's body, so a lone surrogate fails as it does there."""
    try:
        content = cached_body(request, provider, model)
        if content is None:
            body = own_body(request, provider, model) or await request_body(request, provider, model)
            content = dumps(body).encode()
            remember(request, provider, model, body)
    except (UnicodeEncodeError, ValueError) as exc:
        raise ProviderHTTPError(500, f"OpenAIException - {exc}") from exc
    return content


@functools.lru_cache(maxsize=256)
def _completions_url(provider: str, model: str, base: str, api_key: str) -> str:
    """Where the route posts: the openai SDK appends the path; litellm's hosted_vllm route does too, unless
    the base already holds it."""
    if provider == "openai":
        return f"{base}/chat/completions"
    if base.startswith(("http://", "https://")) and "?" not in base and "#" not in base:
        return base if "chat/completions" in base else f"{base}/chat/completions"
    return _chat_config(provider, model).get_complete_url(api_base=base, api_key=api_key, model=model,
                                                          optional_params={}, litellm_params={})


_Parts = tuple["httpx.URL", "httpx.Headers", dict[str, Any], Head | None]
_prepared: weakref.WeakKeyDictionary[httpx.AsyncClient, dict[tuple[str, str, float], _Parts]] = weakref.WeakKeyDictionary()


def forget_api_keys() -> None:
    """Drop every value this process keeps that holds an API key (the request heads, the prepared headers, the
    completion URLs, the settings' connections, litellm's cached clients): what a process serving run after run (a kept Ray actor) does
    between them, so no run's key stays in its memory for the next."""
    bare_head.cache_clear()
    _completions_url.cache_clear()
    connection_for.cache_clear()
    _prepared.clear()
    clients = getattr(sys.modules.get("litellm"), "in_memory_llm_clients_cache", None)
    if clients is not None:
        clients.flush_cache()


def _completion_headers(api_key: str) -> dict[str, str]:
    """The headers a completion request adds to the client's own, on every path that posts one."""
    return {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}


def _prepared_parts(client: httpx.AsyncClient, url: str, api_key: str, timeout_s: float) -> _Parts:
    """The URL, headers and extensions `client.post` would give this call's request, merged once per client, URL,
    key and timeout (a few of each in a run) rather than on every call; with the head the pool is sent directly,
    when the client's own `PoolTransport` serves the URL (no proxy mounted for it)."""
    parts = _prepared.setdefault(client, {})
    key = (url, api_key, timeout_s)
    if key not in parts:
        import httpcore
        import httpx

        from ._http_client import PoolTransport

        if len(parts) >= 256:
            parts.clear()
        headers = httpx.Headers(client.headers)
        headers.update(_completion_headers(api_key))
        target = client.build_request("POST", url).url
        direct = None
        if isinstance(client._transport, PoolTransport) and client._transport_for_url(target) is client._transport:  # noqa: SLF001
            sample = httpx.Request("POST", target, headers=headers, content=b"-")  # as `_post` makes each request
            head, _ = request_head(b"POST", target.raw_path, [
                (name, LENGTH_SLOT if name.lower() == b"content-length" else value) for name, value in sample.headers.raw])
            before, after = head.split(LENGTH_SLOT)
            origin = httpcore.URL(scheme=target.raw_scheme, host=target.raw_host, port=target.port,
                                  target=target.raw_path).origin  # as httpx's transport addresses the pool
            direct = Head(origin, before, after)  # httpcore.Origin: the same three fields
        parts[key] = (target, headers, {"timeout": timeouts(timeout_s)}, direct)
    return parts[key]


def _unwrapped(transport: httpx.AsyncBaseTransport) -> bool:
    """Whether the transport's `handle_async_request` is httpx's own: an HTTP cassette (`_http_cassette`, vcrpy)
    wraps it to see every request, so then each request goes through it."""
    code = getattr(type(transport).handle_async_request, "__code__", None)
    return (code is not None and code.co_filename == _httpx_transport_file()
            and code.co_name == "handle_async_request")


@functools.cache
def _httpx_transport_file() -> str:
    """The file of httpx's own transports (looked up once; the check above runs on every request)."""
    from httpx._transports import default as httpx_transports

    return httpx_transports.__file__


class _Received:
    """A response read whole straight from the pool, made into httpx's `Response` (with the request `_post` would
    have sent, whose parts `parts` gives) only where one is needed: an error, a body to decode, a cookie, litellm's
    conversion."""

    __slots__ = ("_response", "content", "parts", "reply")

    def __init__(self, reply: Reply, parts: Callable[[], _Parts], content: bytes):
        self.reply, self.parts, self.content = reply, parts, content
        self._response: httpx.Response | None = None

    def needs_response(self) -> bool:
        """An error status, or a body or header httpx's response interprets (content encoding, cookies)."""
        return self.reply.status >= 400 or any(name.lower() in (b"content-encoding", b"set-cookie")
                                               for name, _ in self.reply.headers)

    def response(self) -> httpx.Response:
        if self._response is None:
            import httpx

            target, headers, extensions, _ = self.parts()
            request = httpx.Request("POST", target, headers=headers, content=self.content, extensions=extensions)
            self._response = httpx_response(self.reply, request)
        return self._response


async def _exchanged(pool: StackPool, head: Head, content: bytes, timeout: dict[str, float]) -> Reply:
    """The request (its head made once, and `content`) sent straight into the pool and its reply read whole, the
    pool's failures raised as httpx's transport raises them."""
    with httpx_errors():
        return await pool.exchange(head.origin, b"POST", head.request(content), timeout)


async def _post(url: str, content: bytes, timeout_s: float, api_key: str) -> httpx.Response | _Received:
    """`client.post` of the body, read whole, minus what the fast path never uses of httpx's client layer (its
    auth flow, redirect loop, event hooks, per-call URL and header merging), with the same bytes on the wire. With
    no proxy and no HTTP cassette in play, the request goes straight into the pool (`StackPool.exchange`: no httpx
    request or response objects, the pool's failures raised as httpx's transport raises them): for a plain http URL
    before the loop has an httpx client, with the head `_http_bare` writes as httpx's client would (httpx not even
    imported); else with the one the client prepared. Otherwise to the client's transport for the URL (a proxy from
    the environment, a cassette's wrapper, httpx's own pool). Cookies stay httpx's: once a server has set one, calls
    go through `client.post`."""
    pool = _bare_pool()
    head = bare_head(b"POST", url, api_key, True) if pool is not None and not routing_installed() else None
    if head is not None:
        reply = await _exchanged(pool, head, content, timeouts(timeout_s))
        received = _Received(reply, lambda: _prepared_parts(_client(), url, api_key, timeout_s), content)
        return received if not received.needs_response() else _kept_cookies(_client(), received.response())
    client = _client()
    if client.cookies:
        return await client.post(url, content=content, timeout=timeout_s, headers=_completion_headers(api_key))
    parts = _prepared_parts(client, url, api_key, timeout_s)
    target, headers, extensions, direct = parts
    transport = client._transport  # noqa: SLF001
    if direct is not None and _unwrapped(transport):
        reply = await _exchanged(transport._pool, direct, content, extensions["timeout"])  # type: ignore[attr-defined]  # noqa: SLF001
        received = _Received(reply, lambda: parts, content)
        if not received.needs_response():
            return received
        response = received.response()
    else:
        import httpx

        request = httpx.Request("POST", target, headers=headers, content=content, extensions=extensions)
        response = await client._transport_for_url(target).handle_async_request(request)  # noqa: SLF001
        response.request = request
        try:
            await response.aread()  # closes the response, giving its connection back
        except BaseException:
            await response.aclose()
            raise
    return _kept_cookies(client, response)


def _kept_cookies(client: httpx.AsyncClient, response: httpx.Response) -> httpx.Response:
    """The response, its cookies kept by the client (as `client.post` keeps them)."""
    if "set-cookie" in response.headers:
        client.cookies.extract_cookies(response)
    return response


async def post_completion(url: str, content: bytes, connection: LLMConnection,
                          api_key: str) -> tuple[Callable[[], httpx.Response], dict[str, Any]]:
    """POST the body: the response (made when called) and its JSON object, else ProviderHTTPError with the
    status."""
    start = time.monotonic()
    try:
        got = await _post(url, content, connection.timeout_s, api_key)
    except Exception as exc:
        failure = _transport_failure(exc)
        if failure == "timeout":  # worded as litellm words the openai SDK's timeout
            taken = round(time.monotonic() - start, 2)
            raise ProviderHTTPError(408, "APITimeoutError - Request timed out. Error_str: Request timed out. - "
                                         f"timeout value={connection.timeout_s}, time taken={taken} seconds",
                                    name="Timeout: ") from exc
        if failure == "connection":
            raise ProviderHTTPError(500, "OpenAIException - Connection error.") from exc
        raise
    if isinstance(got, _Received):  # a success read straight from the pool: its JSON as `response.json()` reads it
        try:
            data = json.loads(got.reply.body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return got.response, data
        response = got.response()
    else:
        response = got
    if response.status_code >= 400:
        raise ProviderHTTPError(response.status_code, _error_message(response), response)
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ProviderHTTPError(500, f"OpenAIException - Empty or invalid response from LLM endpoint. Received: "
                                     f"{response.text!r}. Check the reverse proxy or model server configuration.",
                                response)
    return lambda: response, data


async def call_openai_http(request: LLMRequest, connection: LLMConnection, route: tuple[str, str, str],
                           ) -> dict[str, Any]:
    """One completion on the fast path, as the JSON of the litellm `ModelResponse` its own route would return
    (`own_response`, else litellm's conversion)."""
    provider, model, api_key = route
    content = await encoded_body(request, provider, model)
    url = _completions_url(provider, model, (connection.api_base or "").rstrip("/"), api_key)
    response, data = await post_completion(url, content, connection, api_key)
    return own_response(data) or converted_by_litellm(provider, model, response(), data)


def _transport_failure(exc: Exception) -> str | None:
    """"timeout" for httpx's timeouts, "connection" for its other transport errors, else None (httpx not imported:
    not one of its errors)."""
    httpx = sys.modules.get("httpx")
    if httpx is None:
        return None
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    return "connection" if isinstance(exc, httpx.TransportError) else None


def converted_by_litellm(provider: str, model: str, response: httpx.Response, data: dict[str, Any]) -> dict[str, Any]:
    """litellm's conversion of a response, as JSON: the `openai/` route parses through the openai SDK's response
    model first (dumped as litellm dumps it: only the fields the server sent), `hosted_vllm/` does not."""
    import_litellm()
    from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
        convert_to_model_response_object,
    )
    from litellm.llms.openai.common_utils import model_dump_provider_response
    from litellm.types.utils import ModelResponse
    from openai.types.chat import ChatCompletion

    if provider == "openai":
        config = _chat_config(provider, model)
        data = config.transform_parsed_response_dict(model_dump_provider_response(ChatCompletion.construct(**data)))
    headers = dict(response.headers)
    converted = convert_to_model_response_object(response_object=data, model_response_object=ModelResponse(),
                                                 hidden_params={"headers": headers}, _response_headers=headers)
    return json.loads(dump_json(converted))  # plain JSON values (a lone surrogate the model sent survives)
