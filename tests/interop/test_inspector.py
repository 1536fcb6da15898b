"""MCP Inspector's CLI (`mcp-inspector --cli`) against the banking server, over streamable HTTP and stdio.

The Inspector prints a tool error's result and exits 5 (its TOOL_ERROR); with --strict it lints every
published tool schema for portability across clients and exits 6 on an error-severity finding.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from shiftbox_servers.kit import get_domain, http_server_process
from tests.interop.conftest import SHIFTBOX_SERVER, interop_cases, node_json, run_node
from tests.interop.test_ts_sdk import assert_tool_error

INSPECTOR = "node_modules/.bin/mcp-inspector"
DOMAIN = "banking"


def tool_call(name: str, arguments: dict[str, Any]) -> list[str]:
    # --tool-arg values are JSON-parsed by the Inspector, so 5 arrives as a number
    pairs = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in arguments.items()]
    return ["--method", "tools/call", "--tool-name", name, "--tool-arg", *pairs]


def inspector(node: str, target: list[str], *args: str, exit_code: int = 0) -> Any:
    return node_json(run_node(node, INSPECTOR, "--cli", *target, *args), exit_code)


@pytest.mark.anyio
async def test_inspector_cli_lists_calls_and_shows_errors_over_http(node):
    case = interop_cases(DOMAIN)
    async with http_server_process(DOMAIN, get_domain(DOMAIN).default_snapshot_dir()) as base:
        target = [f"{base}/episodes/inspector/mcp"]

        def run(*args: str, exit_code: int = 0) -> Any:
            return inspector(node, target, *args, exit_code=exit_code)

        listed = await anyio.to_thread.run_sync(run, "--method", "tools/list", "--strict")
        ok = await anyio.to_thread.run_sync(run, *tool_call(*case["ok"][:2]))
        rejected = await anyio.to_thread.run_sync(lambda: run(*tool_call(*case["rejected"]), exit_code=5))
        # the same episode under the stateless 2026-07-28 protocol (the Inspector defaults to the handshake)
        missing = await anyio.to_thread.run_sync(
            lambda: run("--protocol-era", "modern", *tool_call(*case["missing"]), exit_code=5))
    assert [t["name"] for t in listed["tools"]] == [spec.name for spec in get_domain(DOMAIN).tools]
    key, value = case["ok"][2]
    assert not ok.get("isError") and ok["structuredContent"][key] == value
    assert assert_tool_error(rejected, "invalid_arguments")["fields"] == ["account_id"]
    assert_tool_error(missing, "not_found")


def test_inspector_cli_shows_errors_over_stdio(node):
    missing = inspector(node, [SHIFTBOX_SERVER, DOMAIN], *tool_call(*interop_cases(DOMAIN)["missing"]), exit_code=5)
    assert "acc_99999" in assert_tool_error(missing, "not_found")["message"]
