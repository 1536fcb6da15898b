"""The official MCP conformance suite's server scenarios against `shiftbox-server banking --transport http`."""

from __future__ import annotations

import anyio
import pytest

from shiftbox_servers.kit import get_domain, http_server_process
from tests.interop.conftest import INTEROP, run_node

CONFORMANCE = "node_modules/@modelcontextprotocol/conformance/dist/index.js"


@pytest.mark.anyio
async def test_conformance_server_scenarios_fail_only_where_the_baseline_says(node, tmp_path):
    async with http_server_process("banking", get_domain("banking").default_snapshot_dir()) as base:
        args = [CONFORMANCE, "server", "--url", f"{base}/mcp", "--suite", "all",
                "--expected-failures", str(INTEROP / "conformance-baseline.yml"), "-o", str(tmp_path)]
        done = await anyio.to_thread.run_sync(lambda: run_node(node, *args, timeout=300))
    summary = done.stdout[done.stdout.find("=== SUMMARY ==="):]
    assert done.returncode == 0, f"{summary}\n{done.stderr[-2000:]}"
    assert "Baseline check passed" in summary and "passed, 0 failed" in summary, summary
