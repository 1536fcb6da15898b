"""The SDK would ignore unknown keys and coerce "5" to 5 or true to 1, also inside nested objects;
shiftbox's airline server rejects them, naming the field.

`CASES` are sent by tests/servers/test_every_domain.py (field named, state unchanged)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

FLIGHT = {"flight_number": "HAT001", "date": "2024-05-20"}
PAX = {"first_name": "Ana", "last_name": "Lopez", "dob": "1990-01-02"}
BEN = {"first_name": "Ben", "last_name": "Lopez", "dob": "2010-02-02"}
PAY = {"payment_id": "credit_card_1000001", "amount": 200}


def book(**overrides) -> dict:
    args = {"user_id": "ana_lopez_1001", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
            "cabin": "economy", "flights": [FLIGHT], "passengers": [PAX], "payment_methods": [PAY],
            "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}
    args.update(overrides)
    return args


CASES = [
    ("extra key", "get_user_details", {"user_id": "ana_lopez_1001", "verbose": True}, "verbose"),
    ("missing field", "get_reservation_details", {}, "reservation_id"),
    ("number for string", "get_user_details", {"user_id": 1001}, "user_id"),
    ("empty string", "get_user_details", {"user_id": ""}, "user_id"),
    ("reservation id shape", "get_reservation_details", {"reservation_id": "AAA1111"}, "reservation_id"),
    ("date format", "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "05/20/2024"}, "date"),
    ("impossible date", "get_flight_status", {"flight_number": "HAT001", "date": "2024-05-32"}, "date"),
    ("airport code shape", "search_onestop_flight", {"origin": "JFKX", "destination": "LAX", "date": "2024-05-20"},
     "origin"),
    ("flight number shape", "get_flight_status", {"flight_number": "001", "date": "2024-05-20"}, "flight_number"),
    ("unknown cabin", "book_reservation", book(cabin="first"), "cabin"),
    ("unknown trip type", "book_reservation", book(flight_type="multi_city"), "flight_type"),
    ("unknown insurance", "book_reservation", book(insurance=True), "insurance"),
    ("string for integer", "book_reservation", book(total_baggages="1"), "total_baggages"),
    ("true for integer", "book_reservation", book(nonfree_baggages=True), "nonfree_baggages"),
    ("negative bags", "update_reservation_baggages",
     {"reservation_id": "AAA111", "total_baggages": -1, "nonfree_baggages": 0, "payment_id": "credit_card_1000001"},
     "total_baggages"),
    ("object for list", "book_reservation", book(flights=FLIGHT), "flights"),
    ("empty list", "book_reservation", book(flights=[]), "flights"),
    ("string inside list", "book_reservation", book(flights=["HAT001"]), "flights.0"),
    ("extra key inside flight", "book_reservation", book(flights=[{**FLIGHT, "cabin": "economy"}]), "flights.0.cabin"),
    ("wrong type inside flight", "book_reservation", book(flights=[{**FLIGHT, "date": 20240520}]), "flights.0.date"),
    ("missing key inside flight", "update_reservation_flights",
     {"reservation_id": "AAA111", "cabin": "economy", "flights": [{"flight_number": "HAT001"}],
      "payment_id": "credit_card_1000001"}, "flights.0.date"),
    ("extra key inside passenger", "book_reservation", book(passengers=[{**PAX, "middle_name": "M"}]),
     "passengers.0.middle_name"),
    ("bad date inside passenger", "update_reservation_passengers",
     {"reservation_id": "AAA111", "passengers": [{**PAX, "dob": "02/01/1990"}, PAX]}, "passengers.0.dob"),
    ("six passengers", "book_reservation", book(passengers=[PAX] * 6), "passengers"),
    ("string amount inside payment", "book_reservation", book(payment_methods=[{**PAY, "amount": "200"}]),
     "payment_methods.0.amount"),
    ("three decimals inside payment", "book_reservation", book(payment_methods=[{**PAY, "amount": 200.005}]),
     "payment_methods.0.amount"),
    ("negative amount inside payment", "book_reservation", book(payment_methods=[{**PAY, "amount": -200}]),
     "payment_methods.0.amount"),
    ("extra key inside payment", "book_reservation", book(payment_methods=[{**PAY, "source": "credit_card"}]),
     "payment_methods.0.source"),
    ("string amount for certificate", "send_certificate", {"user_id": "ben_okafor_2002", "amount": "50"}, "amount"),
    ("list for string", "calculate", {"expression": ["1 + 1"]}, "expression"),
    ("whitespace-only last name", "update_reservation_passengers",
     {"reservation_id": "AAA111", "passengers": [{**PAX, "last_name": "   "}, BEN]}, "passengers.0.last_name"),
    ("whitespace-only first name in a booking", "book_reservation", book(passengers=[{**PAX, "first_name": "\t"}]),
     "passengers.0.first_name"),
    ("whitespace-only payment id", "book_reservation", book(payment_methods=[{**PAY, "payment_id": "  "}]),
     "payment_methods.0.payment_id"),
    ("whitespace-only user id", "get_user_details", {"user_id": "   "}, "user_id"),
    ("whitespace-only summary", "transfer_to_human_agents", {"summary": " "}, "summary"),
    ("lone surrogate inside a passenger", "update_reservation_passengers",
     {"reservation_id": "AAA111", "passengers": [{**PAX, "last_name": "Lo\ud800pez"}]}, "passengers.0.last_name"),
]


async def test_booking_schema_nests_its_three_objects(air):
    listed = await air.list_tools()
    book = next(t for t in listed.tools if t.name == "book_reservation")
    assert set(book.input_schema["$defs"]) == {"FlightInfo", "PassengerInfo", "PaymentInfo"}


async def test_annotations_match_behaviour(air):
    listed = {t.name: t.annotations for t in (await air.list_tools()).tools}
    read_only = {"calculate", "get_flight_status", "get_reservation_details", "get_user_details",
                 "list_all_airports", "search_direct_flight", "search_onestop_flight"}
    assert {name for name, a in listed.items() if a.read_only_hint} == read_only
    assert {name for name, a in listed.items() if a.destructive_hint} == {
        "cancel_reservation", "update_reservation_baggages", "update_reservation_flights",
        "update_reservation_passengers"}
    assert listed["cancel_reservation"].idempotent_hint is True
    assert listed["book_reservation"].idempotent_hint is False and listed["send_certificate"].idempotent_hint is False
