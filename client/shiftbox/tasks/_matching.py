"""When does a tool call satisfy a gold action? One definition, shared by users, agents and metrics."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from ._model import ActionSet, ToolCallSpec


def canonical_value(value: Any) -> Any:
    """JSON value in canonical form: numbers as floats, trimmed strings, ISO dates normalized, lists in order."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if len(text) >= 10 and text[:4].isdigit() and text[4] == "-":
            try:
                return (date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)).isoformat()
            except ValueError:
                return text
        return text
    if isinstance(value, list | tuple):
        return [canonical_value(v) for v in value]
    if isinstance(value, dict):
        return {k: canonical_value(v) for k, v in sorted(value.items())}
    return value


def _same(expected: Any, actual: Any) -> bool:
    return canonical_value(expected) == canonical_value(actual)


def params_match(spec: ToolCallSpec, arguments: dict[str, Any], required: Iterable[str] | None = None) -> bool:
    """The call agrees on every required param (default: every param the spec gives), canonically."""
    keys = spec.params.keys() if required is None else [k for k in required if k in spec.params]
    return all(k in arguments and _same(spec.params[k], arguments[k]) for k in keys)


def spec_matches(spec: ToolCallSpec, name: str, arguments: dict[str, Any],
                 required: Iterable[str] | None = None) -> bool:
    """The call uses the spec's tool and agrees on its params."""
    return name == spec.function_name and params_match(spec, arguments, required)


def action_matches(action: ActionSet, name: str, arguments: dict[str, Any]) -> bool:
    """The call is one of the action set's allowed alternatives."""
    return any(spec_matches(s, name, arguments, action.required_parameters) for s in action.allowed_tools)


Call = tuple[str, dict[str, Any], bool] | tuple[str, dict[str, Any], bool, str | None]
"""(name, arguments, is_error) or (name, arguments, is_error, error_kind) of a call made."""


def satisfied_actions(actions: Iterable[ActionSet], calls: Iterable[Call]) -> set[str]:
    """Ids of the action sets met by at least one call with the outcome its spec expects: a successful call,
    or — for a spec with `expected_error` — a call that failed with that kind (any kind when the call's kind
    is not given)."""
    made = [(c[0], c[1], c[2], c[3] if len(c) > 3 else None) for c in calls]
    return {a.action_id for a in actions
            if any(spec.outcome_matches(failed, kind) and spec_matches(spec, name, args, a.required_parameters)
                   for spec in a.allowed_tools for name, args, failed, kind in made)}
