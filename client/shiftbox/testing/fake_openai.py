"""A local fake OpenAI-compatible chat-completions server, for tests and for recording fixtures.

No machine shiftbox is developed on reaches an LLM, so every live LLM code path (litellm agents,
user simulators, judges) is exercised against this server instead:

    with fake_openai([Reply.text("hello"), Reply.tool_call("get_user", {"user_id": "u1"})]) as server:
        litellm.completion(model="openai/fake-model", api_base=server.base_url, api_key="sk-test", ...)
        assert server.requests[0]["messages"][-1]["content"] == "hi"

It listens on 127.0.0.1 only (an ephemeral port unless given one) and serves from a daemon thread: one event loop
(uvloop where installed) with llhttp's parser (`httptools`), or, with `transport="threads"`, the stdlib's HTTP server
with a thread per connection. Both send the same bytes to a GET or a POST (`FakeOpenAI.answer` makes every response;
the Date header's value aside); another method gets the answer's JSON 501 from the event loop, the stdlib's HTML 501
from the threads. The event loop is the default: a bench's fake model should cost the machine as little CPU as it can
(a third less CPU per completion than the threads). Endpoints:
`POST /v1/chat/completions` (non-streaming, and `stream: true` as server-sent events including
tool-call deltas and, when `stream_options.include_usage` is set, a final usage chunk) and
`GET /v1/models`. The `/v1` prefix is optional.

With `api_key` set, a request without that key is refused with a 401 as OpenAI words it (a wrong key named
masked, a missing one); with `permission_denied` set, every request is refused with a 403 carrying that message
(a key without access to the model). Refused requests are counted in `rejected`, not in `requests`.

The script decides every reply: a sequence of replies consumed in order, or a callable
`(request_body) -> Reply`. A plain `str` stands for `Reply.text(str)`. Everything in a response is
deterministic: ids come from a counter (`chatcmpl-fake-000001`, tool calls `call_1_0` unless the
reply names them), `created` is fixed, and usage tokens are counted from characters (4 per token),
so recordings made against this server are byte-stable.

`shiftbox fake-llm` (or `python -m shiftbox.testing.fake_llm`) serves it on its own, playing the agent and the
user simulator of a task file (`shiftbox.testing.fake_llm`), until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shiftbox_servers.kit import loads_json

DEFAULT_MODEL = "fake-model"
DEFAULT_CREATED = 1_700_000_000
HOST = "127.0.0.1"
TRANSPORTS = ("loop", "threads")
"""How a FakeOpenAI serves: one event loop with llhttp's parser, or the stdlib's server with a thread per connection."""
DEFAULT_TRANSPORT = "loop"

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


WRONG_KEY_MESSAGE = ("Incorrect API key provided: {key}. You can find your API key at "
                     "https://platform.openai.com/account/api-keys.")
NO_KEY_MESSAGE = ("You didn't provide an API key. You need to provide your API key in an Authorization header using "
                  "Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) "
                  "if you're accessing the API from your browser and are prompted for a username. You can obtain an "
                  "API key from https://platform.openai.com/account/api-keys.")
"""OpenAI's 401 messages for a wrong key and for none."""


def masked(key: str) -> str:
    """A key as OpenAI quotes it in an error: its first and last 4 characters, stars between."""
    return key[:4] + "*" * max(len(key) - 8, 0) + key[-4:] if len(key) > 8 else "*" * len(key)


def count_tokens(text: str) -> int:
    """Deterministic stand-in for a tokenizer: one token per 4 characters, rounded up."""
    return (len(text) + 3) // 4


class ToolCallReply(BaseModel):
    """A tool call the fake model makes. `arguments` as a str is sent verbatim (e.g. malformed JSON)."""

    model_config = ConfigDict(frozen=True)

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = Field(None, description="default: call_<completion n>_<position>")

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, sort_keys=True, separators=(",", ":"))


