"""Each domain's hand-written snapshot (its data and what its tests know of it: `<domain>/conftest.py`), and
`every_domain`, which parametrizes a test over every installed domain with tasks (`task_domains()`): a new
domain is tested once it is installed and has its test folder, with no list edited."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer, Snapshot, get_domain, task_domains


def domain_test_data(domain: str) -> ModuleType:
    """tests/servers/<domain>/conftest.py: the domain's hand-written snapshot and the facts its tests check."""
    try:
        return importlib.import_module(f"tests.servers.{domain}.conftest")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"tests.servers.{domain}", f"tests.servers.{domain}.conftest"):
            raise
        pytest.fail(f"domain {domain!r} has no tests/servers/{domain}/conftest.py; write its hand-written snapshot "
                    "(write_fixture_snapshot) and test facts there (docs/adding-a-domain.md)")


@pytest.fixture(scope="session")
def snapshot_of(tmp_path_factory) -> Callable[[str], Snapshot]:
    """Domain -> its hand-written snapshot, written once a session."""
    written: dict[str, Snapshot] = {}

    def snapshot(domain: str) -> Snapshot:
        if domain not in written:
            directory = tmp_path_factory.mktemp(f"{domain}-fixture")
            written[domain] = domain_test_data(domain).write_fixture_snapshot(directory)
        return written[domain]

    return snapshot


@pytest.fixture(params=task_domains())
def every_domain(request) -> str:
    """Each installed domain with tasks, in turn."""
    return request.param


@pytest.fixture
def domain_snapshot(every_domain, snapshot_of) -> Snapshot:
    """The hand-written snapshot of `every_domain`."""
    return snapshot_of(every_domain)


@pytest.fixture
async def domain_client(every_domain, domain_snapshot):
    """An in-memory client of `every_domain`'s server on its hand-written snapshot."""
    async with Client(DomainServer(get_domain(every_domain), domain_snapshot).mcp) as client:
        yield client
