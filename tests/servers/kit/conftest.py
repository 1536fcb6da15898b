"""Fixtures shared by the server-kit tests."""

from __future__ import annotations

import httpx
import pytest

from shiftbox_servers.kit import DomainServer, Snapshot, get_domain
from tests.servers.banking.conftest import write_fixture_snapshot


@pytest.fixture(scope="module")
def echo_snapshot(tmp_path_factory) -> Snapshot:
    """The echo domain's snapshot, built fresh for the module."""
    domain = get_domain("echo")
    directory = tmp_path_factory.mktemp("echo")
    domain.build_snapshot(directory)
    return Snapshot.load(directory)


@pytest.fixture
async def banking_http(tmp_path):
    """A banking server on the fixture snapshot, its HTTP app (session manager running) and a client to it."""
    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    app = server.http_app()
    async with server.mcp.session_manager.run():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000") as c:
            yield server, app, c