class Reply(BaseModel):
    """One answer of the fake server.

    A completion (`content` and/or `tool_calls`), or, when `body` is set, that body verbatim with
    `status` (errors, malformed responses). `delay_s` waits before answering (timeouts, ordering).
    """

    model_config = ConfigDict(frozen=True)

    content: str | None = None
    tool_calls: tuple[ToolCallReply, ...] = ()
    finish_reason: str | None = Field(None, description="default: tool_calls if any, else stop")
    status: int = 200
    body: Any = Field(None, description="sent as is (JSON unless a str) instead of a completion")
    headers: dict[str, str] = Field(default_factory=dict)
    delay_s: float = 0.0
    prompt_tokens: int | None = Field(None, description="default: counted from the request")
    completion_tokens: int | None = Field(None, description="default: counted from the reply")
    chunk_size: int = Field(16, ge=1, description="characters per streamed content/arguments delta")

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any] | str | None = None, *,
                  id: str | None = None, content: str | None = None, **kw: Any) -> Reply:
        call = ToolCallReply(name=name, arguments={} if arguments is None else arguments, id=id)
        return cls(content=content, tool_calls=(call,), **kw)

    @classmethod
    def tools(cls, *calls: ToolCallReply | tuple[str, dict[str, Any]], content: str | None = None,
              **kw: Any) -> Reply:
        """Several (parallel) tool calls in one message: `Reply.tools(("a", {...}), ("b", {...}))`."""
        items = tuple(c if isinstance(c, ToolCallReply) else ToolCallReply(name=c[0], arguments=c[1])
                      for c in calls)
        return cls(content=content, tool_calls=items, **kw)

    @classmethod
    def error(cls, status: int, message: str = "fake error", *, type: str | None = None,
              code: str | None = None, headers: dict[str, str] | None = None, **kw: Any) -> Reply:
        """An OpenAI-style error body: {"error": {"message", "type", "param", "code"}}."""
        body = {"error": {"message": message,
                          "type": type or ERROR_TYPES.get(status, "server_error"),
                          "param": None, "code": code}}
        return cls(status=status, body=body, headers=headers or {}, **kw)

    @classmethod
    def rate_limit(cls, message: str = "Rate limit reached for fake-model", **kw: Any) -> Reply:
        return cls.error(429, message, code="rate_limit_exceeded", **kw)

    def delayed(self, seconds: float) -> Reply:
        return self.model_copy(update={"delay_s": seconds})


Script = Sequence[Reply | str] | Callable[[dict[str, Any]], Reply | str]


