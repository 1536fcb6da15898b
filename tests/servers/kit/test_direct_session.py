"""The kit without the MCP SDK: its core (every domain's server, its tools, episodes and resources) loads and runs
without importing `mcp`, which only the transports that speak MCP load (`_binding`, stdio, HTTP)."""

from __future__ import annotations

import json
import subprocess
import sys

SDK_FREE = """
import json, sys
from shiftbox_servers.kit import DomainServer, Snapshot, get_domain
for name in ("banking", "retail", "airline"):
    domain = get_domain(name)
    server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()), dependency_graph=True, graph_refusal=True)
    assert server.tools and server.resources
print(json.dumps(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "starlette", "uvicorn")))))
"""


def test_the_kits_core_loads_and_builds_servers_without_the_mcp_sdk():
    done = subprocess.run([sys.executable, "-c", SDK_FREE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []
