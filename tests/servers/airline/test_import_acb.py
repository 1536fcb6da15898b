"""Importing a tau2 / AgentChangeBench airline db.json (users, flights with per-date status, seats and prices,
reservations) as a snapshot, and serving it with shiftbox's airline tools.

The full file is not in ../shared; the tests build a small one in tau2's format (its data model:
src/tau2/domains/airline/data_model.py in tau2-bench).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox_servers.airline import DOMAIN, import_agentchangebench
from shiftbox_servers.kit import DomainServer, Snapshot
from tests.servers.helpers import fails, ok

runner = CliRunner()


def _available(seats: tuple[int, int, int], prices: tuple[int, int, int]) -> dict:
    cabins = ("basic_economy", "economy", "business")
    return {"status": "available", "available_seats": dict(zip(cabins, seats, strict=True)),
            "prices": dict(zip(cabins, prices, strict=True))}


DB = {
    "flights": {
        "HAT001": {
            "flight_number": "HAT001", "origin": "JFK", "destination": "LAX",
            "scheduled_departure_time_est": "08:00:00", "scheduled_arrival_time_est": "11:30:00",
            "dates": {
                "2024-05-10": {"status": "landed", "actual_departure_time_est": "2024-05-10T08:05:00",
                               "actual_arrival_time_est": "2024-05-10T11:20:00"},
                "2024-05-15": {"status": "flying", "actual_departure_time_est": "2024-05-15T08:02:00",
                               "estimated_arrival_time_est": "2024-05-15T11:31:00"},
                "2024-05-16": {"status": "on time", "estimated_departure_time_est": "2024-05-16T08:00:00",
                               "estimated_arrival_time_est": "2024-05-16T11:30:00"},
                "2024-05-17": {"status": "delayed", "estimated_departure_time_est": "2024-05-17T10:00:00",
                               "estimated_arrival_time_est": "2024-05-17T13:30:00"},
                "2024-05-20": _available((5, 3, 2), (100, 200, 500)),
                "2024-05-22": {"status": "cancelled"},
            },
        },
        "HAT002": {
            "flight_number": "HAT002", "origin": "LAX", "destination": "JFK",
            "scheduled_departure_time_est": "13:00:00", "scheduled_arrival_time_est": "21:00:00",
            "dates": {"2024-05-25": _available((5, 5, 5), (110, 210, 520))},
        },
        "HAT003": {
            "flight_number": "HAT003", "origin": "JFK", "destination": "ORD",
            "scheduled_departure_time_est": "21:00:00", "scheduled_arrival_time_est": "01:30:00+1",
            "dates": {"2024-05-20": _available((9, 9, 9), (60, 120, 300))},
        },
    },
    "users": {
        "ana_lopez_1001": {
            "user_id": "ana_lopez_1001", "name": {"first_name": "Ana", "last_name": "Lopez"},
            "address": {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "country": "USA",
                        "state": "TX", "zip": "73301"},
            "email": "ana@example.com", "dob": "1990-01-02",
            "payment_methods": {
                "credit_card_1000001": {"source": "credit_card", "id": "credit_card_1000001", "brand": "visa",
                                        "last_four": "1111"},
                "gift_card_1000002": {"source": "gift_card", "id": "gift_card_1000002", "amount": 100},
                "certificate_1000003": {"source": "certificate", "id": "certificate_1000003", "amount": 250.0},
            },
            "saved_passengers": [{"first_name": "Ben", "last_name": "Lopez", "dob": "2010-02-02"}],
            "membership": "gold",
            "reservations": ["ABC123", "XYZ789"],
        },
        "ben_okafor_2002": {
            "user_id": "ben_okafor_2002", "name": {"first_name": "Ben", "last_name": "Okafor"},
            "address": {"address1": "2 Oak Rd", "address2": None, "city": "Boise", "country": "USA", "state": "ID",
                        "zip": "83701"},
            "email": "ben@example.com", "dob": "1985-05-05",
            "payment_methods": {"credit_card_2000001": {"source": "credit_card", "id": "credit_card_2000001",
                                                        "brand": "mastercard", "last_four": "2222"}},
            "saved_passengers": [], "membership": "regular", "reservations": [],
        },
    },
    "reservations": {
        "ABC123": {
            "reservation_id": "ABC123", "user_id": "ana_lopez_1001", "origin": "JFK", "destination": "LAX",
            "flight_type": "one_way", "cabin": "economy",
            "flights": [{"origin": "JFK", "destination": "LAX", "flight_number": "HAT001", "date": "2024-05-20",
                         "price": 200}],
            "passengers": [{"first_name": "Ana", "last_name": "Lopez", "dob": "1990-01-02"}],
            "payment_history": [{"payment_id": "credit_card_1000001", "amount": 230}],
            "created_at": "2024-05-02T10:00:00", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "yes",
        },
        "XYZ789": {  # paid partly with a certificate, which tau2 drops from the profile once it pays
            "reservation_id": "XYZ789", "user_id": "ana_lopez_1001", "origin": "JFK", "destination": "JFK",
            "flight_type": "round_trip", "cabin": "basic_economy",
            "flights": [{"origin": "JFK", "destination": "LAX", "flight_number": "HAT001", "date": "2024-05-10",
                         "price": 95},
                        {"origin": "LAX", "destination": "JFK", "flight_number": "HAT002", "date": "2024-05-25",
                         "price": 105}],
            "passengers": [{"first_name": "Ana", "last_name": "Lopez", "dob": "1990-01-02"}],
            "payment_history": [{"payment_id": "certificate_1000009", "amount": 150},
                                {"payment_id": "credit_card_1000001", "amount": 50},
                                {"payment_id": "credit_card_1000001", "amount": 0}],
            "created_at": "2024-05-01T09:30:00", "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
            "status": "cancelled",
        },
    },
}


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("airline-db") / "db.json"
    path.write_text(json.dumps(DB))
    return path


@pytest.fixture(scope="module")
def snapshot(source, tmp_path_factory) -> Snapshot:
    directory = tmp_path_factory.mktemp("airline-acb")
    import_agentchangebench(source, directory)
    return Snapshot.load(directory)


@pytest.fixture
async def airline(snapshot):
    async with Client(DomainServer(DOMAIN, snapshot).mcp) as client:
        yield client


def test_the_importer_is_registered_and_the_cli_uses_it(source, tmp_path):
    assert "agentchangebench" in DOMAIN.importers
    res = runner.invoke(app, ["snapshots", "import", "agentchangebench", "airline", str(source),
                              "--out", str(tmp_path / "snap")])
    assert res.exit_code == 0, res.output
    assert "airline/acb-v1" in res.output
    manifest = Snapshot.load(tmp_path / "snap").manifest
    assert (manifest.domain, manifest.snapshot_version, manifest.source) == (
        "airline", "acb-v1", "agentchangebench airline db.json")
    assert manifest.row_counts == {
        "airports": 20, "flights": 3, "flight_dates": 8, "users": 2, "saved_passengers": 1,
        "payment_methods": 5, "reservations": 2, "reservation_flights": 3, "reservation_passengers": 2,
        "payments": 3, "transfers": 0}


@pytest.mark.anyio
async def test_reservations_are_served_as_db_json_holds_them(airline):
    r = await ok(airline, "get_reservation_details", {"reservation_id": "ABC123"})
    expected = DB["reservations"]["ABC123"]
    assert r == {**expected, "status": "active", "payment_history": [{"payment_id": "credit_card_1000001",
                                                                       "amount": 230.0}]}
    cancelled = await ok(airline, "get_reservation_details", {"reservation_id": "XYZ789"})
    assert cancelled["status"] == "cancelled"
    assert cancelled["flights"] == DB["reservations"]["XYZ789"]["flights"]
    # the zero-amount entry carries no money and is dropped
    assert cancelled["payment_history"] == [{"payment_id": "certificate_1000009", "amount": 150.0},
                                            {"payment_id": "credit_card_1000001", "amount": 50.0}]


@pytest.mark.anyio
async def test_users_are_served_as_db_json_holds_them(airline):
    u = await ok(airline, "get_user_details", {"user_id": "ana_lopez_1001"})
    expected = DB["users"]["ana_lopez_1001"]
    for key in ("user_id", "name", "address", "email", "dob", "saved_passengers", "membership"):
        assert u[key] == expected[key], key
    assert u["reservations"] == ["XYZ789", "ABC123"]  # oldest booking first
    # the redeemed certificate that paid XYZ789 is not in the profile, as in tau2
    assert u["payment_methods"] == {
        "certificate_1000003": {"source": "certificate", "id": "certificate_1000003", "brand": None,
                                "last_four": None, "amount": 250.0},
        "credit_card_1000001": {"source": "credit_card", "id": "credit_card_1000001", "brand": "visa",
                                "last_four": "1111", "amount": None},
        "gift_card_1000002": {"source": "gift_card", "id": "gift_card_1000002", "brand": None, "last_four": None,
                              "amount": 100.0},
    }
    ben = await ok(airline, "get_user_details", {"user_id": "ben_okafor_2002"})
    assert ben["address"]["address2"] is None and ben["reservations"] == []


@pytest.mark.anyio
async def test_flights_are_served_with_their_per_date_status_seats_and_prices(airline):
    found = await ok(airline, "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})
    assert found["flights"] == [{
        "flight_number": "HAT001", "origin": "JFK", "destination": "LAX", "status": "available",
        "scheduled_departure_time_est": "08:00:00", "scheduled_arrival_time_est": "11:30:00", "date": "2024-05-20",
        "available_seats": {"basic_economy": 5, "economy": 3, "business": 2},
        "prices": {"basic_economy": 100.0, "economy": 200.0, "business": 500.0}}]
    statuses = {}
    for day, data in DB["flights"]["HAT001"]["dates"].items():
        s = await ok(airline, "get_flight_status", {"flight_number": "HAT001", "date": day})
        statuses[day] = s["status"]
        for key in ("estimated_departure_time_est", "estimated_arrival_time_est", "actual_departure_time_est",
                    "actual_arrival_time_est"):
            assert s[key] == data.get(key), (day, key)
    assert statuses == {day: d["status"] for day, d in DB["flights"]["HAT001"]["dates"].items()}
    late = await ok(airline, "search_onestop_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})
    assert late["itineraries"] == []  # HAT003 lands in ORD the next day and nothing leaves ORD
    airports = await ok(airline, "list_all_airports")
    assert len(airports["airports"]) == 20 and {"iata": "LGA", "city": "LaGuardia"} in airports["airports"]


@pytest.mark.anyio
async def test_the_imported_state_changes_like_native_state(airline):
    booked = await ok(airline, "book_reservation", {
        "user_id": "ben_okafor_2002", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
        "cabin": "business", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Ben", "last_name": "Okafor", "dob": "1985-05-05"}],
        "payment_methods": [{"payment_id": "credit_card_2000001", "amount": 500}], "total_baggages": 0,
        "nonfree_baggages": 0, "insurance": "no"})
    assert booked["payment_history"] == [{"payment_id": "credit_card_2000001", "amount": 500.0}]
    seats = await ok(airline, "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})
    assert seats["flights"][0]["available_seats"]["business"] == 1
    cancelled = await ok(airline, "cancel_reservation", {"reservation_id": "ABC123"})
    assert cancelled["payment_history"][-1] == {"payment_id": "credit_card_1000001", "amount": -230.0}
    # the flown segment of XYZ789 (landed on 2024-05-10) still blocks nothing: it is already cancelled
    again = await ok(airline, "cancel_reservation", {"reservation_id": "XYZ789"})
    assert again["payment_history"] == (await ok(airline, "get_reservation_details",
                                                 {"reservation_id": "XYZ789"}))["payment_history"]
    await fails(airline, "get_reservation_details", {"reservation_id": "NOPE00"}, "not_found")


def _broken(tmp_path: Path, change) -> str:
    data = copy.deepcopy(DB)
    change(data)
    path = tmp_path / "db.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError) as info:
        import_agentchangebench(path, tmp_path / "out")
    return str(info.value)


@pytest.mark.parametrize(("change", "named"), [
    (lambda d: d["flights"]["HAT001"].update(origin="XXX"), ["flights HAT001", "origin", "XXX"]),
    (lambda d: d["flights"]["HAT001"]["dates"]["2024-05-22"].update(prices={}), ["HAT001 on 2024-05-22", "prices"]),
    (lambda d: d["flights"]["HAT002"]["dates"].update({"2024-05-26": {"status": "boarding"}}),
     ["HAT002 on 2024-05-26", "status", "boarding"]),
    (lambda d: d["reservations"]["ABC123"]["flights"][0].update(date="2024-05-21"),
     ["reservations ABC123", "flights[0]", "HAT001", "2024-05-21"]),
    (lambda d: d["reservations"]["ABC123"]["flights"][0].update(destination="ORD"),
     ["reservations ABC123", "flights[0].destination"]),
    (lambda d: d["reservations"]["ABC123"]["payment_history"][0].update(payment_id="credit_card_2000001"),
     ["reservations ABC123", "payment_id", "credit_card_2000001"]),
    (lambda d: d["reservations"]["ABC123"].update(nonfree_baggages=3), ["reservations ABC123", "nonfree_baggages"]),
    (lambda d: d["users"]["ben_okafor_2002"].update(membership="platinum"),
     ["users ben_okafor_2002", "membership", "platinum"]),
    (lambda d: d["users"]["ana_lopez_1001"].update(reservations=["ABC123"]),
     ["users ana_lopez_1001", "reservations"]),
    (lambda d: d["reservations"]["ABC123"].update(seat="12A"), ["reservations ABC123", "seat"]),
])
def test_the_importer_names_the_bad_record_and_field(tmp_path, change, named):
    message = _broken(tmp_path, change)
    for part in named:
        assert part in message, (part, message)