@dataclass(frozen=True)
class Answer:
    """One response as both transports send it: the status, the headers after their Server and Date, the whole body
    (a stream's chunked events included), and how long to wait before sending it."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    delay_s: float = 0.0

    @property
    def closes(self) -> bool:
        """A `Connection: close` header closes the connection after the answer (as the stdlib's server does)."""
        return any(k.lower() == "connection" and v.lower() == "close" for k, v in self.headers)


def _json_answer(status: int, payload: Any, headers: dict[str, str] | None = None, delay_s: float = 0.0) -> Answer:
    """A JSON body (a str payload is sent as text/plain, verbatim)."""
    raw = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    content_type = "text/plain" if isinstance(payload, str) else "application/json"
    return Answer(status, (("Content-Type", content_type), ("Content-Length", str(len(raw))),
                           *(headers or {}).items()), raw, delay_s)


def _loads_body(raw: bytes) -> Any:
    """A request body as `loads_json` reads it, its depth scan (a third of the fake's CPU for an agent's request)
    left to the parser's own recursion limit: a body that does not parse is read again by `loads_json` for its
    message (ValueError)."""
    text = raw.decode("utf-8", errors="surrogateescape")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return loads_json(text, "the request body", finite=False)


def _error_answer(status: int, message: str) -> Answer:
    return _json_answer(status, Reply.error(status, message).body)


class FakeOpenAI:
    """The server. Prefer the `fake_openai(script)` context manager; `start()`/`stop()` also work."""

    def __init__(self, script: Script, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 created: int = DEFAULT_CREATED, permission_denied: str | None = None, port: int = 0,
                 transport: str | None = None):
        transport = transport or DEFAULT_TRANSPORT
        if transport not in TRANSPORTS:
            raise ValueError(f"unknown transport {transport!r}: use one of {', '.join(TRANSPORTS)}")
        self.transport = transport
        self.model = model
        self._port = port
        self.api_key = api_key
        self.permission_denied = permission_denied
        self.created = created
        self._script: Callable[[dict[str, Any]], Reply | str] | None = None
        self._queue: list[Reply | str] = []
        if callable(script):
            self._script = script
        else:
            self._queue = list(script)
        self._lock = threading.Lock()
        self._counter = 0
        self.requests: list[dict[str, Any]] = []
        """JSON bodies of the chat-completion requests received, in arrival order."""
        self.headers: list[dict[str, str]] = []
        """Their HTTP headers (lower-cased names), parallel to `requests`."""
        self.replies: list[Reply] = []
        """The reply chosen for each request, parallel to `requests`."""
        self.errors: list[str] = []
        """Problems of the fake itself (script exhausted or raised, bad request JSON)."""
        self.rejected: list[tuple[str, str]] = []
        """(method, path) of the requests refused for their key (401) or permission (403), in arrival order."""
        self._server: _LoopServer | _ThreadsServer | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the server listens on."""
        if self._server is None:
            raise RuntimeError("fake OpenAI server is not running")
        return self._server.address

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def remaining(self) -> int:
        """Canned replies not consumed yet (0 for a callable script)."""
        return len(self._queue)

    def litellm_kwargs(self, model: str | None = None) -> dict[str, str]:
        """model / api_base / api_key for `litellm.completion` against this server."""
        return {"model": f"openai/{model or self.model}", "api_base": self.base_url,
                "api_key": self.api_key or "sk-test"}

    def start(self) -> FakeOpenAI:
        if self._server is None:
            self._server = (_LoopServer if self.transport == "loop" else _ThreadsServer)(self, self._port)
        return self

    def stop(self) -> None:
        """Stop listening, close the open connections and end the serving threads."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- replies ---------------------------------------------------------------------------------

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Reply]:
        """Record the request and pick its reply (under the lock: numbering follows arrival)."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self._counter += 1
            n = self._counter
            try:
                if self._script is not None:
                    reply = self._script(body)
                elif self._queue:
                    reply = self._queue.pop(0)
                else:
                    raise LookupError(f"script exhausted: request {n} has no canned reply")
                if isinstance(reply, str):
                    reply = Reply.text(reply)
                if not isinstance(reply, Reply):
                    raise TypeError(f"script returned {type(reply).__name__}, expected Reply or str")
            except Exception as exc:
                detail = "".join(traceback.format_exception_only(exc)).strip()
                self.errors.append(f"request {n}: {detail}")
                reply = Reply.error(500, f"fake_openai: {detail}", type="fake_openai_error")
            self.replies.append(reply)
            return n, reply

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        prompt = reply.prompt_tokens
        if prompt is None:  # the length of the sorted compact JSON, which sorting does not change: not sorted here
            prompt_source = {"messages": body.get("messages", []), "tools": body.get("tools", [])}
            prompt = count_tokens(json.dumps(prompt_source, separators=(",", ":")))
        completion = reply.completion_tokens
        if completion is None:
            text = (reply.content or "") + "".join(c.name + c.arguments_json() for c in reply.tool_calls)
            completion = count_tokens(text)
        return {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}

    def _tool_calls(self, n: int, reply: Reply) -> list[dict[str, Any]]:
        return [{"id": call.id or f"call_{n}_{i}", "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments_json()}}
                for i, call in enumerate(reply.tool_calls)]

    @staticmethod
    def _finish_reason(reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def completion(self, n: int, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = self._tool_calls(n, reply)
        return {
            "id": f"chatcmpl-fake-{n:06d}",
            "object": "chat.completion",
            "created": self.created,
            "model": body.get("model") or self.model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": self._finish_reason(reply)}],
            "usage": self._usage(body, reply),
        }

    def chunks(self, n: int, body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
        """The streamed form of the same completion, as OpenAI sends it."""
        base = {"id": f"chatcmpl-fake-{n:06d}", "object": "chat.completion.chunk",
                "created": self.created, "model": body.get("model") or self.model,
                "system_fingerprint": "fp_fake"}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish}]}

        size = reply.chunk_size
        yield chunk({"role": "assistant", "content": ""})
        content = reply.content or ""
        for start in range(0, len(content), size):
            yield chunk({"content": content[start:start + size]})
        for i, call in enumerate(self._tool_calls(n, reply)):
            yield chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"],
                                                      "arguments": ""}}]})
            arguments = call["function"]["arguments"]
            for start in range(0, len(arguments), size):
                yield chunk({"tool_calls": [{"index": i, "function": {
                    "arguments": arguments[start:start + size]}}]})
        yield chunk({}, self._finish_reason(reply))
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": self._usage(body, reply)}

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        """The response to one request (`headers` with lower-cased names, `raw` its body), whichever transport got it."""
        path = target.split("?", 1)[0]
        route = path.rstrip("/").removeprefix("/v1")
        if method == "POST" and route != "/chat/completions":
            return _error_answer(404, f"no route POST {target}")
        if refused := self._refusal(method, path, headers):
            return refused
        if method == "GET":
            if route == "/models":
                return _json_answer(200, self.models())
            if route == f"/models/{self.model}":
                return _json_answer(200, self.models()["data"][0])
            return _error_answer(404, f"no route GET {target}")
        if method != "POST":
            return _error_answer(501, f"unsupported method {method}")
        try:
            body = _loads_body(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError as exc:
            self.errors.append(f"bad request body: {exc}")
            return _error_answer(400, f"fake_openai: bad request body: {exc}")
        n, reply = self._next(body, headers)
        if reply.body is not None or reply.status != 200:
            return _json_answer(reply.status, reply.body if reply.body is not None else {}, reply.headers, reply.delay_s)
        if not body.get("stream"):
            return _json_answer(200, self.completion(n, body, reply), reply.headers, reply.delay_s)
        events = [*(json.dumps(item) for item in self.chunks(n, body, reply)), "[DONE]"]
        chunks = [f"{len(data):x}\r\n".encode() + data + b"\r\n" for data in
                  (f"data: {event}\n\n".encode() for event in events)]
        return Answer(200, (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                            ("Transfer-Encoding", "chunked"), *reply.headers.items()),
                      b"".join(chunks) + b"0\r\n\r\n", reply.delay_s)

    def _refusal(self, method: str, path: str, headers: dict[str, str]) -> Answer | None:
        """The key and the permission, refused as OpenAI refuses them (its error bodies, the key masked)."""
        key, denied = self.api_key, self.permission_denied
        given = (headers.get("authorization") or "").removeprefix("Bearer ").strip()
        if key is not None and given != key:
            reply = Reply.error(401, NO_KEY_MESSAGE, type="invalid_request_error") if not given else \
                Reply.error(401, WRONG_KEY_MESSAGE.format(key=masked(given)), type="invalid_request_error",
                            code="invalid_api_key")
        elif denied is not None:
            reply = Reply.error(403, denied, type="invalid_request_error", code="model_not_found")
        else:
            return None
        with self._lock:
            self.rejected.append((method, path))
        return _json_answer(reply.status, reply.body)

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model, "object": "model",
                                            "created": self.created, "owned_by": "shiftbox"}]}


@contextmanager
def fake_openai(script: Script, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                created: int = DEFAULT_CREATED, permission_denied: str | None = None,
                transport: str | None = None) -> Iterator[FakeOpenAI]:
    """Run a FakeOpenAI on 127.0.0.1 for the duration of the block.

    `api_key`, when given, is required as `Authorization: Bearer <key>` (else 401); `permission_denied`, when
    given, is the message of the 403 every request gets; `transport`: one of TRANSPORTS (default DEFAULT_TRANSPORT).
    """
    server = FakeOpenAI(script, model=model, api_key=api_key, created=created, permission_denied=permission_denied,
                        transport=transport)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, a kept-alive connection waits for the
    # client's delayed ACK (~40 ms) before each body, which would swamp every LLM timing we take.
    disable_nagle_algorithm = True
    server_version = "shiftbox-fake-openai/1"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        self._answer(b"")

    def do_POST(self) -> None:
        self._answer(self._read_body())

    def _answer(self, raw: bytes) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        answer = fake.answer(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
        if answer.delay_s:
            time.sleep(answer.delay_s)
        self.send_response(answer.status)
        for key, value in answer.headers:
            self.send_header(key, value)
        self.end_headers()
        try:
            self.wfile.write(answer.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. its timeout)
            self.close_connection = True


SERVER_HEADER = f"{_Handler.server_version} {_Handler.sys_version}"
"""The Server header's value, as the stdlib's server writes it (its version string: a space, then no Python's)."""


class _ThreadsServer(ThreadingHTTPServer):
    """A thread per connection, and a listen backlog for many clients connecting at once: with the stdlib's
    5, connections past it were reset while the accept loop caught up (litellm's "Connection error").
    Its connections are kept so `close` can end them (a kept-alive one would hold its thread)."""

    request_queue_size = 1024
    daemon_threads = True

    def __init__(self, fake: FakeOpenAI, port: int) -> None:
        super().__init__((HOST, port), _Handler)
        self.fake = fake
        self.address = (HOST, self.server_address[1])
        self._open: dict[socket.socket, threading.Thread] = {}
        self._open_lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-openai-{self.address[1]}", daemon=True)
        self._thread.start()

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open[request] = threading.current_thread()
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._open_lock:
                self._open.pop(request, None)

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)
        with self._open_lock:
            open_ = list(self._open.items())
        for sock, _thread in open_:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for _sock, thread in open_:
            thread.join(timeout=5)


