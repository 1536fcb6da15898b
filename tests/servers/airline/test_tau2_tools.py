"""`--toolset tau2` and `--toolset agentchangebench` for airline: tau2's airline tools (names, arguments, result
shapes, error messages, matching, new ids) over a snapshot imported from a small tau2-format db.json.

Expected results are written by hand from tau2's airline tools (src/tau2/domains/airline/tools.py, its data
model: fields in declaration order, whole-dollar prices and payments, float balances, `status` null unless
cancelled); the deliberate differences are docs/servers.md's table rows.
"""

from __future__ import annotations

import json

import pytest
from mcp import Client

from shiftbox_servers.airline import DOMAIN, import_agentchangebench
from shiftbox_servers.kit import DomainServer, Snapshot, result_error

pytestmark = pytest.mark.anyio

CABINS = ("basic_economy", "economy", "business")


def _available(seats, prices) -> dict:
    return {"status": "available", "available_seats": dict(zip(CABINS, seats, strict=True)),
            "prices": dict(zip(CABINS, prices, strict=True))}


def _flight(number, origin, destination, departs, arrives, dates) -> dict:
    return {"flight_number": number, "origin": origin, "destination": destination,
            "scheduled_departure_time_est": departs, "scheduled_arrival_time_est": arrives, "dates": dates}


ANA_CARD = {"source": "credit_card", "id": "credit_card_1000001", "brand": "visa", "last_four": "1111"}
ABC123 = {
    "reservation_id": "ABC123", "user_id": "ana_lopez_1001", "origin": "JFK", "destination": "LAX",
    "flight_type": "one_way", "cabin": "economy",
    "flights": [{"flight_number": "HAT001", "origin": "JFK", "destination": "LAX", "date": "2024-05-20", "price": 200}],
    "passengers": [{"first_name": "Ana", "last_name": "Lopez", "dob": "1990-01-02"}],
    "payment_history": [{"payment_id": "credit_card_1000001", "amount": 230}],
    "created_at": "2024-05-02T10:00:00", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "yes",
}
DB = {
    "flights": {
        "HAT001": _flight("HAT001", "JFK", "LAX", "08:00:00", "11:30:00", {
            "2024-05-10": {"status": "landed", "actual_departure_time_est": "2024-05-10T08:05:00",
                           "actual_arrival_time_est": "2024-05-10T11:20:00"},
            "2024-05-20": _available((5, 3, 2), (100, 200, 500)),
            "2024-05-21": _available((4, 4, 4), (90, 180, 450)),
            "2024-05-22": {"status": "cancelled"}}),
        "HAT002": _flight("HAT002", "LAX", "JFK", "13:00:00", "21:00:00",
                          {"2024-05-25": _available((5, 5, 5), (110, 210, 520))}),
        "HAT003": _flight("HAT003", "JFK", "ORD", "21:00:00", "01:30:00+1", {
            "2024-05-05": _available((9, 9, 9), (60, 120, 300)), "2024-05-20": _available((9, 9, 9), (60, 120, 300))}),
        "HAT004": _flight("HAT004", "ORD", "LAX", "07:00:00", "09:30:00", {
            "2024-05-06": _available((9, 9, 9), (50, 100, 250)), "2024-05-21": _available((8, 8, 8), (55, 105, 255))}),
    },
    "users": {
        "ana_lopez_1001": {
            "user_id": "ana_lopez_1001", "name": {"first_name": "Ana", "last_name": "Lopez"},
            "address": {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "country": "USA",
                        "state": "TX", "zip": "73301"},
            "email": "ana@example.com", "dob": "1990-01-02",
            "payment_methods": {
                "credit_card_1000001": ANA_CARD,
                "gift_card_1000002": {"source": "gift_card", "id": "gift_card_1000002", "amount": 100},
                "certificate_1000003": {"source": "certificate", "id": "certificate_1000003", "amount": 250},
            },
            "saved_passengers": [{"first_name": "Ben", "last_name": "Lopez", "dob": "2010-02-02"}],
            "membership": "gold", "reservations": ["ABC123"],
        },
        "ben_okafor_2002": {
            "user_id": "ben_okafor_2002", "name": {"first_name": "Ben", "last_name": "Okafor"},
            "address": {"address1": "2 Oak Rd", "address2": None, "city": "Boise", "country": "USA", "state": "ID",
                        "zip": "83701"},
            "email": "ben@example.com", "dob": "1985-05-05",
            "payment_methods": {"credit_card_2000001": {"source": "credit_card", "id": "credit_card_2000001",
                                                        "brand": "mastercard", "last_four": "2222"}},
            "saved_passengers": [], "membership": "regular", "reservations": ["DEF456"],
        },
    },
    "reservations": {
        "ABC123": ABC123,
        "DEF456": {
            "reservation_id": "DEF456", "user_id": "ben_okafor_2002", "origin": "JFK", "destination": "JFK",
            "flight_type": "round_trip", "cabin": "basic_economy",
            "flights": [{"flight_number": "HAT001", "origin": "JFK", "destination": "LAX", "date": "2024-05-21",
                         "price": 90},
                        {"flight_number": "HAT002", "origin": "LAX", "destination": "JFK", "date": "2024-05-25",
                         "price": 110}],
            "passengers": [{"first_name": "Ben", "last_name": "Okafor", "dob": "1985-05-05"},
                           {"first_name": "Cy", "last_name": "Okafor", "dob": "2015-03-03"}],
            "payment_history": [{"payment_id": "credit_card_2000001", "amount": 400}],
            "created_at": "2024-05-03T10:00:00", "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
        },
    },
}
TAU2_AIRPORTS = ["SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX", "IAH", "LAS", "MCO",
                 "EWR", "CLT", "MSP", "DTW", "PHL", "LGA"]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Snapshot:
    source = tmp_path_factory.mktemp("tau2-airline") / "db.json"
    source.write_text(json.dumps(DB))
    directory = tmp_path_factory.mktemp("tau2-airline-snapshot")
    import_agentchangebench(source, directory)
    return Snapshot.load(directory)


