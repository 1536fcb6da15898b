"""Opening an installed domain's server on a snapshot: what `shiftbox-server`, the harness and benchmarks start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._domain import get_domain
from ._server import DomainServer
from ._snapshot import Snapshot


def open_server(domain_name: str, snapshot_dir: Path | None = None, **kwargs: Any) -> DomainServer:
    """A server for the installed domain `domain_name` on `snapshot_dir` (default: the domain's own snapshot).

    `kwargs` go to `DomainServer` (max_episodes, idle_timeout_s, toolset, dependency_graph). KeyError for an unknown domain;
    SnapshotError when the directory is no snapshot or holds another domain's.
    """
    domain = get_domain(domain_name)
    snapshot = Snapshot.load(snapshot_dir or domain.default_snapshot_dir())
    domain.check_snapshot(snapshot.manifest, snapshot.directory)
    return DomainServer(domain, snapshot, **kwargs)
