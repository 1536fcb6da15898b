"""Declaring domain tools once: plain functions of (episode, typed arguments) -> pydantic model.

From one signature the kit derives the published input schema (closed: `additionalProperties:
false`), a strict validator (no coercion of "5" to 5 or true to 1, no unknown keys) and the MCP
wrapper that runs the call atomically in the request's episode.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError, create_model


@dataclass(frozen=True)
class ToolSpec:
    """One domain tool: its function, MCP annotations and the strict model of its arguments."""

    name: str
    fn: Callable[..., BaseModel]
    annotations: ToolAnnotations
    arguments_model: type[BaseModel]

    @property
    def description(self) -> str:
        return inspect.cleandoc(self.fn.__doc__ or "")

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
            annotations = ToolAnnotations(
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