@pytest.fixture(params=["tau2", "agentchangebench"])
async def airline(request, snapshot):
    async with Client(DomainServer(DOMAIN, snapshot, toolset=request.param).mcp) as client:
        client.toolset = request.param
        yield client


@pytest.fixture
async def tau2(snapshot):
    async with Client(DomainServer(DOMAIN, snapshot, toolset="tau2").mcp) as client:
        yield client


async def answer(client, tool: str, **arguments) -> str:
    """tau2's tool message: the text of a successful call."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    return result.content[0].text


async def value(client, tool: str, **arguments):
    return json.loads(await answer(client, tool, **arguments))


async def error(client, tool: str, **arguments) -> tuple[str, str]:
    """(message, kind) of a failed call."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} unexpectedly succeeded: {result.content}"
    failure = result_error(result)
    return failure["message"], failure["kind"]


def _direct(number, origin, destination, departs, arrives, date, seats, prices) -> dict:
    return {"flight_number": number, "origin": origin, "destination": destination, "status": "available",
            "scheduled_departure_time_est": departs, "scheduled_arrival_time_est": arrives, "date": date,
            "available_seats": dict(zip(CABINS, seats, strict=True)), "prices": dict(zip(CABINS, prices, strict=True))}


# -- reads ----------------------------------------------------------------------------------------------


async def test_reservation_is_dumped_as_tau2_dumps_it(airline):
    # fields in tau2's declaration order, whole-dollar ints, status null while active, default JSON separators
    assert await answer(airline, "get_reservation_details", reservation_id="ABC123") == json.dumps(
        {**ABC123, "status": None})
    result = await airline.call_tool("get_reservation_details", {"reservation_id": "ABC123"})
    assert result.structured_content == {**ABC123, "status": None}
    assert await error(airline, "get_reservation_details", reservation_id="abc123") == (
        "Reservation abc123 not found", "not_found")  # ids match exactly


async def test_user_is_dumped_as_tau2_dumps_it(airline):
    ana = DB["users"]["ana_lopez_1001"]
    expected = {**ana, "payment_methods": {
        "credit_card_1000001": ANA_CARD,
        "gift_card_1000002": {"source": "gift_card", "id": "gift_card_1000002", "amount": 100.0},
        "certificate_1000003": {"source": "certificate", "id": "certificate_1000003", "amount": 250.0}}}
    assert await answer(airline, "get_user_details", user_id="ana_lopez_1001") == json.dumps(expected)
    ben = await value(airline, "get_user_details", user_id="ben_okafor_2002")
    assert ben["address"]["address2"] is None and ben["reservations"] == ["DEF456"]
    assert await error(airline, "get_user_details", user_id="Ana_Lopez_1001") == (
        "User Ana_Lopez_1001 not found", "not_found")