class _LoopServer:
    """One event loop (uvloop where installed) in a daemon thread, each connection an asyncio protocol whose
    requests llhttp (`httptools`) frames; the responses are `FakeOpenAI.answer`'s, with the stdlib server's head."""

    def __init__(self, fake: FakeOpenAI, port: int) -> None:
        try:
            import uvloop

            self.loop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover - uvloop is not built for Windows
            self.loop = asyncio.new_event_loop()
        self.fake = fake
        self.connections: set[_Connection] = set()
        self._date: tuple[int, str] = (0, "")
        self._failed: BaseException | None = None
        ready = threading.Event()
        # the loop is started, served and closed in its thread: the caller may be running a loop of its own
        self._thread = threading.Thread(target=self._serve, args=(port, ready), name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait()
        if self._failed is not None:
            self._thread.join()
            raise self._failed
        self.address = (HOST, self.server.sockets[0].getsockname()[1])
        self._thread.name = f"fake-openai-{self.address[1]}"

    def _serve(self, port: int, ready: threading.Event) -> None:
        try:
            self.server = self.loop.run_until_complete(
                self.loop.create_server(lambda: _Connection(self), HOST, port, backlog=1024))
        except BaseException as exc:  # e.g. the port is taken: raised by __init__
            self._failed = exc
            self.loop.close()
            ready.set()
            return
        ready.set()
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(asyncio.sleep(0))  # the aborted connections' connection_lost
            self.loop.close()

    def head(self, answer: Answer) -> bytes:
        """The status line and headers as the stdlib's server writes them (its reason phrases, Server, Date)."""
        now = int(time.time())
        if self._date[0] != now:
            self._date = (now, email.utils.formatdate(now, usegmt=True))
        phrase = _Handler.responses[answer.status][0] if answer.status in _Handler.responses else ""
        lines = [f"HTTP/1.1 {answer.status} {phrase}\r\nServer: {SERVER_HEADER}\r\nDate: {self._date[1]}\r\n",
                 *(f"{key}: {value}\r\n" for key, value in answer.headers), "\r\n"]
        return "".join(lines).encode("latin-1", "strict")

    def close(self) -> None:
        def shut() -> None:
            self.server.close()
            for connection in list(self.connections):
                connection.transport.abort()
            self.loop.stop()

        self.loop.call_soon_threadsafe(shut)
        self._thread.join(timeout=5)


class _Connection(asyncio.Protocol):
    """One client connection of `_LoopServer`: kept alive as HTTP/1.1 says, answers in order (reading pauses while
    a delayed answer waits)."""

    def __init__(self, server: _LoopServer) -> None:
        import httptools

        self.server = server
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.url, self.headers, self.body = b"", {}, []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        import httptools

        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.send(_error_answer(400, "fake_openai: malformed HTTP request"), keep=False)

    def on_message_begin(self) -> None:
        self.url, self.headers, self.body = b"", {}, []

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        if self.headers.get("expect", "").lower() == "100-continue":
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        answer = self.server.fake.answer(self.parser.get_method().decode("latin-1"), self.url.decode("latin-1"),
                                         self.headers, b"".join(self.body))
        keep = self.parser.should_keep_alive() and not answer.closes
        if answer.delay_s:
            self.transport.pause_reading()
            self.server.loop.call_later(answer.delay_s, self.send, answer, keep, True)
        else:
            self.send(answer, keep)

    def send(self, answer: Answer, keep: bool, resume: bool = False) -> None:
        if self.transport.is_closing():  # the client gave up (e.g. its timeout)
            return
        self.transport.write(self.server.head(answer) + answer.body)
        if not keep:
            self.transport.close()
        elif resume:
            self.transport.resume_reading()
