"""What a request names, checked the same on every path (the SDK's middleware, the HTTP calls fast path, the
in-process session): the episode it belongs to, and the JSON-RPC refusals of the kit's core."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

from ._episode import DEFAULT_EPISODE, EPISODE_META_KEY
from ._protocol import INVALID_PARAMS


class EpisodeAccessError(Exception):
    """A request names an episode its connection may not select."""


class RequestRefused(Exception):
    """A request the protocol answers with a JSON-RPC error (`code`, message, `data`), not a result: raised by the
    kit's core, which loads without the MCP SDK; the SDK binding raises it as the SDK's `MCPError` (`sdk_error`)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def sdk_error(refused: RequestRefused) -> Exception:
    """The SDK's JSON-RPC error (`MCPError`) for a request the kit refused, what its client raises for the answer; the
    SDK's error type is loaded only then."""
    from mcp.shared.exceptions import MCPError

    return MCPError(code=refused.code, message=refused.message, data=refused.data)


class as_sdk_errors:  # named for its `with` line, as `contextlib.suppress` is
    """`with as_sdk_errors():` a `RequestRefused` raised in the block leaves it as the SDK's error (`sdk_error`), where
    the kit answers as the SDK does (its middleware and resource readers, the in-process session)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if isinstance(exc, RequestRefused):
            raise sdk_error(exc) from None


def params_episode_id(params: dict[str, Any] | None) -> str | None:
    """`_meta["shiftbox/episode"]` of request params, if it names one; a value that is no string is refused
    (Invalid params), never ignored: the call would otherwise run in another episode than the one meant."""
    meta = (params or {}).get("_meta") or {}
    if not isinstance(meta, dict) or EPISODE_META_KEY not in meta:
        return None
    value = meta[EPISODE_META_KEY]
    if not isinstance(value, str):
        raise RequestRefused(INVALID_PARAMS, f"_meta[{EPISODE_META_KEY!r}] must be a string naming an episode, "
                                             f"not {json.dumps(value)[:100]}")
    return value


def choose_episode(bound: str | None, params: dict[str, Any] | None) -> str:
    """`request_episode_id` from the episode the connection names (`bound`) and the request's params."""
    named = params_episode_id(params)
    if bound is not None:
        if named is not None and named != bound:
            raise EpisodeAccessError(
                f"this connection serves episode {bound!r} only; _meta[{EPISODE_META_KEY!r}] cannot select "
                f"episode {named!r} (only the plain /mcp endpoint selects episodes by _meta)")
        return bound
    return named if named is not None else DEFAULT_EPISODE