async def test_airports_are_tau2s_list(airline):
    result = await airline.call_tool("list_all_airports", {})
    airports = json.loads(result.content[0].text)
    assert [a["iata"] for a in airports] == TAU2_AIRPORTS
    assert airports[0] == {"iata": "SFO", "city": "San Francisco"} and airports[-1] == {"iata": "LGA",
                                                                                          "city": "LaGuardia"}
    assert result.structured_content == {"result": airports}  # structured content is an object


async def test_direct_search_lists_bookable_flights_without_a_date(airline):
    found = await value(airline, "search_direct_flight", origin="JFK", destination="LAX", date="2024-05-20")
    assert found == [_direct("HAT001", "JFK", "LAX", "08:00:00", "11:30:00", None, (5, 3, 2), (100, 200, 500))]
    # a cancelled or landed date is not bookable; codes match exactly
    assert await value(airline, "search_direct_flight", origin="JFK", destination="LAX", date="2024-05-22") == []
    assert await value(airline, "search_direct_flight", origin="jfk", destination="LAX", date="2024-05-20") == []


async def test_onestop_search_returns_pairs_with_tau2s_next_day(airline):
    found = await value(airline, "search_onestop_flight", origin="JFK", destination="LAX", date="2024-05-20")
    # HAT003 lands at 01:30 the next day; HAT004 leaves ORD on 2024-05-21 at 07:00 ("07:00:00" >= "01:30:00+1")
    assert found == [[_direct("HAT003", "JFK", "ORD", "21:00:00", "01:30:00+1", "2024-05-20", (9, 9, 9), (60, 120, 300)),
                      _direct("HAT004", "ORD", "LAX", "07:00:00", "09:30:00", "2024-05-21", (8, 8, 8), (55, 105, 255))]]
    # tau2's next day is "2024-05-" + the day plus one, unpadded: after 2024-05-05 it looks for "2024-05-6"
    assert await value(airline, "search_onestop_flight", origin="JFK", destination="LAX", date="2024-05-05") == []


async def test_flight_status_is_the_bare_status(airline):
    result = await airline.call_tool("get_flight_status", {"flight_number": "HAT001", "date": "2024-05-10"})
    assert result.content[0].text == "landed" and result.structured_content is None
    assert await answer(airline, "get_flight_status", flight_number="HAT001", date="2024-05-20") == "available"
    assert await error(airline, "get_flight_status", flight_number="HAT999", date="2024-05-10") == (
        "Flight HAT999 not found", "not_found")
    assert await error(airline, "get_flight_status", flight_number="HAT001", date="2024-05-11") == (
        "Flight HAT001 not found on date 2024-05-11", "not_found")


async def test_calculate_and_transfer_answer_text(airline):
    assert await answer(airline, "calculate", expression="2 * (3 + 4) / 3") == "4.67"
    assert await error(airline, "calculate", expression="a + 1") == ("Invalid characters in expression",
                                                                    "invalid_arguments")
    assert await answer(airline, "transfer_to_human_agents", summary="wants a human") == "Transfer successful"


# -- booking ------------------------------------------------------------------------------------------------

TRIP = {"user_id": "ana_lopez_1001", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
        "cabin": "economy", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Ana", "last_name": "Lopez", "dob": "1990-01-02"},
                       {"first_name": "Ben", "last_name": "Lopez", "dob": "2010-02-02"}],
        "total_baggages": 2, "nonfree_baggages": 1, "insurance": "no"}
"""2 passengers x 200 (economy on HAT001, 2024-05-20) + 1 non-free bag x 50 = 450."""


