"""What a tool publishes of its results, derived from its return annotation without the MCP SDK: the output model
its structured results are checked against, whether they are wrapped as `{"result": ...}`, and the output schema.

The rules are the SDK's (`func_metadata`: a pydantic model as it is; `Annotated[CallToolResult, X]` checked as X; a
plain `CallToolResult` unchecked; `dict[str, V]` as an object; anything else wrapped in a `<fn>Output` model), for
the return types domain tools use; tests/servers/kit/test_direct_session.py proves the schemas equal to the SDK's."""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, create_model

from ._protocol import loaded_model

LOCAL_DEFS = "#/$defs/"
PLAIN_VALUES = (str, int, float, bool, bytes, type(None))
"""Return types whose results are wrapped in `{"result": ...}` (as are generics other than `dict[str, V]`, unions)."""


@dataclass(frozen=True)
class ToolOutput:
    """A tool's results as published: `output_model` (None: unchecked, no output schema), `wrap_output`, the
    `output_schema`, and the validator of results (the attribute names the SDK's `FuncMetadata` uses)."""

    output_model: Any
    wrap_output: bool
    output_schema: dict[str, Any] | None
    adapter: TypeAdapter[Any] | None


@functools.cache
def tool_output(function_name: str, return_annotation: Any) -> ToolOutput:
    """The published results of function `function_name` returning `return_annotation` (made once per pair)."""
    kind, metadata = return_annotation, ()
    if typing.get_origin(return_annotation) is Annotated:
        kind, *extra = typing.get_args(return_annotation)
        metadata = tuple(extra)
    if is_call_tool_result(kind):
        if not metadata:
            return ToolOutput(None, False, None, None)
        kind = metadata[0]
    elif metadata:
        raise TypeError(f"{function_name}: the kit publishes no output of Annotated return type {return_annotation!r}; "
                        "return a pydantic model (or Annotated[CallToolResult, Model])")
    model, wrap = output_model(function_name, kind)
    return model_output(model, wrap) if isinstance(model, type) else checked_output(model, wrap)


@functools.cache
def model_output(model: type, wrap: bool) -> ToolOutput:
    """`checked_output` made once per model class: the tools returning the same model share its validator and output
    schema (which nobody changes)."""
    return checked_output(model, wrap)


def checked_output(model: Any, wrap: bool) -> ToolOutput:
    """The published results checked against `model`: its validator and output schema."""
    adapter = TypeAdapter(model)
    return ToolOutput(model, wrap, inline_root_ref(adapter.json_schema()), adapter)


def is_call_tool_result(kind: Any) -> bool:
    """Whether `kind` is the protocol's `CallToolResult` (or a subclass; a return annotation naming it has loaded the
    protocol's models, which are not loaded to tell)."""
    result_type = loaded_model("CallToolResult")
    return result_type is not None and isinstance(kind, type) and issubclass(kind, result_type)


def output_model(function_name: str, kind: Any) -> tuple[Any, bool]:
    """The type results are checked against, and whether they are wrapped in `{"result": ...}`."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return kind, False
    if typing.get_origin(kind) is dict and type(kind) is types.GenericAlias:
        key, _ = typing.get_args(kind)
        if key is str:
            return Annotated[kind, Field(title=f"{function_name}DictOutput")], False
    if isinstance(kind, type) and type(kind) is not types.GenericAlias and kind not in PLAIN_VALUES:
        raise TypeError(f"{function_name}: the kit publishes no output of return type {kind!r}; return a pydantic "
                        "model, a dict[str, ...] or a plain value")
    return create_model(f"{function_name}Output", result=kind), True


def inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema whose root is a bare `$ref` into `$defs` (a self-referencing model) with that definition inlined at the
    root (an output schema's root must be an object); its siblings win and `$defs` stays for nested references."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith(LOCAL_DEFS):
        return schema
    return {**schema["$defs"][ref.removeprefix(LOCAL_DEFS)], **{k: v for k, v in schema.items() if k != "$ref"}}
