"""The MCP protocol's constants the kit's core needs, without loading the protocol's models: importing anything of
`mcp_types` first runs its `__init__`, which builds every model (about 0.2 s of CPU that a run's start-up and its
in-process tool calls need not pay). The versions are the installed `mcp_types`' own (its `version` module, which
imports nothing, read from its file); the rest are fixed by JSON-RPC and MCP. tests/servers/kit/test_protocol.py
checks them against `mcp_types`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

INVALID_PARAMS = -32602
"""JSON-RPC's "Invalid params" error code."""
INTERNAL_ERROR = -32603
"""JSON-RPC's "Internal error" error code."""
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
"""The result `_meta` key under which a 2026-era server stamps its identity."""


def _installed_versions() -> ModuleType:
    """`mcp_types.version` as installed: the loaded module, else its file run on its own (the package's `__init__`,
    which the regular import would run first, is not)."""
    loaded = sys.modules.get("mcp_types.version")
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("mcp_types")
    if package is None or not package.submodule_search_locations:
        raise ImportError("the MCP protocol's types (mcp_types) are not installed: install shiftbox-servers' "
                          "dependencies (`make env`)")
    path = Path(next(iter(package.submodule_search_locations))) / "version.py"
    spec = importlib.util.spec_from_file_location("shiftbox_servers.kit._mcp_types_version", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot read the MCP protocol's versions from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_versions = _installed_versions()
LATEST_PROTOCOL_VERSION: str = _versions.LATEST_PROTOCOL_VERSION
"""The newest protocol revision the installed SDK speaks (its clients' default)."""
MODERN_PROTOCOL_VERSIONS: tuple[str, ...] = tuple(_versions.MODERN_PROTOCOL_VERSIONS)
"""The revisions with the per-request envelope (`resultType`, the serverInfo stamp)."""
del _versions


def result_dump(**fields: Any) -> dict[str, Any]:
    """A result as the protocol's result models dump it (JSON mode, aliases, no field left None), given its fields in
    its model's order: they end with `resultType`, its default "complete" (tests/servers/kit/test_protocol.py)."""
    return {**fields, "resultType": "complete"}


def loaded_model(name: str) -> type | None:
    """The protocol's model `name` (`mcp_types.<name>`) if some module has loaded the models, else None: what no value
    can then be an instance of, nor any type a subclass of, so asking never loads them."""
    models = sys.modules.get("mcp_types")
    return getattr(models, name, None) if models is not None else None
