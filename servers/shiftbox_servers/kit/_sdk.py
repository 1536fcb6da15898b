"""What differs between the mcp releases shiftbox allows (`mcp>=2.0.0`): the SDK names that moved, and the one
behaviour shiftbox relies on that changed, each handled here once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp_types import CallToolResult
from pydantic import PrivateAttr

try:  # mcp >= 2.2: the body limit is with the other request checks
    from mcp.server.transport_security import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        RequestBodyLimitMiddleware,
    )
except ImportError:  # mcp 2.0, 2.1: beside the session manager (the same middleware, on POST bodies)
    from mcp.server.streamable_http_manager import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        RequestBodyLimitMiddleware,
    )

__all__ = ["DEFAULT_MAX_REQUEST_BODY_SIZE", "RequestBodyLimitMiddleware", "keep_error_results", "results_metadata"]


class _ErrorResultsAsReturned(FuncMetadata):
    """A tool's metadata that hands a failed `CallToolResult` on as returned, as mcp >= 2.2 does: mcp 2.0 checked
    its (absent) structured content against the tool's output schema and answered a bare "Error executing tool"
    instead, losing the kinded error (`_meta["shiftbox/error"]`)."""

    _arguments_of: Callable[..., Any] | None = PrivateAttr(default=None)
    """A function whose parameters the SDK's argument model is of, built from them on first use (`later`)."""

    def convert_result(self, result: Any) -> Any:
        if isinstance(result, CallToolResult) and result.is_error:
            return result
        return super().convert_result(result)

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        self._build_arguments_model()
        return super().validate_arguments(arguments_to_validate)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        self._build_arguments_model()
        return super().pre_parse_json(data)

    def _build_arguments_model(self) -> None:
        if self._arguments_of is not None:
            self.arg_model = func_metadata(self._arguments_of, structured_output=False).arg_model
            self._arguments_of = None


_RESULTS: dict[Any, FuncMetadata] = {}
"""Return type -> the SDK's metadata of a function's results of that type (`results_metadata`)."""


def results_metadata(name: str, return_annotation: Any) -> FuncMetadata:
    """The SDK's metadata of the results of a function `name` returning `return_annotation` (output model, published
    schema, validator), made once per return type where they do not depend on the function's name (the return type
    is the output model itself): many tools return the same model, and its schema is most of a tool's registration."""
    try:
        kept = _RESULTS.get(return_annotation)
    except TypeError:  # an unhashable annotation
        kept = None
    if kept is not None:
        return kept

    def results() -> None:
        raise AssertionError("never called: only its return annotation is read")

    results.__name__ = results.__qualname__ = name
    results.__signature__ = inspect.Signature(return_annotation=return_annotation)  # type: ignore[attr-defined]
    metadata = func_metadata(results)
    if metadata.output_model is return_annotation:
        _RESULTS[return_annotation] = metadata
    return metadata


def keep_error_results(tool: Tool, arguments_of: Callable[..., Any] | None = None,
                       results: FuncMetadata | None = None) -> Tool:
    """`tool` with metadata that returns a domain tool's failed results unchanged (on every mcp release).

    `arguments_of`: the function whose parameters the tool takes, when `tool` was made from one without them;
    the SDK's argument model of them is then built when the SDK first parses a call's arguments, not before
    (the kit answers the calls it has checked itself, and publishes the input schema it derived). `results`: the
    metadata of its results (`results_metadata`), when `tool` was made without structured output; its validator
    of results is shared with it."""
    metadata = tool.fn_metadata
    outputs = results or metadata
    tool.fn_metadata = _ErrorResultsAsReturned(arg_model=metadata.arg_model, output_schema=outputs.output_schema,
                                               output_model=outputs.output_model, wrap_output=outputs.wrap_output)
    tool.fn_metadata._arguments_of = arguments_of
    if results is not None and results.output_model is not None and "_adapter" in FuncMetadata.__private_attributes__:
        results._output_adapter(results.output_model)  # built once, for every tool returning the type
        tool.fn_metadata._adapter = results._adapter
    return tool
