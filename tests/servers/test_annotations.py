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


def test_each_manifest_records_the_contract_its_servers_publish_for_every_tool_set():
    from shiftbox_servers.kit import published_contract

    for name, domain in sorted(registered_domains().items()):
        snapshot = Snapshot.load(domain.default_snapshot_dir())
        assert sorted(snapshot.manifest.tool_contracts) == sorted(domain.toolset_names()), name
        for toolset in domain.toolset_names():
            published = anyio.run(published_contract, DomainServer(domain, snapshot, toolset=toolset))
            assert snapshot.manifest.tool_contracts[toolset] == published, (
                f"{name}/{toolset}: the manifest's tool contract is stale; run `shiftbox snapshots build`")
