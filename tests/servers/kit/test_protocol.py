"""The protocol's constants and JSON dumps the kit shapes without loading the protocol's models (`_protocol`,
`ToolHints`, `ServerIdentity`, the probe result, a resource's contents, the crash answer) are the models' own: the
constants `mcp_types` defines, the dumps its models make of the same values (on the installed mcp, and the floor's:
make test-floor)."""

from __future__ import annotations

import json
import subprocess
import sys

import mcp_types
from mcp_types import (
    CallToolResult,
    Implementation,
    ReadResourceResult,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from mcp_types import Tool as McpTool
from mcp_types import version as versions

from shiftbox_servers.kit import DomainServer, Snapshot, ToolHints, _protocol, get_domain
from shiftbox_servers.kit._server import PROBE, PROBE_RESULT, result_dump


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def test_the_kits_protocol_constants_are_the_installed_mcp_types():
    assert _protocol.INVALID_PARAMS == mcp_types.INVALID_PARAMS
    assert _protocol.INTERNAL_ERROR == mcp_types.INTERNAL_ERROR
    assert _protocol.SERVER_INFO_META_KEY == mcp_types.SERVER_INFO_META_KEY
    assert _protocol.LATEST_PROTOCOL_VERSION == versions.LATEST_PROTOCOL_VERSION
    assert tuple(versions.MODERN_PROTOCOL_VERSIONS) == _protocol.MODERN_PROTOCOL_VERSIONS
    assert _protocol.loaded_model("CallToolResult") is CallToolResult


READ_VERSIONS = """
import json, sys
from shiftbox_servers.kit import _protocol
print(json.dumps({"latest": _protocol.LATEST_PROTOCOL_VERSION, "modern": _protocol.MODERN_PROTOCOL_VERSIONS,
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] == "mcp_types"),
                  "none": _protocol.loaded_model("CallToolResult") is None}))
"""


def test_the_versions_are_read_from_the_installed_file_without_loading_the_models():
    done = subprocess.run([sys.executable, "-c", READ_VERSIONS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert (out["latest"], out["modern"]) == (versions.LATEST_PROTOCOL_VERSION, list(versions.MODERN_PROTOCOL_VERSIONS))
    assert out["loaded"] == [] and out["none"] is True


def test_the_dumps_the_kit_shapes_are_the_models_dumps():
    hints = ToolHints(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    model = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    assert list(hints.wire().items()) == list(dump(model).items())  # the same keys in the same order
    assert hints.model() == model
    crash = CallToolResult(content=[TextContent(type="text", text="Error executing tool t")], is_error=True)
    read = ReadResourceResult(contents=[TextResourceContents(uri="shiftbox://x", mime_type="text/plain", text="t")])
    domain = get_domain("banking")
    server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))
    for shaped, model, method in [
        (PROBE_RESULT, CallToolResult(content=[TextContent(type="text", text=PROBE)],
                                      structured_content={PROBE: PROBE}), "tools/call"),
        (result_dump(content=[{"type": "text", "text": "Error executing tool t"}], isError=True), crash, "tools/call"),
        (result_dump(ttlMs=0, cacheScope="private",
                     contents=[{"uri": "shiftbox://x", "mimeType": "text/plain", "text": "t"}]), read,
         "resources/read")]:
        assert json.dumps(shaped) == json.dumps(dump(model))  # the same keys in the same order
        for version in versions.KNOWN_PROTOCOL_VERSIONS:  # and shaped for every wire alike
            for surface in (True, False):
                wire = server.wire_result(version, json.loads(json.dumps(shaped)), method, surface=surface)
                assert json.dumps(wire) == json.dumps(server.wire_result(version, model, method, surface=surface))


def test_a_servers_identity_and_tools_as_the_kit_dumps_them_are_the_models():
    domain = get_domain("banking")
    server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()), dependency_graph=True)
    info = Implementation(name=server.identity.name, version=server.identity.version,
                          description=server.identity.description)
    assert list(server.identity.wire().items()) == list(dump(info).items()) and server.info == info
    tools = server.wire_tools()
    assert [list(tool.items()) for tool in tools] == [list(dump(McpTool.model_validate(tool)).items())
                                                      for tool in tools]
    assert all("outputSchema" in tool and tool["annotations"] for tool in tools)
    tools[0]["inputSchema"]["mutated"] = True  # the caller's own copy
    assert "mutated" not in server.wire_tools()[0]["inputSchema"]
