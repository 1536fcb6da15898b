"""Each snapshot's manifest records the tool contract its servers publish, for every tool set (what
`shiftbox snapshots build` stamps through `stamp_tool_contracts`)."""

from __future__ import annotations

import anyio

from shiftbox_servers.kit import DomainServer, Snapshot, registered_domains
from shiftbox_servers.kit._contract import published_contract


def test_each_manifest_records_the_contract_its_servers_publish_for_every_tool_set():
    for name, domain in sorted(registered_domains().items()):
        snapshot = Snapshot.load(domain.default_snapshot_dir())
        assert sorted(snapshot.manifest.tool_contracts) == sorted(domain.toolset_names()), name
        for toolset in domain.toolset_names():
            published = anyio.run(published_contract, DomainServer(domain, snapshot, toolset=toolset))
            assert snapshot.manifest.tool_contracts[toolset] == published, (
                f"{name}/{toolset}: the manifest's tool contract is stale; run `shiftbox snapshots build`")
