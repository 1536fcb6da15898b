"""The airline server over stdio and streamable HTTP: version and snapshot reported, episodes isolated."""

from __future__ import annotations

import json
import urllib.request

import anyio
import pytest
from mcp import Client

from shiftbox_servers.kit import http_server_process
from tests.servers.helpers import fails, ok

pytestmark = pytest.mark.anyio

BOOKING = {
    "user_id": "ben_okafor_2002", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
    "cabin": "basic_economy", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
    "passengers": [{"first_name": "Ben", "last_name": "Okafor", "dob": "1985-05-05"}],
    "payment_methods": [{"payment_id": "credit_card_2000001", "amount": 100}],
    "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
}


async def test_http_concurrent_episodes_are_isolated(airline_snapshot):
    async with http_server_process("airline", airline_snapshot.directory) as base:
        async with Client(f"{base}/episodes/one/mcp") as one, Client(f"{base}/episodes/two/mcp") as two:
            results = {}

            async def book_in_one():
                results["booked"] = await ok(one, "book_reservation", BOOKING)

            async def search_in_two():
                results["before"] = await ok(two, "search_direct_flight",
                                             {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(book_in_one)
                tg.start_soon(search_in_two)
            seats = lambda res: res["flights"][0]["available_seats"]["basic_economy"]  # noqa: E731
            after_two = await ok(two, "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})
            after_one = await ok(one, "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})
            assert (seats(after_one), seats(after_two), seats(results["before"])) == (4, 5, 5)
            await fails(two, "get_reservation_details", {"reservation_id": results["booked"]["reservation_id"]},
                        "not_found")
        health = json.loads(urllib.request.urlopen(base + "/healthz").read())
        assert health["episodes"] == 2 and health["sha256"] == airline_snapshot.manifest.sha256
