"""The official MCP TypeScript SDK client (ts_client.mjs) against every domain, over stdio and HTTP."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import anyio
import pytest

from shiftbox.trajectory import read_trajectories
from shiftbox_servers.kit import get_domain, http_server_process, task_domains
from tests.interop.conftest import SHIFTBOX_SERVER, interop_cases, node_json, run_node

DOMAINS = task_domains()
ERROR_META_KEY = "shiftbox/error"  # the documented contract (docs/servers.md), spelled out on purpose


def plan(domain: str) -> list[dict[str, Any]]:
    case = interop_cases(domain)
    return [{"name": case[key][0], "arguments": case[key][1]} for key in ("ok", "rejected", "missing")]


def assert_tool_error(result: dict[str, Any], kind: str) -> dict[str, Any]:
    """A tool execution error any conformant client reads: isError, no structured content claiming the tool's
    output schema, the error as JSON text, and its kind for machines in `_meta`."""
    assert result.get("isError") is True, result
    assert "structuredContent" not in result, result
    error = result["_meta"][ERROR_META_KEY]
    assert error["kind"] == kind, error
    assert [c["type"] for c in result["content"]] == ["text"]
    assert json.loads(result["content"][0]["text"]) == {"error": error}
    return error


def check(domain: str, out: dict[str, Any]) -> None:
    thrown = [(c["name"], call["thrown"]) for c, call in zip(plan(domain), out["calls"], strict=True)
              if "thrown" in call]
    assert not thrown, f"the TypeScript SDK threw instead of returning the result: {thrown}"
    assert out["protocolVersion"] == "2025-11-25"
    assert out["server"]["name"] == f"shiftbox-{domain}"
    assert out["tools"] == [spec.name for spec in get_domain(domain).tools]
    ok, rejected, missing = (call["result"] for call in out["calls"])
    key, value = interop_cases(domain)["ok"][2]
    assert not ok.get("isError") and ok["structuredContent"][key] == value
    assert json.loads(ok["content"][0]["text"]) == ok["structuredContent"]
    error = assert_tool_error(rejected, "invalid_arguments")
    assert error["fields"] == [next(iter(interop_cases(domain)["rejected"][1]))]
    assert_tool_error(missing, "not_found")


@pytest.mark.parametrize("domain", DOMAINS)
def test_typescript_sdk_over_stdio(node, domain):
    spec = {"command": [SHIFTBOX_SERVER, domain], "calls": plan(domain)}
    check(domain, node_json(run_node(node, "ts_client.mjs", json.dumps(spec))))


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.anyio
async def test_typescript_sdk_over_streamable_http(node, domain):
    async with http_server_process(domain, get_domain(domain).default_snapshot_dir()) as base:
        spec = {"url": f"{base}/episodes/ts-{uuid.uuid4().hex[:8]}/mcp", "calls": plan(domain)}
        done = await anyio.to_thread.run_sync(lambda: run_node(node, "ts_client.mjs", json.dumps(spec)))
    check(domain, node_json(done))


def test_shiftbox_serve_records_the_typescript_clients_name_and_prints_its_calls(node, tmp_path):
    """`shiftbox serve --transport stdio` under the TypeScript SDK client (which names itself
    shiftbox-interop-ts 1.0.0 in its `initialize` request): the session records that client, and the gateway
    prints one line per call on its stderr (inherited by the node process)."""
    out = tmp_path / "serve"
    command = [sys.executable, "-m", "shiftbox.cli", "serve", "--domain", "banking", "--transport", "stdio",
               "--out", str(out)]
    done = run_node(node, "ts_client.mjs", json.dumps({"command": command, "calls": plan("banking")}))
    node_json(done)
    [session] = read_trajectories(out)
    assert session.agent == "mcp-client:shiftbox-interop-ts@1.0.0"
    assert session.source_data["client"] == {"name": "shiftbox-interop-ts", "version": "1.0.0"}
    printed = [line for line in done.stderr.splitlines() if line.startswith("call ")]
    assert printed == ["call shiftbox-interop-ts 1.0.0 · open-session#0 · get_customer_by_phone · ok",
                       "call shiftbox-interop-ts 1.0.0 · open-session#0 · get_account · error invalid_arguments",
                       "call shiftbox-interop-ts 1.0.0 · open-session#0 · get_account · error not_found"]
