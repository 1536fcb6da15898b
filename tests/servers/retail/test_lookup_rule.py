"""Retail side of the one rule for lookups in every domain (docs/servers.md, "Lookups and searches"): a lookup by id or by a
unique key (email, phone) that finds nothing is `not_found`; a search or a lookup by name returns a list —
empty when nothing matches, every match when several do (never only the first)."""

from __future__ import annotations

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer
from shiftbox_servers.retail import CLOCK_START as RETAIL_CLOCK
from shiftbox_servers.retail import DOMAIN as RETAIL
from shiftbox_servers.retail import new_database as new_retail_database
from tests.servers.helpers import fails, fixture_snapshot, ok
from tests.servers.retail import conftest as retail

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def retail_twins(tmp_path_factory):
    twin = ("ben_okafor_9009", "BEN", "okafor", "ben2@example.com", *retail.BEN_ADDRESS)
    tables = [(name, [*rows, twin] if name == "users" else rows) for name, rows in retail.TABLES]
    return fixture_snapshot(new_retail_database(), tmp_path_factory.mktemp("retail-twins"), domain="retail",
                            clock_start=RETAIL_CLOCK, tables=tables)


async def test_retail_name_lookup_returns_every_match(retail_twins):
    async with Client(DomainServer(RETAIL, retail_twins).mcp) as shop:
        res = await ok(shop, "find_user_id_by_name_zip", {"first_name": "Ben", "last_name": "Okafor", "zip": "83701"})
        assert res == {"user_ids": ["ben_okafor_2002", "ben_okafor_9009"]}


async def test_retail_name_lookup_without_match_is_an_empty_list(shop):
    res = await ok(shop, "find_user_id_by_name_zip", {"first_name": "Ben", "last_name": "Okafor", "zip": "00000"})
    assert res == {"user_ids": []}
    res = await ok(shop, "find_user_id_by_name_zip", {"first_name": "José", "last_name": "Núñez", "zip": "10001"})
    assert res == {"user_ids": ["jose_nunez_3003"]}


async def test_lookups_by_id_or_unique_key_stay_not_found(shop):
    await fails(shop, "find_user_id_by_email", {"email": "nobody@example.com"}, "not_found")
    await fails(shop, "get_user_details", {"user_id": "nobody_1"}, "not_found")
    # banking: tests/servers/banking/test_reference_gaps.py and test_tools.py
