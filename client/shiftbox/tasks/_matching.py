"""When does a tool call satisfy a gold action? One definition, shared by users, agents and metrics."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._model import ActionSet, ToolCallSpec


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, float | int) and isinstance(actual, float | int) and not isinstance(actual, bool):
        return abs(float(expected) - float(actual)) < 1e-9
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip() == actual.strip()
    return expected == actual


def spec_matches(spec: ToolCallSpec, name: str, arguments: dict[str, Any],
                 required: Iterable[str] | None = None) -> bool:
    """The call uses the spec's tool and agrees on every required param (default: every param given)."""
    if name != spec.function_name:
        return False
    keys = spec.params.keys() if required is None else [k for k in required if k in spec.params]
    return all(k in arguments and _same(spec.params[k], arguments[k]) for k in keys)


def action_matches(action: ActionSet, name: str, arguments: dict[str, Any]) -> bool:
    """The call is one of the action set's allowed alternatives."""
    return any(spec_matches(s, name, arguments, action.required_parameters) for s in action.allowed_tools)


def satisfied_actions(actions: Iterable[ActionSet], calls: Iterable[tuple[str, dict[str, Any], bool]]) -> set[str]:
    """Ids of the action sets met by at least one successful call among (name, arguments, is_error)."""
    calls = [(n, a) for n, a, failed in calls if not failed]
    return {a.action_id for a in actions if any(action_matches(a, n, args) for n, args in calls)}
