"""The stdio transport of `shiftbox-server`: the SDK's framing (one JSON-RPC message per line, UTF-8), with
every line answered.

The SDK's `stdio_server` hands a line it cannot validate to the session as an exception, which is logged
and dropped: a request with params as an array, a float id, `"jsonrpc": "1.0"`, a batch, a parse error or
a lone surrogate in an argument got no reply, and its client waited forever. Here each line is read
first: a valid message goes to the server as before; anything else is answered at once, as JSON-RPC 2.0
says (parse error -32700 with id null; invalid request -32600 and invalid params -32602 with the line's
id when it has a usable one, a string or a number, null otherwise; a batch gets an array with one error
per member that has an id). A line that looks like a response (`result` or `error`, no `method`) is
never answered. A message that is valid but holds a lone surrogate (pydantic's JSON parser refuses
those, Python's accepts them) is passed on, so a tool call gets the same `invalid_arguments` result as
over any other transport; replies are written with such characters escaped, never as invalid UTF-8.

As in the SDK, fd 0 and 1 point at /dev/null and stderr while serving, so a stray read or print in a
tool cannot touch the wire.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from ._jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    invalid_id_error,
    is_response,
    usable_id,
)
from ._jsonrpc import error as _error

logger = logging.getLogger("shiftbox.server.stdio")

Outgoing = SessionMessage | bytes
"""What the writer writes: a message from the server, or an error reply already serialized."""


async def serve_stdio(server: MCPServer | Server[Any]) -> None:
    """Serve `server` (a kit domain server's `MCPServer`, or a low-level `Server` such as `shiftbox serve`'s
    gateway) over this process's stdin and stdout until stdin ends."""
    lowlevel = server._lowlevel_server if isinstance(server, MCPServer) else server
    with _claimed_stdio() as (wire_in, wire_out):
        to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_wire, outgoing = anyio.create_memory_object_stream[Outgoing](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, anyio.wrap_file(wire_in), to_server, to_wire.clone())
            tg.start_soon(_write, anyio.wrap_file(wire_out), outgoing)
            async with to_wire:
                await lowlevel.run(from_wire, to_wire, lowlevel.create_initialization_options())


# -- reading ---------------------------------------------------------------------------------------


async def _read(wire: anyio.AsyncFile[bytes], to_server: MemoryObjectSendStream[SessionMessage | Exception],
                to_wire: MemoryObjectSendStream[Outgoing]) -> None:
    async with to_server, to_wire:
        async for raw in wire:
            line = raw.decode("utf-8", errors="replace")  # as the SDK reads it
            if not line.strip():
                continue
            message, reply = read_line(line)
            try:
                if message is not None:
                    await to_server.send(SessionMessage(message))
                if reply is not None:
                    await to_wire.send(reply)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the server has stopped


def read_line(line: str) -> tuple[types.JSONRPCMessage | None, bytes | None]:
    """One line from the client: the message to pass on, or the error reply to write (or neither)."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        message = None  # not JSON, not a message, or JSON that pydantic's parser refuses (lone surrogates)
    if message is not None and not isinstance(message, types.JSONRPCNotification):
        return message, None
    # A notification is read again: the models ignore unknown keys, so a request whose id is no string or
    # integer (1.5, true, null) validates as a notification, and would be served without an answer.
    try:
        value = json.loads(line.rstrip("\r\n"))
    except (ValueError, RecursionError) as exc:
        if message is not None:
            return message, None
        return None, _dump(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
    if isinstance(value, list):
        return None, _batch_reply(value)
    if isinstance(value, dict):
        if message is None:
            with contextlib.suppress(ValidationError):
                message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
        if message is not None and not (isinstance(message, types.JSONRPCNotification) and "id" in value):
            return message, None
    reply = _invalid(value)
    if reply is None:
        logger.warning("dropped a malformed response from the client: %.200s", line.strip())
        return None, None
    return None, _dump(reply)


def _batch_reply(items: list[Any]) -> bytes | None:
    """JSON-RPC batches are not part of MCP (since 2025-06-18): each member with an id (or that is no
    object at all) gets an invalid-request error, in one array; an empty batch is one invalid request."""
    if not items:
        return _dump(_error(None, INVALID_REQUEST, "Invalid Request: empty batch"))
    message = "Invalid Request: batches are not supported; send one message per line"
    errors = [_error(usable_id(item), INVALID_REQUEST, message)
              for item in items if not isinstance(item, dict) or "id" in item]
    return _dump(errors) if errors else None


def _invalid(value: Any) -> dict[str, Any] | None:
    """The error reply for a JSON value that is not a valid message; None for a malformed response."""
    if not isinstance(value, dict):
        return _error(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if is_response(value):
        return None  # a response: never answered, whatever is wrong with it
    id = usable_id(value)
    if value.get("jsonrpc") != "2.0":
        return _error(id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    invalid_id = invalid_id_error(value)
    if invalid_id is not None:
        return invalid_id
    if not isinstance(value.get("method"), str):
        return _error(id, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
    if "params" in value and not isinstance(value["params"], dict | None):
        return _error(id, INVALID_PARAMS, "Invalid params: params must be a JSON object")
    return _error(id, INVALID_REQUEST, "Invalid Request")


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()  # ASCII: any lone surrogate escaped


# -- writing ---------------------------------------------------------------------------------------


async def _write(wire: anyio.AsyncFile[bytes], outgoing: MemoryObjectReceiveStream[Outgoing]) -> None:
    async with outgoing:
        async for item in outgoing:
            await wire.write((item if isinstance(item, bytes) else encode_message(item)) + b"\n")
            await wire.flush()


def encode_message(item: SessionMessage) -> bytes:
    """A message as the SDK writes it; one holding a lone surrogate (which UTF-8 cannot carry) with it escaped."""
    message = item.message
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True).encode()
    except PydanticSerializationError:
        return _dump(message.model_dump(mode="json", by_alias=True, exclude_unset=True))


# -- the process's standard streams ----------------------------------------------------------------


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire on private descriptors; meanwhile fd 0 reads /dev/null and fd 1 writes to stderr."""
    sys.stdout.flush()
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
    except OSError:  # no real descriptors (embedded): serve the streams in place
        yield sys.stdin.buffer, sys.stdout.buffer
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
    except OSError:
        pass
    # closefd=False: a worker thread may still block reading after the server stops; the descriptor
    # must not be closed (and reused) under it
    reader, writer = os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield reader, writer
    finally:
        with contextlib.suppress(OSError, ValueError):
            writer.flush()
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
