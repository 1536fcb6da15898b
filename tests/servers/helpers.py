"""Calling a domain server through a real MCP client (so strictness and errors are what clients see)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult

from shiftbox_servers.kit import EPISODE_META_KEY, DomainServer, get_domain, result_error


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None,
               episode: str | None = None) -> CallToolResult:
    meta = {EPISODE_META_KEY: episode} if episode else None
    return await client.call_tool(tool, arguments or {}, meta=meta)


async def ok(client: Client, tool: str, arguments: dict[str, Any] | None = None,
             episode: str | None = None) -> dict[str, Any]:
    result = await call(client, tool, arguments, episode)
    assert not result.is_error, f"{tool} failed: {result.structured_content or result.content}"
    return result.structured_content


async def fails(client: Client, tool: str, arguments: dict[str, Any] | None, kind: str,
                episode: str | None = None) -> dict[str, Any]:
    result = await call(client, tool, arguments, episode)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.structured_content}"
    error = result_error(result)
    assert error["kind"] == kind, f"expected {kind}, got {error}"
    return error


async def digest(client: Client, episode: str | None = None) -> str:
    meta = {EPISODE_META_KEY: episode} if episode else None
    res = await client.read_resource("shiftbox://episode/digest", meta=meta)
    return json.loads(res.contents[0].text)["digest"]


async def assert_tools_list_matches_golden(client, golden) -> None:
    """Contract check: `tools/list` equals the committed golden file (tests/servers/test_every_domain.py).

    A deliberate change of a public contract is recorded with SHIFTBOX_UPDATE_GOLDEN=1.
    """
    import os
    from pathlib import Path

    golden = Path(golden)
    listed = await client.list_tools()
    current = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    if os.environ.get("SHIFTBOX_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert golden.exists(), f"{golden} missing; create it with SHIFTBOX_UPDATE_GOLDEN=1"
    expected = json.loads(golden.read_text())
    assert [t["name"] for t in current] == [t["name"] for t in expected]
    for now, then in zip(current, expected, strict=True):
        assert now == then, f"tools/list entry for {now['name']} changed (SHIFTBOX_UPDATE_GOLDEN=1 records a deliberate change)"


def fixture_snapshot(db, directory, *, domain: str, clock_start, tables=()):
    """A hand-written test snapshot: insert tuple rows (every column, in the table's order) table by table
    into `db` (a `new_database()`), write it, load it."""
    from shiftbox_servers.kit import Snapshot, write_snapshot

    for table, rows in tables:
        db[table].insert_all([list(db[table].columns_dict), *rows])
    write_snapshot(db, directory, domain=domain, snapshot_version="test", schema_version=1,
                   server_version="test", source="tests", clock_start=clock_start)
    return Snapshot.load(directory)


FOREIGN_HOST = "evil.example:80"
FOREIGN_ORIGIN = "http://evil.example"


def http_request(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """(status, body) of one plain HTTP request; error statuses are returned, not raised."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def assert_custom_routes_refuse_foreign_pages(base: str, episode_path: str) -> None:
    """DNS rebinding: `DELETE <episode_path>` and `GET /healthz` refuse a foreign Host (421) or Origin (403)
    the way the MCP endpoint does, and change nothing."""
    for method, path in (("DELETE", episode_path), ("GET", "/healthz")):
        status, body = http_request(base + path, method, {"Host": FOREIGN_HOST})
        assert status == 421, f"{method} {path} with Host {FOREIGN_HOST}: {status} {body!r}"
        status, body = http_request(base + path, method, {"Origin": FOREIGN_ORIGIN})
        assert status == 403, f"{method} {path} with Origin {FOREIGN_ORIGIN}: {status} {body!r}"


@dataclass(frozen=True)
class IsolationProbe:
    """A write in episode one while episode two reads, and what the read shows before and after the write
    (each domain's `ISOLATION`, tests/servers/<domain>/conftest.py; checked by tests/servers/test_every_domain.py)."""

    write: tuple[str, dict[str, Any]]
    read: tuple[str, dict[str, Any]]
    seen: Callable[[dict[str, Any]], Any]
    before: Any
    after: Any
    hidden: tuple[str, str] | None = None
    """(tool, id field of the write's output): looking the written row up from episode two finds nothing."""


def domain_fixtures(domain: str, client: str) -> tuple[Any, Any]:
    """A domain's own fixtures, for its tests/servers/<domain>/conftest.py: `<domain>_snapshot` (its hand-written
    snapshot) and `client` (an in-memory client of its server on that snapshot)."""

    @pytest.fixture(name=f"{domain}_snapshot")
    def snapshot(snapshot_of):
        return snapshot_of(domain)

    @pytest.fixture(name=client)
    async def connected(snapshot_of):
        async with Client(DomainServer(get_domain(domain), snapshot_of(domain)).mcp) as session:
            yield session

    return snapshot, connected
