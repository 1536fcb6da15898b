"""Declaring domain tools once: plain functions of (episode, typed arguments) -> pydantic model.

From one signature the kit derives the published input schema (closed: `additionalProperties:
false`), a strict validator (no coercion of "5" to 5 or true to 1, no unknown keys) and the MCP
wrapper that runs the call atomically in the request's episode.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ._errors import ErrorKind, FailedCall, error_wire

if TYPE_CHECKING:
    from mcp_types import ToolAnnotations


@dataclass(frozen=True)
class ToolHints:
    """A tool's MCP annotations (the protocol's `ToolAnnotations`, its attribute names), held without the protocol's
    models: `wire()` is what `tools/list` publishes, `model()` what the SDK is handed."""

    read_only_hint: bool
    destructive_hint: bool
    idempotent_hint: bool
    open_world_hint: bool

    def wire(self) -> dict[str, Any]:
        """The annotations as `tools/list` publishes them (the model's JSON dump: its aliases, in its order)."""
        return {"readOnlyHint": self.read_only_hint, "destructiveHint": self.destructive_hint,
                "idempotentHint": self.idempotent_hint, "openWorldHint": self.open_world_hint}

    def model(self) -> ToolAnnotations:
        from mcp_types import ToolAnnotations

        return ToolAnnotations.model_validate(self.wire())


@dataclass(frozen=True)
class ToolSpec:
    """One domain tool: its function, MCP annotations and the strict model of its arguments."""

    name: str
    fn: Callable[..., BaseModel]
    annotations: ToolHints
    arguments_model: type[BaseModel]
    input_schema: dict[str, Any] | None = None
    """The input schema to publish as it is (a tool read from data, e.g. an imported MMTB record's); None: the one
    derived from the signature."""

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.fn.__doc__ or "")

    @functools.cached_property
    def arguments_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments model (`model_json_schema`, by alias), made once for the server that
        publishes it and the metrics that read it: shared, so never changed (copy it to change it)."""
        return self.arguments_model.model_json_schema(by_alias=True)

    @property
    def signature(self) -> inspect.Signature:
        """The signature clients see: the function's, without the leading episode parameter."""
        sig = inspect.signature(self.fn, eval_str=True)
        params = list(sig.parameters.values())[1:]
        return sig.replace(parameters=params)


def strict_arguments_model(name: str, signature: inspect.Signature) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for p in signature.parameters.values():
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (p.annotation, default)
    config = ConfigDict(strict=True, extra="forbid")
    return create_model(f"{name}_arguments", __config__=config, **fields)


JSON_TYPES: dict[str, Any] = {
    "string": str, "integer": int, "number": float | int, "boolean": bool, "array": list[Any],
    "object": dict[str, Any],
}
"""JSON schema type -> the Python type the strict argument check accepts (an unknown or missing type: any value)."""


def schema_arguments_model(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """The strict check of a tool published with a JSON input schema of its own (a tool read from data, e.g. an
    imported MMTB record's): its property names, required ones, and each property's JSON type; unknown keys refused.
    A property named "" (MMTB's placeholder for "no parameters") is no parameter."""
    required = set(schema.get("required") or ())
    parameters = []
    for key, prop in (schema.get("properties") or {}).items():
        if not key:
            continue
        kind = JSON_TYPES.get(prop.get("type") if isinstance(prop, dict) else None, Any)
        parameters.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=kind)
                          if key in required else
                          inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, annotation=kind | None, default=None))
    return strict_arguments_model(name, inspect.Signature(parameters))


