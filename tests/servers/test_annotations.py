"""Every tool of every domain declares readOnlyHint, destructiveHint and idempotentHint, consistently."""

from __future__ import annotations

import anyio

from shiftbox_servers.kit import DomainServer, Snapshot, registered_domains


def test_every_published_tool_declares_all_three_hints_and_read_only_is_not_destructive():
    for name, domain in sorted(registered_domains().items()):
        snapshot = Snapshot.load(domain.default_snapshot_dir())
        for toolset in domain.toolset_names():
            server = DomainServer(domain, snapshot, toolset=toolset)
            tools = anyio.run(server.mcp.list_tools)
            assert tools, (name, toolset)
            for tool in tools:
                hints = tool.model_dump(by_alias=True, exclude_none=True).get("annotations", {})
                for key in ("readOnlyHint", "destructiveHint", "idempotentHint"):
                    assert isinstance(hints.get(key), bool), (name, toolset, tool.name, key)
                if hints["readOnlyHint"]:
                    assert not hints["destructiveHint"] and hints["idempotentHint"], (name, tool.name)