async def test_booking_gets_tau2s_ids_clock_and_payments(airline):
    payments = [{"payment_id": "gift_card_1000002", "amount": 100}, {"payment_id": "credit_card_1000001",
                                                                    "amount": 350}]
    booked = await value(airline, "book_reservation", **TRIP, payment_methods=payments)
    assert booked == {
        "reservation_id": "HATHAT", "user_id": "ana_lopez_1001", "origin": "JFK", "destination": "LAX",
        "flight_type": "one_way", "cabin": "economy",
        "flights": [{"flight_number": "HAT001", "origin": "JFK", "destination": "LAX", "date": "2024-05-20",
                     "price": 200}],
        "passengers": TRIP["passengers"], "payment_history": payments, "created_at": "2024-05-15T15:00:00",
        "total_baggages": 2, "nonfree_baggages": 1, "insurance": "no", "status": None}
    ana = await value(airline, "get_user_details", user_id="ana_lopez_1001")
    assert ana["reservations"] == ["ABC123", "HATHAT"]
    assert ana["payment_methods"]["gift_card_1000002"]["amount"] == 0.0  # 100 - 100
    seats = await value(airline, "search_direct_flight", origin="JFK", destination="LAX", date="2024-05-20")
    assert seats[0]["available_seats"] == {"basic_economy": 5, "economy": 1, "business": 2}  # 3 - 2

    # 180 (economy on 2024-05-21) + 30 insurance = 210, by the certificate, which leaves the profile
    trip = {**TRIP, "flights": [{"flight_number": "HAT001", "date": "2024-05-21"}], "passengers": TRIP["passengers"][:1],
            "total_baggages": 0, "nonfree_baggages": 0, "insurance": "yes"}
    second = await value(airline, "book_reservation", **trip,
                         payment_methods=[{"payment_id": "certificate_1000003", "amount": 210}])
    assert second["reservation_id"] == "HATHAU"
    ana = await value(airline, "get_user_details", user_id="ana_lopez_1001")
    assert list(ana["payment_methods"]) == ["credit_card_1000001", "gift_card_1000002"]
    card = [{"payment_id": "credit_card_1000001", "amount": 210}]
    assert (await value(airline, "book_reservation", **trip, payment_methods=card))["reservation_id"] == "HATHAV"
    assert await error(airline, "book_reservation", **trip, payment_methods=card) == ("Too many reservations",
                                                                                    "precondition_failed")


async def test_booking_errors_are_tau2s_in_its_order(airline):
    card = [{"payment_id": "credit_card_1000001", "amount": 450}]
    cases = [
        ({"user_id": "nobody"}, "User nobody not found", "not_found"),
        ({"flights": [{"flight_number": "HAT009", "date": "2024-05-20"}]}, "Flight HAT009 not found", "not_found"),
        ({"flights": [{"flight_number": "HAT001", "date": "2024-05-23"}]},
         "Flight HAT001 not found on date 2024-05-23", "not_found"),
        ({"flights": [{"flight_number": "HAT001", "date": "2024-05-22"}]},
         "Flight HAT001 not available on date 2024-05-22", "precondition_failed"),
        ({"cabin": "business", "passengers": TRIP["passengers"] * 2}, "Not enough seats on flight HAT001",
         "precondition_failed"),
        ({"payment_methods": [{"payment_id": "credit_card_2000001", "amount": 450}]},  # Ben's card
         "Payment method credit_card_2000001 not found", "not_found"),
        ({"payment_methods": [{"payment_id": "gift_card_1000002", "amount": 150},
                              {"payment_id": "credit_card_1000001", "amount": 300}]},
         "Not enough balance in payment method gift_card_1000002", "precondition_failed"),
        ({"payment_methods": [{"payment_id": "credit_card_1000001", "amount": 400}]},
         "Payment amount does not add up, total price is 450, but paid 400", "precondition_failed"),
        ({"insurance": "yes"}, "Payment amount does not add up, total price is 510, but paid 450",
         "precondition_failed"),
    ]
    for change, message, kind in cases:
        assert await error(airline, "book_reservation", **{**TRIP, "payment_methods": card, **change}) == (
            message, kind), change
    # nothing was written
    assert (await value(airline, "get_user_details", user_id="ana_lopez_1001"))["reservations"] == ["ABC123"]


