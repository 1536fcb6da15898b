"""Each domain's hand-written snapshot (its data: `<domain>/conftest.py`), a server over it and an
in-memory client, for every server test; `every_domain` parametrizes a test over the three domains."""

from __future__ import annotations

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer, Snapshot, get_domain
from tests.servers.airline import conftest as airline_data
from tests.servers.banking import conftest as banking_data
from tests.servers.retail import conftest as retail_data

DOMAINS = ("banking", "retail", "airline")
CLIENT_FIXTURE = {"banking": "bank", "retail": "shop", "airline": "air"}
"""Domain -> the fixture holding an in-memory client of its server on the hand-written snapshot."""


@pytest.fixture(scope="session")
def banking_snapshot(tmp_path_factory) -> Snapshot:
    return banking_data.write_fixture_snapshot(tmp_path_factory.mktemp("banking-fixture"))


@pytest.fixture(scope="session")
def retail_snapshot(tmp_path_factory) -> Snapshot:
    return retail_data.write_fixture_snapshot(tmp_path_factory.mktemp("retail-fixture"))


@pytest.fixture(scope="session")
def airline_snapshot(tmp_path_factory) -> Snapshot:
    return airline_data.write_fixture_snapshot(tmp_path_factory.mktemp("airline-fixture"))


@pytest.fixture
def banking_server(banking_snapshot) -> DomainServer:
    return DomainServer(get_domain("banking"), banking_snapshot)


@pytest.fixture
def retail_server(retail_snapshot) -> DomainServer:
    return DomainServer(get_domain("retail"), retail_snapshot)


@pytest.fixture
def airline_server(airline_snapshot) -> DomainServer:
    return DomainServer(get_domain("airline"), airline_snapshot)


@pytest.fixture
async def bank(banking_server):
    async with Client(banking_server.mcp) as client:
        yield client


@pytest.fixture
async def shop(retail_server):
    async with Client(retail_server.mcp) as client:
        yield client


@pytest.fixture
async def air(airline_server):
    async with Client(airline_server.mcp) as client:
        yield client


@pytest.fixture(params=DOMAINS)
def every_domain(request) -> str:
    """Each domain's name in turn."""
    return request.param


@pytest.fixture
def domain_snapshot(every_domain, request) -> Snapshot:
    """The hand-written snapshot of `every_domain`."""
    return request.getfixturevalue(f"{every_domain}_snapshot")


@pytest.fixture
def domain_client(every_domain, request) -> Client:
    """An in-memory client of `every_domain`'s server on its hand-written snapshot."""
    return request.getfixturevalue(CLIENT_FIXTURE[every_domain])
