"""`open_world`: one domain's world (`_world`) or several domains seen as one (`_cross`), by the name given."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from shiftbox_servers.kit import DEFAULT_TOOLSET, is_cross_domain

from ._cross import open_cross_world
from ._world import ServerMode, World, open_domain_world


@contextlib.asynccontextmanager
async def open_world(domain_name: str, *, servers: ServerMode = "inproc", snapshot_dir: Path | str | None = None,
                     toolset: str = DEFAULT_TOOLSET, dependency_graph: bool = False,
                     graph_refusal: bool = False) -> AsyncIterator[World]:
    """Start or embed the domain server for the length of a run and connect to it (with tool profile
    `toolset`: 'default', or e.g. 'agentchangebench'; `dependency_graph`: the tool descriptions carry the
    domain's dependency graph, VitaBench's mode; `graph_refusal`: the server also refuses out-of-order calls, a
    shiftbox option). Several domains ("banking,airline") give a
    `CrossWorld`: each domain's server, one episode on each per simulation, tools namespaced (`_cross`);
    `snapshot_dir` then names one directory per domain, separated by commas."""
    options = {"servers": servers, "snapshot_dir": snapshot_dir, "toolset": toolset,
               "dependency_graph": dependency_graph, "graph_refusal": graph_refusal}
    if is_cross_domain(domain_name):
        async with open_cross_world(domain_name, open_domain_world, **options) as cross:
            yield cross  # type: ignore[misc]
        return
    async with open_domain_world(domain_name, **options) as world:
        yield world