async def test_booking_refuses_what_tau2_would_store_corrupted(airline):
    # deliberate differences: a gift card listed twice is checked for both amounts (tau2: each alone, then
    # debits both, leaving -20), an unknown airport, impossible bag counts, negative amounts
    twice = [{"payment_id": "gift_card_1000002", "amount": 60}, {"payment_id": "gift_card_1000002", "amount": 60},
             {"payment_id": "credit_card_1000001", "amount": 330}]
    assert await error(airline, "book_reservation", **TRIP, payment_methods=twice) == (
        "Not enough balance in payment method gift_card_1000002", "precondition_failed")
    card = [{"payment_id": "credit_card_1000001", "amount": 450}]
    assert (await error(airline, "book_reservation", **{**TRIP, "origin": "XXX"}, payment_methods=card))[1] == "not_found"
    bags = {**TRIP, "total_baggages": 0, "nonfree_baggages": 1}
    assert (await error(airline, "book_reservation", **bags, payment_methods=card))[1] == "invalid_arguments"
    negative = [{"payment_id": "gift_card_1000002", "amount": -50}, {"payment_id": "credit_card_1000001", "amount": 500}]
    assert (await error(airline, "book_reservation", **TRIP, payment_methods=negative))[1] == "invalid_arguments"
    twice_a_flight = {**TRIP, "cabin": "business", "passengers": TRIP["passengers"][:1],
                      "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}] * 3, "nonfree_baggages": 0}
    assert await error(airline, "book_reservation", **twice_a_flight,
                       payment_methods=[{"payment_id": "credit_card_1000001", "amount": 1500}]) == (
        "Not enough seats on flight HAT001", "precondition_failed")  # 2 business seats, taken 3 times


# -- cancelling and changing --------------------------------------------------------------------------------


async def test_cancelling_records_refunds_only_and_only_once(airline):
    cancelled = await value(airline, "cancel_reservation", reservation_id="ABC123")
    assert cancelled == {**ABC123, "payment_history": [{"payment_id": "credit_card_1000001", "amount": 230},
                                                       {"payment_id": "credit_card_1000001", "amount": -230}],
                         "status": "cancelled"}
    # tau2 would append another refund; shiftbox changes nothing (a deliberate difference)
    assert await value(airline, "cancel_reservation", reservation_id="ABC123") == cancelled
    # a gift card payment is recorded as refunded, not credited, and the seats stay taken (tau2)
    await answer(airline, "book_reservation", **TRIP, payment_methods=[
        {"payment_id": "gift_card_1000002", "amount": 100}, {"payment_id": "credit_card_1000001", "amount": 350}])
    await answer(airline, "cancel_reservation", reservation_id="HATHAT")
    ana = await value(airline, "get_user_details", user_id="ana_lopez_1001")
    assert ana["payment_methods"]["gift_card_1000002"]["amount"] == 0.0
    seats = await value(airline, "search_direct_flight", origin="JFK", destination="LAX", date="2024-05-20")
    assert seats[0]["available_seats"]["economy"] == 1
    assert await error(airline, "cancel_reservation", reservation_id="NOPE00") == ("Reservation NOPE00 not found",
                                                                                 "not_found")


async def test_bags_are_charged_for_new_nonfree_bags(airline):
    changed = await value(airline, "update_reservation_baggages", reservation_id="ABC123", total_baggages=3,
                          nonfree_baggages=2, payment_id="credit_card_1000001")
    assert (changed["total_baggages"], changed["nonfree_baggages"]) == (3, 2)
    assert changed["payment_history"] == [{"payment_id": "credit_card_1000001", "amount": 230},
                                          {"payment_id": "credit_card_1000001", "amount": 100}]  # 2 x 50
    # no new non-free bag: no payment entry, yet the method is still checked
    same = await value(airline, "update_reservation_baggages", reservation_id="ABC123", total_baggages=4,
                       nonfree_baggages=2, payment_id="credit_card_1000001")
    assert same["payment_history"] == changed["payment_history"] and same["total_baggages"] == 4
    assert await error(airline, "update_reservation_baggages", reservation_id="ABC123", total_baggages=4,
                       nonfree_baggages=2, payment_id="certificate_1000003") == (
        "Certificate cannot be used to update reservation", "precondition_failed")
    assert await error(airline, "update_reservation_baggages", reservation_id="ABC123", total_baggages=5,
                       nonfree_baggages=5, payment_id="gift_card_1000002") == (
        "Gift card balance is not enough", "precondition_failed")  # 3 x 50 > 100
    # deliberate difference: tau2 stores more non-free bags than bags
    assert (await error(airline, "update_reservation_baggages", reservation_id="ABC123", total_baggages=1,
                        nonfree_baggages=2, payment_id="credit_card_1000001"))[1] == "invalid_arguments"


async def test_an_unknown_payment_method_is_named_by_agentchangebench_only(airline):
    expected = ("Payment method not found" if airline.toolset == "tau2"
                else "Payment method credit_card_2000001 not found")
    assert await error(airline, "update_reservation_baggages", reservation_id="ABC123", total_baggages=1,
                       nonfree_baggages=0, payment_id="credit_card_2000001") == (expected, "not_found")
    assert await error(airline, "update_reservation_flights", reservation_id="ABC123", cabin="economy",
                       flights=[{"flight_number": "HAT001", "date": "2024-05-20"}],
                       payment_id="credit_card_2000001") == (expected, "not_found")
    # booking says the id in both (tau2's own message)
    assert (await error(airline, "book_reservation", **TRIP, payment_methods=[
        {"payment_id": "credit_card_2000001", "amount": 450}]))[0] == "Payment method credit_card_2000001 not found"


async def test_flight_changes_reprice_and_pay_the_difference(airline):
    # kept flight, same cabin: its price paid stays, nothing to pay
    kept = await value(airline, "update_reservation_flights", reservation_id="ABC123", cabin="economy",
                       flights=[{"flight_number": "HAT001", "date": "2024-05-20"}], payment_id="credit_card_1000001")
    assert kept == {**ABC123, "status": None}
    # another date: 180 - 200 = -20, refunded to (credited on) the gift card
    moved = await value(airline, "update_reservation_flights", reservation_id="ABC123", cabin="economy",
                        flights=[{"flight_number": "HAT001", "date": "2024-05-21"}], payment_id="gift_card_1000002")
    assert moved["flights"] == [{"flight_number": "HAT001", "origin": "JFK", "destination": "LAX",
                                 "date": "2024-05-21", "price": 180}]
    assert moved["payment_history"][-1] == {"payment_id": "gift_card_1000002", "amount": -20}
    ana = await value(airline, "get_user_details", user_id="ana_lopez_1001")
    assert ana["payment_methods"]["gift_card_1000002"]["amount"] == 120.0
    # a cabin change reprices the kept flight: 450 - 180 = 270 > 120 on the gift card
    assert await error(airline, "update_reservation_flights", reservation_id="ABC123", cabin="business",
                       flights=[{"flight_number": "HAT001", "date": "2024-05-21"}], payment_id="gift_card_1000002") == (
        "Gift card balance is not enough", "precondition_failed")
    business = await value(airline, "update_reservation_flights", reservation_id="ABC123", cabin="business",
                           flights=[{"flight_number": "HAT001", "date": "2024-05-21"}], payment_id="credit_card_1000001")
    assert business["cabin"] == "business" and business["payment_history"][-1]["amount"] == 270
    # tau2 takes no seats on a change
    seats = await value(airline, "search_direct_flight", origin="JFK", destination="LAX", date="2024-05-21")
    assert seats[0]["available_seats"] == {"basic_economy": 4, "economy": 4, "business": 4}
    for flight, message, kind in [
        ({"flight_number": "HAT009", "date": "2024-05-20"}, "Flight HAT009 not found", "not_found"),
        ({"flight_number": "HAT001", "date": "2024-05-22"}, "Flight HAT001 not available on date 2024-05-22",
         "precondition_failed")]:
        assert await error(airline, "update_reservation_flights", reservation_id="ABC123", cabin="economy",
                           flights=[flight], payment_id="credit_card_1000001") == (message, kind)


async def test_passengers_are_replaced_but_not_counted_differently(airline):
    new = [{"first_name": "Ann", "last_name": "Lopez", "dob": "1990-01-02"}]
    assert (await value(airline, "update_reservation_passengers", reservation_id="ABC123",
                        passengers=new))["passengers"] == new
    assert await error(airline, "update_reservation_passengers", reservation_id="ABC123", passengers=new * 2) == (
        "Number of passengers does not match", "precondition_failed")


async def test_certificates_get_tau2s_fixed_ids(airline):
    assert await answer(airline, "send_certificate", user_id="ana_lopez_1001", amount=150) == (
        "Certificate certificate_3221322 added to user ana_lopez_1001 with amount 150.")
    ana = await value(airline, "get_user_details", user_id="ana_lopez_1001")
    assert list(ana["payment_methods"])[-1] == "certificate_3221322"
    assert ana["payment_methods"]["certificate_3221322"] == {"source": "certificate", "id": "certificate_3221322",
                                                              "amount": 150.0}
    # tau2 would give Ben certificate_3221322 too (ids per profile); here ids are global (a deliberate difference)
    assert await answer(airline, "send_certificate", user_id="ben_okafor_2002", amount=50) == (
        "Certificate certificate_3221323 added to user ben_okafor_2002 with amount 50.")
    await answer(airline, "send_certificate", user_id="ana_lopez_1001", amount=50)
    assert await error(airline, "send_certificate", user_id="ana_lopez_1001", amount=50) == (
        "Too many certificates", "precondition_failed")
    assert await error(airline, "send_certificate", user_id="nobody", amount=50) == ("User nobody not found",
                                                                                     "not_found")

