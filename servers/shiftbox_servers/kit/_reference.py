"""Results in the reference benchmark's own shape, for the tool sets that reproduce tau2-bench's tools
(`--toolset tau2` / `agentchangebench`).

tau2 turns a tool's return value into its tool message with `json.dumps` of the pydantic dump (a model's
fields in declaration order, `null` for an unset field, default separators) and passes a string through
as it is: a user id is the bare id, `calculate`'s answer the bare number text. `reference_result` gives
an MCP result whose text is exactly that message, and whose structured content is the same value when it
is a JSON object (a string has no structured content: MCP structured content is always an object).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ._calculate import evaluate_arithmetic
from ._errors import InvalidArguments

if TYPE_CHECKING:  # loaded by the reference tool sets that return them (`reference_result`)
    from mcp_types import CallToolResult

CALCULATE_CHARACTERS = frozenset("0123456789+-*/(). ")
"""What tau2's `calculate` accepts before evaluating."""


def _plain(value: Any) -> Any:
    """The value as tau2 dumps it: models to dicts (python mode), containers walked, scalars kept."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def reference_message(value: Any) -> str:
    """tau2's tool message for a tool's return value (a string as it is, anything else as JSON text)."""
    if isinstance(value, str):
        return value
    return json.dumps(_plain(value), default=str)


def reference_result(value: Any) -> CallToolResult:
    """An MCP result whose text is tau2's tool message for `value`; an object (a model, a dict) is also
    the structured content, a list is under "result" (structured content must be an object)."""
    from mcp_types import CallToolResult, TextContent

    text = [TextContent(type="text", text=reference_message(value))]
    if isinstance(value, str):
        return CallToolResult(content=text)
    plain = json.loads(text[0].text)
    return CallToolResult(content=text, structured_content=plain if isinstance(plain, dict) else {"result": plain})


def reference_calculate(expression: str) -> CallToolResult:
    """tau2's `calculate` (every domain's): its character check and message, then the value rounded to 2
    decimals as text — evaluated by shiftbox's arithmetic evaluator, never Python's eval."""
    if not set(expression) <= CALCULATE_CHARACTERS:
        raise InvalidArguments("Invalid characters in expression", field="expression")
    return reference_result(str(evaluate_arithmetic(expression)))
