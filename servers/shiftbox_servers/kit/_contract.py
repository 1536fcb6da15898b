"""Tool contracts: a digest of what a server publishes in `tools/list`, so drift is caught, not scored.

Each tool's digest covers its name, description, input and output schemas and annotations, as
canonical JSON (sorted keys, no whitespace); the contract's digest covers the sorted per-tool digests.
A mismatch can therefore name the tools that changed, appeared or disappeared.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

CONTRACT_FIELDS = ("name", "description", "inputSchema", "outputSchema", "annotations")


class ToolContract(BaseModel):
    """The digest of one tool set as published, plus one digest per tool."""

    model_config = ConfigDict(extra="forbid")

    digest: str = Field(description="sha256 over the sorted 'name:digest' lines of `tools`")
    tools: dict[str, str] = Field(description="tool name -> sha256 of its canonical JSON")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def tool_digest(tool: Mapping[str, Any]) -> str:
    """sha256 of one published tool (a `tools/list` entry as JSON, camelCase keys)."""
    return hashlib.sha256(_canonical({k: tool[k] for k in CONTRACT_FIELDS if tool.get(k) is not None})).hexdigest()


def tool_contract(tools: Iterable[Mapping[str, Any]]) -> ToolContract:
    """The contract of published tools (dicts as `tools/list` sends them)."""
    per_tool = {t["name"]: tool_digest(t) for t in tools}
    lines = "".join(f"{name}:{per_tool[name]}\n" for name in sorted(per_tool))
    return ToolContract(digest=hashlib.sha256(lines.encode()).hexdigest(), tools=dict(sorted(per_tool.items())))


def contract_changes(expected: ToolContract, actual: ToolContract) -> list[str]:
    """Names of the tools that differ: changed, missing from `actual` or new in it (sorted)."""
    names = expected.tools.keys() | actual.tools.keys()
    return sorted(n for n in names if expected.tools.get(n) != actual.tools.get(n))


def describe_changes(expected: ToolContract, actual: ToolContract) -> str:
    parts = []
    for name in contract_changes(expected, actual):
        if name not in actual.tools:
            parts.append(f"{name} (missing)")
        elif name not in expected.tools:
            parts.append(f"{name} (new)")
        else:
            parts.append(f"{name} (changed)")
    return ", ".join(parts)


async def published_contract(server: Any) -> ToolContract:
    """The contract of a `DomainServer` as it publishes its tools (in process, as its `tools/list` lists them: their
    dumps, `wire_tools`)."""
    return tool_contract(server.wire_tools())