@dataclass
class ToolSet:
    """The tools of one domain, in declaration order (which is also `tools/list` order)."""

    specs: dict[str, ToolSpec] = field(default_factory=dict)

    def tool(
        self, *, read_only: bool, destructive: bool = False, idempotent: bool = False
    ) -> Callable[[Callable[..., BaseModel]], Callable[..., BaseModel]]:
        def register(fn: Callable[..., BaseModel]) -> Callable[..., BaseModel]:
            name = fn.__name__
            if name in self.specs:
                raise ValueError(f"tool {name!r} declared twice")
            if not fn.__doc__:
                raise ValueError(f"tool {name!r} needs a docstring: it is what the agent reads")
            annotations = ToolHints(
                read_only_hint=read_only,
                destructive_hint=destructive and not read_only,
                idempotent_hint=idempotent or read_only,
                open_world_hint=False,
            )
            spec = ToolSpec(name, fn, annotations, BaseModel)
            model = strict_arguments_model(name, spec.signature)
            self.specs[name] = ToolSpec(name, fn, annotations, model)
            return fn

        return register

    def __iter__(self):
        return iter(self.specs.values())

    def __len__(self) -> int:
        return len(self.specs)

    def get(self, name: str) -> ToolSpec | None:
        return self.specs.get(name)

    def without(self, *names: str) -> ToolSet:
        """This tool set less the named tools (a reference version that lacked them); KeyError for a name
        it does not have."""
        unknown = sorted(set(names) - self.specs.keys())
        if unknown:
            raise KeyError(f"tools not in this set: {unknown}")
        return ToolSet({name: spec for name, spec in self.specs.items() if name not in names})

    def __add__(self, other: ToolSet) -> ToolSet:
        """A tool set with this one's tools, then `other`'s (a profile extending a domain's default tools)."""
        clash = sorted(self.specs.keys() & other.specs.keys())
        if clash:
            raise ValueError(f"tools declared in both sets: {clash}")
        return ToolSet({**self.specs, **other.specs})


def describe_validation_error(spec: ToolSpec, exc: ValidationError) -> tuple[str, list[str]]:
    """A message naming every offending field and what it needs, plus the field list."""
    accepted = ", ".join(spec.arguments_model.model_fields) or "no arguments"
    parts: list[str] = []
    fields: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        fields.append(loc)
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected argument '{loc}' (this tool accepts: {accepted})")
        elif err["type"] == "missing":
            parts.append(f"missing required argument '{loc}'")
        else:
            got = err.get("input")
            shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
            parts.append(f"'{loc}': {err['msg']} (got {shown[:60]})")
    return f"invalid arguments for {spec.name}: " + "; ".join(parts), sorted(set(fields))


# -- text that is not Unicode ----------------------------------------------------------------------

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_lone_surrogates(text: str) -> str:
    """Each lone UTF-16 surrogate (JSON can escape one, UTF-8 cannot carry it) as its escape `\\udXXX`.

    Inside JSON text made with `ensure_ascii=False` the result is valid JSON for the same value.
    """
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def lone_surrogate_fields(value: Any, path: str = "") -> list[str]:
    """Dotted paths (keys included, `[]` for list items as `.0`) of the strings in a JSON value that
    hold a lone surrogate; empty when all of it is valid Unicode."""
    found: list[str] = []
    if isinstance(value, str):
        if _LONE_SURROGATE.search(value):
            found.append(path or "(arguments)")
    elif isinstance(value, dict):
        for key, item in value.items():
            key_text = str(key)
            where = f"{path}.{escape_lone_surrogates(key_text)}" if path else escape_lone_surrogates(key_text)
            if _LONE_SURROGATE.search(key_text):
                found.append(where)
            found += lone_surrogate_fields(item, where)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found += lone_surrogate_fields(item, f"{path}.{i}" if path else str(i))
    return found


def not_unicode_error(name: Any, arguments: Any) -> FailedCall | None:
    """The error result of a tool call whose name or arguments hold a lone surrogate, else None.

    Such a call is the caller's mistake, like any invalid argument; it cannot even be sent (UTF-8 has
    no encoding for it), so a client answers it itself with this result, the one a server would give.
    """
    if isinstance(name, str) and _LONE_SURROGATE.search(name):
        return error_wire(ErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}: a tool name must be valid Unicode text")
    fields = lone_surrogate_fields(arguments)
    if not fields:
        return None
    parts = "; ".join(f"'{f}': not valid Unicode text (it holds a lone UTF-16 surrogate)" for f in fields)
    return error_wire(ErrorKind.INVALID_ARGUMENTS, f"invalid arguments for {name}: {parts}", fields=sorted(fields))
