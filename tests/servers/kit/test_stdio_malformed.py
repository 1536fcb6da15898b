"""`shiftbox-server banking` over stdio, fed raw bytes: every malformed line is answered, none hangs or
kills the server.

JSON-RPC 2.0: parse error -32700 (id null), invalid request -32600, invalid params -32602, method not
found -32601; the id is echoed when the line has a usable one (string or number), null otherwise.
Responses (a line with `result` or `error` and no `method`) are never answered. A lone surrogate in a
tool's arguments is the caller's mistake like any invalid argument: an `invalid_arguments` tool error.
After each case the server must still answer a ping, and at the end a real tool call.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

TIMEOUT_S = 10.0
"""How long an answer may take once the server is up (a hang is a failure, never a stuck test)."""
STARTUP_TIMEOUT_S = 60.0
"""How long the first answer may take: starting Python and opening the snapshot, slow on a loaded machine."""
PARSE, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602



class _Null:
    def __repr__(self) -> str:
        return "null"


NULL = _Null()  # expected id of an error whose id could not be determined ("id": null)


def error(code: int, id: Any = NULL) -> tuple:
    return ("error", code, id)


def tool_error(kind: str, id: Any) -> tuple:
    return ("tool_error", kind, id)


def batch(*items: tuple) -> tuple:
    return ("batch", items)


def req(id: Any, method: str = "tools/list", **extra: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, **extra}).encode()


CALL_WITH_SURROGATE = (b'{"jsonrpc":"2.0","id":"sur-1","method":"tools/call","params":{"name":"get_account",'
                       b'"arguments":{"account_id":"acc_\\ud83d"}}}')

# (name, the raw line, the expected answer or None for no answer at all)
CASES: list[tuple[str, bytes, tuple | None]] = [
    # carry an id: the client would wait for it forever
    ("params as array", req(101, params=[]), error(INVALID_PARAMS, 101)),
    ("params as string", req(102, params="x"), error(INVALID_PARAMS, 102)),
    ("params as number", req(103, "tools/call", params=5), error(INVALID_PARAMS, 103)),
    ("float id", b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', error(INVALID_REQUEST, 1.5)),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":105,"method":"tools/list"}', error(INVALID_REQUEST, 105)),
    ("jsonrpc missing", b'{"id":106,"method":"tools/list"}', error(INVALID_REQUEST, 106)),
    ("jsonrpc as number", b'{"jsonrpc":2.0,"id":107,"method":"tools/list"}', error(INVALID_REQUEST, 107)),
    ("method as number", b'{"jsonrpc":"2.0","id":108,"method":5}', error(INVALID_REQUEST, 108)),
    ("method missing", b'{"jsonrpc":"2.0","id":109}', error(INVALID_REQUEST, 109)),
    ("batch of one request", b'[' + req(110) + b']', batch(error(INVALID_REQUEST, 110))),
    ("batch of two requests", b'[' + req(111) + b',' + req("b-112", "ping") + b']',
     batch(error(INVALID_REQUEST, 111), error(INVALID_REQUEST, "b-112"))),
    ("batch of a request and a notification",
     b'[' + req(113) + b',{"jsonrpc":"2.0","method":"notifications/initialized"}]',
     batch(error(INVALID_REQUEST, 113))),
    ("batch of scalars", b'[1,2]', batch(error(INVALID_REQUEST), error(INVALID_REQUEST))),
    ("parse error: truncated", b'{"jsonrpc":"2.0","id":114,"method":"tools/li', error(PARSE)),
    ("parse error: not JSON", b'hello', error(PARSE)),
    ("parse error: single quotes", b"{'jsonrpc':'2.0','id':115,'method':'ping'}", error(PARSE)),
    ("parse error: trailing comma", b'{"jsonrpc":"2.0","id":116,"method":"ping",}', error(PARSE)),
    ("lone surrogate in an argument", CALL_WITH_SURROGATE, tool_error("invalid_arguments", "sur-1")),
    ("lone surrogate in the method", b'{"jsonrpc":"2.0","id":117,"method":"tools/\\udc00"}',
     error(METHOD_NOT_FOUND, 117)),
    ("id as object", b'{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}', error(INVALID_REQUEST)),
    ("id as array", b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', error(INVALID_REQUEST)),
    ("id true", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', error(INVALID_REQUEST)),
    ("id null", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', error(INVALID_REQUEST)),
    ("unknown method", req(118, "no/such/method"), error(METHOD_NOT_FOUND, 118)),
    # no id: answered with id null where JSON-RPC says so, never fatal
    ("empty batch", b'[]', error(INVALID_REQUEST)),
    ("number", b'42', error(INVALID_REQUEST)),
    ("string", b'"tools/list"', error(INVALID_REQUEST)),
    ("null", b'null', error(INVALID_REQUEST)),
    ("empty object", b'{}', error(INVALID_REQUEST)),
    ("notification with params as array", b'{"jsonrpc":"2.0","method":"notifications/initialized","params":[]}',
     error(INVALID_PARAMS)),
    ("notification jsonrpc 1.0", b'{"jsonrpc":"1.0","method":"notifications/initialized"}',
     error(INVALID_REQUEST)),
    ("notification with method as number", b'{"jsonrpc":"2.0","method":7}', error(INVALID_REQUEST)),
    ("notification with a lone surrogate", b'{"jsonrpc":"2.0","method":"notifications/\\ud800"}', None),
    ("batch of notifications", b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]', None),
    ("malformed response", b'{"jsonrpc":"2.0","id":119,"result":5}', None),
    ("response to nothing", b'{"jsonrpc":"2.0","id":120,"result":{}}', None),
    ("blank line", b'   ', None),
    ("invalid UTF-8 in a string", b'{"jsonrpc":"2.0","id":121,"method":"ping","params":{"_meta":{"x":"\xff"}}}',
     ("result", 121)),
]


def server_command() -> list[str]:
    script = Path(sys.executable).with_name("shiftbox-server")
    if script.exists():
        return [str(script), "banking"]
    found = shutil.which("shiftbox-server")
    return [found, "banking"] if found else [sys.executable, "-m", "shiftbox_servers", "banking"]


class RawStdio:
    """A server process and the lines it writes, read by a thread (a hang is a timeout, never a stuck test)."""

    def __init__(self):
        self.proc = subprocess.Popen(server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> None:
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def collect(self, done, timeout_s: float = TIMEOUT_S) -> tuple[list[Any], str | None]:
        """Messages received until `done(messages)` holds, and what went wrong if it did not within `timeout_s`."""
        got: list[Any] = []
        deadline = time.monotonic() + timeout_s
        while not done(got):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                state = "alive" if self.proc.poll() is None else f"exited with {self.proc.returncode}"
                return got, f"no complete answer within {timeout_s}s (server {state})"
            try:
                raw = self.lines.get(timeout=min(left, 0.1))
            except queue.Empty:
                continue
            raw.decode("utf-8")  # strict: never an unpaired surrogate on the wire
            got.append(json.loads(raw))
        return got, None

    def until(self, done, what: str, timeout_s: float = TIMEOUT_S) -> list[Any]:
        got, problem = self.collect(done, timeout_s)
        if problem:
            pytest.fail(f"{what}: {problem}; got {got}")
        return got

    def close(self) -> str:
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read().decode(errors="replace")


@pytest.fixture
def server():
    raw = RawStdio()
    raw.send(req(0, "initialize", params={"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "raw", "version": "0"}}))
    init = raw.until(lambda got: any(m.get("id") == 0 for m in got), "initialize", STARTUP_TIMEOUT_S)
    assert init[-1]["result"]["serverInfo"]["name"] == "shiftbox-banking"
    raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield raw
    raw.close()


def matches(message: Any, expected: tuple) -> bool:
    kind = expected[0]
    if kind == "batch":
        return (isinstance(message, list) and len(message) == len(expected[1])
                and all(matches(m, e) for m, e in zip(message, expected[1], strict=True)))
    if not isinstance(message, dict):
        return False
    if kind == "error":
        _, code, id = expected
        id_ok = message.get("id", "absent") is None if id is NULL else message.get("id") == id
        return id_ok and message.get("error", {}).get("code") == code and "result" not in message
    if kind == "tool_error":
        _, error_kind, id = expected
        result = message.get("result") or {}
        return (message.get("id") == id and result.get("isError") is True
                and "structuredContent" not in result
                and result.get("_meta", {}).get("shiftbox/error", {}).get("kind") == error_kind)
    if kind == "result":
        return message.get("id") == expected[1] and "result" in message
    raise AssertionError(kind)


@pytest.mark.timeout(300)
def test_every_malformed_line_is_answered_and_the_server_lives_on(server):
    failures = []
    for n, (name, raw, expected) in enumerate(CASES):
        server.send(raw)
        server.send(req(f"ping-{n}", "ping"))  # answered after the case: nothing may be outstanding
        is_ping = lambda m, ping=f"ping-{n}": isinstance(m, dict) and m.get("id") == ping  # noqa: E731

        def done(got: list, expected=expected, is_ping=is_ping) -> bool:
            return any(is_ping(m) for m in got) and (expected is None or any(matches(m, expected) for m in got))

        got, problem = server.collect(done)
        others = [m for m in got if not is_ping(m)]
        if problem:
            failures.append(f"{name}: expected {expected}, {problem}; got {others}")
            if server.proc.poll() is not None:
                break
        elif expected is None:
            if others:
                failures.append(f"{name}: expected no answer, got {others}")
        elif len(others) != 1:
            failures.append(f"{name}: expected one answer {expected}, got {others}")
    assert not failures, "\n".join(failures)
    # the server still serves real work
    server.send(req(9000, "tools/call", params={"name": "get_customer_by_id",
                                                "arguments": {"customer_id": "cust_0001"}}))
    answer = server.until(lambda got: any(m.get("id") == 9000 for m in got), "tools/call after the cases")[-1]
    assert answer["result"].get("isError") is not True, answer
    assert answer["result"]["structuredContent"]["customer_id"] == "cust_0001"
    assert server.proc.poll() is None


def test_a_lone_surrogate_echoed_back_is_escaped_on_the_wire(server):
    """A lone surrogate echoed back (method not found carries the method) is written as a JSON escape."""
    server.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/\\ud83d"}')
    raw = server.lines.get(timeout=TIMEOUT_S)
    raw.decode("utf-8")  # strict: no unpaired surrogate bytes on the wire
    message = json.loads(raw)
    assert message["id"] == 7 and message["error"]["code"] == METHOD_NOT_FOUND
