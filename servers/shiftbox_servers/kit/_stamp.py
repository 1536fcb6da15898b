"""Stamping a snapshot with the tool contracts its servers publish: above both the server and the snapshot."""

from __future__ import annotations

from typing import Any

import anyio

from ._contract import published_contract
from ._server import DomainServer
from ._snapshot import MANIFEST_FILENAME, Snapshot


def stamp_tool_contracts(domain: Any, directory: Any) -> Any:
    """Record in a snapshot's manifest the contract of each of `domain`'s tool sets, as its servers
    publish them over that snapshot; returns the updated manifest (the database file is untouched)."""
    snapshot = Snapshot.load(directory)
    contracts = {name: anyio.run(published_contract, DomainServer(domain, snapshot, toolset=name))
                 for name in domain.toolset_names()}
    manifest = snapshot.manifest.model_copy(update={"tool_contracts": contracts})
    (snapshot.directory / MANIFEST_FILENAME).write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest
