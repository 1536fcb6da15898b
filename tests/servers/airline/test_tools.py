"""Behaviour of every airline tool and every error path, through a real MCP client.

Money is checked against values computed by hand from the fixture (conftest.py).
"""

from __future__ import annotations

import json
import re

import pytest

from shiftbox_servers.kit import result_error
from tests.servers.helpers import call, digest, fails, ok

pytestmark = pytest.mark.anyio

ANA, BEN = "ana_lopez_1001", "ben_okafor_2002"
ANA_CARD, ANA_GIFT, ANA_CERT, ANA_CERT2 = ("credit_card_1000001", "gift_card_1000002", "certificate_1000003",
                                           "certificate_1000004")
BEN_CARD, BEN_GIFT = "credit_card_2000001", "gift_card_2000002"
ANA_PAX = {"first_name": "Ana", "last_name": "Lopez", "dob": "1990-01-02"}
KID_PAX = {"first_name": "Ben", "last_name": "Lopez", "dob": "2010-02-02"}


def booking(**overrides) -> dict:
    """Ana, two passengers, JFK -> LAX on HAT001 2024-05-20 in economy (200 each), insured, 3 bags (1 paid):
    2 x 200 + 2 x 30 + 1 x 50 = 510, paid 100 gift card + 250 certificate + 160 credit card."""
    args = {
        "user_id": ANA, "origin": "JFK", "destination": "LAX", "flight_type": "one_way", "cabin": "economy",
        "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
        "passengers": [ANA_PAX, KID_PAX],
        "payment_methods": [{"payment_id": ANA_GIFT, "amount": 100}, {"payment_id": ANA_CERT, "amount": 250},
                            {"payment_id": ANA_CARD, "amount": 160}],
        "total_baggages": 3, "nonfree_baggages": 1, "insurance": "yes",
    }
    args.update(overrides)
    return args


async def seats(client, flight: str, date: str, origin: str = "JFK", destination: str = "LAX") -> dict:
    res = await ok(client, "search_direct_flight", {"origin": origin, "destination": destination, "date": date})
    return next(f["available_seats"] for f in res["flights"] if f["flight_number"] == flight)


async def methods(client, user: str = ANA) -> dict:
    return (await ok(client, "get_user_details", {"user_id": user}))["payment_methods"]


# -- users, reservations, airports ---------------------------------------------------------------


async def test_get_user_details_returns_profile(air):
    u = await ok(air, "get_user_details", {"user_id": ANA})
    assert u["name"] == {"first_name": "Ana", "last_name": "Lopez"} and u["membership"] == "gold"
    assert u["address"] == {"address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "country": "USA",
                            "state": "TX", "zip": "73301"}
    assert u["saved_passengers"] == [KID_PAX]
    assert u["reservations"] == ["AAA111", "BBB222"]  # oldest booking first
    # redeemed certificates are not in the profile; balances are 'amount', as in tau2
    assert list(u["payment_methods"]) == [ANA_CERT, ANA_CERT2, ANA_CARD, ANA_GIFT]
    assert u["payment_methods"][ANA_GIFT] == {"source": "gift_card", "id": ANA_GIFT, "brand": None,
                                              "last_four": None, "amount": 100.0}
    assert u["payment_methods"][ANA_CARD]["last_four"] == "1111"


async def test_get_user_details_is_case_insensitive_and_unknown_is_not_found(air):
    assert (await ok(air, "get_user_details", {"user_id": " Ana_Lopez_1001 "}))["user_id"] == ANA
    err = await fails(air, "get_user_details", {"user_id": "nobody_0000"}, "not_found")
    assert "nobody_0000" in err["message"]


async def test_get_reservation_details(air):
    r = await ok(air, "get_reservation_details", {"reservation_id": "bbb222"})
    assert r["reservation_id"] == "BBB222" and r["flight_type"] == "round_trip" and r["status"] == "active"
    assert r["flights"] == [
        {"flight_number": "HAT001", "origin": "JFK", "destination": "LAX", "date": "2024-05-20", "price": 200.0},
        {"flight_number": "HAT002", "origin": "LAX", "destination": "JFK", "date": "2024-05-25", "price": 210.0}]
    assert r["payment_history"] == [{"payment_id": "certificate_1000009", "amount": 250.0},
                                    {"payment_id": ANA_CARD, "amount": 190.0}]
    assert r["insurance"] == "yes" and r["passengers"] == [ANA_PAX]
    await fails(air, "get_reservation_details", {"reservation_id": "ZZZ999"}, "not_found")


async def test_list_all_airports(air):
    res = await ok(air, "list_all_airports")
    assert res["airports"] == [{"iata": "JFK", "city": "New York"}, {"iata": "LAX", "city": "Los Angeles"},
                               {"iata": "ORD", "city": "Chicago"}, {"iata": "SEA", "city": "Seattle"}]


# -- flights -----------------------------------------------------------------------------------


async def test_search_direct_flight_lists_only_bookable_flights(air):
    res = await ok(air, "search_direct_flight", {"origin": "jfk", "destination": "LAX", "date": "2024-05-20"})
    assert res["origin"] == "JFK" and len(res["flights"]) == 1
    assert res["flights"][0] == {
        "flight_number": "HAT001", "origin": "JFK", "destination": "LAX", "status": "available",
        "scheduled_departure_time_est": "08:00:00", "scheduled_arrival_time_est": "11:30:00", "date": "2024-05-20",
        "available_seats": {"basic_economy": 5, "economy": 3, "business": 2},
        "prices": {"basic_economy": 100.0, "economy": 200.0, "business": 500.0}}
    # cancelled that day, and outside the schedule: nothing to book
    for day in ("2024-05-22", "2024-06-30"):
        res = await ok(air, "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": day})
        assert res["flights"] == []


async def test_search_errors(air):
    err = await fails(air, "search_direct_flight", {"origin": "XXX", "destination": "LAX", "date": "2024-05-20"},
                      "not_found")
    assert "list_all_airports" in err["message"]
    await fails(air, "search_onestop_flight", {"origin": "JFK", "destination": "YYY", "date": "2024-05-20"},
                "not_found")
    await fails(air, "search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-02-30"},
                "invalid_arguments")


async def test_search_onestop_flight_connects_after_landing_including_next_day(air):
    res = await ok(air, "search_onestop_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"})
    assert [[leg["flight_number"] for leg in it] for it in res["itineraries"]] == [["HAT003", "HAT004"]]
    # HAT005 lands at 01:30+1, so the connection is HAT006 on the next day; the direct HAT004 is not listed
    res = await ok(air, "search_onestop_flight", {"origin": "ORD", "destination": "LAX", "date": "2024-05-20"})
    assert [[(leg["flight_number"], leg["date"]) for leg in it] for it in res["itineraries"]] == [
        [("HAT005", "2024-05-20"), ("HAT006", "2024-05-21")]]


async def test_get_flight_status(air):
    s = await ok(air, "get_flight_status", {"flight_number": "hat002", "date": "2024-05-15"})
    assert s["status"] == "delayed" and s["estimated_departure_time_est"] == "2024-05-15T16:30:00"
    assert (s["origin"], s["destination"], s["actual_departure_time_est"]) == ("LAX", "JFK", None)
    landed = await ok(air, "get_flight_status", {"flight_number": "HAT001", "date": "2024-05-10"})
    assert landed["status"] == "landed" and landed["actual_arrival_time_est"] == "2024-05-10T11:20:00"
    assert (await ok(air, "get_flight_status", {"flight_number": "HAT001", "date": "2024-05-15"}))["status"] == "flying"
    assert (await ok(air, "get_flight_status", {"flight_number": "HAT002", "date": "2024-05-16"}))["status"] == "on time"
    await fails(air, "get_flight_status", {"flight_number": "HAT999", "date": "2024-05-15"}, "not_found")
    err = await fails(air, "get_flight_status", {"flight_number": "HAT001", "date": "2024-06-01"}, "not_found")
    assert "does not operate" in err["message"]


# -- booking -----------------------------------------------------------------------------------


async def test_book_reservation_charges_debits_and_takes_seats(air):
    r = await ok(air, "book_reservation", booking())
    assert re.fullmatch(r"[A-Z0-9]{6}", r["reservation_id"]) and r["status"] == "active"
    assert r["created_at"] == "2024-05-15T15:01:00"  # first write of the episode
    assert r["flights"] == [{"flight_number": "HAT001", "origin": "JFK", "destination": "LAX",
                             "date": "2024-05-20", "price": 200.0}]
    assert r["payment_history"] == [{"payment_id": ANA_GIFT, "amount": 100.0},
                                    {"payment_id": ANA_CERT, "amount": 250.0},
                                    {"payment_id": ANA_CARD, "amount": 160.0}]
    assert (r["total_baggages"], r["nonfree_baggages"], r["insurance"]) == (3, 1, "yes")
    m = await methods(air)
    assert m[ANA_GIFT]["amount"] == 0.0  # 100 - 100
    assert ANA_CERT not in m  # redeemed whole
    assert await seats(air, "HAT001", "2024-05-20") == {"basic_economy": 5, "economy": 1, "business": 2}
    assert r["reservation_id"] in (await ok(air, "get_user_details", {"user_id": ANA}))["reservations"]


async def test_book_round_trip_with_certificate_remainder_forfeited(air):
    # 200 + 210 = 410 for one passenger, no insurance, no bags: 100 certificate (of 100) + 310 card
    r = await ok(air, "book_reservation", booking(
        flight_type="round_trip", passengers=[ANA_PAX], total_baggages=0, nonfree_baggages=0, insurance="no",
        flights=[{"flight_number": "HAT001", "date": "2024-05-20"}, {"flight_number": "HAT002", "date": "2024-05-25"}],
        payment_methods=[{"payment_id": ANA_CERT, "amount": 100}, {"payment_id": ANA_CARD, "amount": 310}]))
    assert sum(p["amount"] for p in r["payment_history"]) == 410.0
    assert ANA_CERT not in await methods(air)  # 150 of its 250 forfeited


async def test_book_reservation_payment_errors(air):
    err = await fails(air, "book_reservation", booking(payment_methods=[{"payment_id": ANA_CARD, "amount": 500}]),
                      "precondition_failed")
    assert "510.00" in err["message"] and "500.00" in err["message"]
    await fails(air, "book_reservation", booking(payment_methods=[
        {"payment_id": ANA_GIFT, "amount": 150}, {"payment_id": ANA_CARD, "amount": 360}]), "precondition_failed")
    await fails(air, "book_reservation", booking(payment_methods=[
        {"payment_id": BEN_CARD, "amount": 510}]), "precondition_failed")  # someone else's card
    await fails(air, "book_reservation", booking(payment_methods=[
        {"payment_id": "credit_card_9999999", "amount": 510}]), "not_found")
    await fails(air, "book_reservation", booking(payment_methods=[
        {"payment_id": "certificate_1000009", "amount": 250}, {"payment_id": ANA_CARD, "amount": 260}]),
        "precondition_failed")  # already redeemed
    err = await fails(air, "book_reservation", booking(payment_methods=[
        {"payment_id": ANA_CERT, "amount": 250}, {"payment_id": ANA_CERT2, "amount": 100},
        {"payment_id": ANA_CARD, "amount": 160}]), "precondition_failed")
    assert "at most one certificate" in err["message"]
    await fails(air, "book_reservation", booking(payment_methods=[
        {"payment_id": ANA_CARD, "amount": 255}, {"payment_id": ANA_CARD, "amount": 255}]), "invalid_arguments")


async def test_book_reservation_flight_errors(air):
    await fails(air, "book_reservation", booking(user_id="nobody_1"), "not_found")
    await fails(air, "book_reservation", booking(flights=[{"flight_number": "HAT999", "date": "2024-05-20"}]),
                "not_found")
    await fails(air, "book_reservation", booking(flights=[{"flight_number": "HAT001", "date": "2024-06-20"}]),
                "not_found")
    err = await fails(air, "book_reservation", booking(flights=[{"flight_number": "HAT001", "date": "2024-05-22"}]),
                      "precondition_failed")
    assert "cancelled" in err["message"]
    err = await fails(air, "book_reservation", booking(cabin="business", passengers=[ANA_PAX, KID_PAX, ANA_PAX]),
                      "precondition_failed")
    assert "2 business seat(s) left; 3 needed" in err["message"]
    await fails(air, "book_reservation", booking(origin="ORD"), "invalid_arguments")       # starts at JFK
    await fails(air, "book_reservation", booking(destination="SEA"), "invalid_arguments")  # ends at LAX
    await fails(air, "book_reservation", booking(flights=[{"flight_number": "HAT003", "date": "2024-05-20"},
                                                          {"flight_number": "HAT006", "date": "2024-05-21"}]),
                "invalid_arguments")  # ORD then SEA: does not connect
    await fails(air, "book_reservation", booking(flights=[{"flight_number": "HAT004", "date": "2024-05-20"},
                                                          {"flight_number": "HAT003", "date": "2024-05-20"}]),
                "invalid_arguments")  # out of order
    await fails(air, "book_reservation", booking(flights=[{"flight_number": "HAT001", "date": "2024-05-20"},
                                                          {"flight_number": "HAT001", "date": "2024-05-20"}]),
                "invalid_arguments")
    await fails(air, "book_reservation", booking(nonfree_baggages=4), "invalid_arguments")


async def test_failed_booking_changes_no_state(air):
    before = await digest(air)
    await fails(air, "book_reservation", booking(payment_methods=[{"payment_id": ANA_GIFT, "amount": 100},
                                                                  {"payment_id": ANA_CARD, "amount": 409}]),
                "precondition_failed")
    assert await digest(air) == before


# -- cancelling --------------------------------------------------------------------------------


async def test_cancel_refunds_each_method_and_releases_seats(air):
    r = await ok(air, "cancel_reservation", {"reservation_id": "BBB222"})
    assert r["status"] == "cancelled"
    assert r["payment_history"][2:] == [{"payment_id": "certificate_1000009", "amount": -250.0},
                                        {"payment_id": ANA_CARD, "amount": -190.0}]
    assert (await methods(air))["certificate_1000009"]["amount"] == 250.0  # reissued
    assert (await seats(air, "HAT001", "2024-05-20"))["economy"] == 4  # 3 + 1
    assert (await seats(air, "HAT002", "2024-05-25", "LAX", "JFK"))["economy"] == 6  # 5 + 1
    # idempotent: no second refund
    again = await ok(air, "cancel_reservation", {"reservation_id": "BBB222"})
    assert again == r


async def test_cancel_credits_gift_cards_at_once(air):
    r = await ok(air, "cancel_reservation", {"reservation_id": "AAA111"})
    assert r["payment_history"][2:] == [{"payment_id": ANA_GIFT, "amount": -60.0},
                                        {"payment_id": ANA_CARD, "amount": -300.0}]
    assert (await methods(air))[ANA_GIFT]["amount"] == 160.0  # 100 + 60
    assert (await seats(air, "HAT001", "2024-05-20"))["economy"] == 5  # 3 + 2 passengers


async def test_cancel_after_a_refunded_change_refunds_only_what_is_still_paid(air):
    # AAA111 paid 60 gift card + 300 card; the downgrade refunded 160 to the gift card; 200 is still paid
    await ok(air, "update_reservation_flights", {
        "reservation_id": "AAA111", "cabin": "basic_economy", "payment_id": ANA_GIFT,
        "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}]})
    r = await ok(air, "cancel_reservation", {"reservation_id": "AAA111"})
    assert [p["amount"] for p in r["payment_history"]] == [60.0, 300.0, -160.0, -200.0]
    assert r["payment_history"][-1]["payment_id"] == ANA_CARD
    assert (await methods(air))[ANA_GIFT]["amount"] == 260.0  # 100 + 160, nothing more
    assert (await seats(air, "HAT001", "2024-05-20"))["basic_economy"] == 5  # taken by the change, released


async def test_cancel_errors(air):
    err = await fails(air, "cancel_reservation", {"reservation_id": "DDD444"}, "precondition_failed")
    assert "landed" in err["message"]
    await fails(air, "cancel_reservation", {"reservation_id": "QQQ000"}, "not_found")
    already = await ok(air, "cancel_reservation", {"reservation_id": "EEE555"})
    assert len(already["payment_history"]) == 2  # nothing refunded twice


async def test_booking_then_cancelling_restores_balances_and_seats(air):
    r = await ok(air, "book_reservation", booking())
    c = await ok(air, "cancel_reservation", {"reservation_id": r["reservation_id"]})
    assert [p["amount"] for p in c["payment_history"]] == [100.0, 250.0, 160.0, -100.0, -250.0, -160.0]
    m = await methods(air)
    assert m[ANA_GIFT]["amount"] == 100.0 and m[ANA_CERT]["amount"] == 250.0
    assert await seats(air, "HAT001", "2024-05-20") == {"basic_economy": 5, "economy": 3, "business": 2}


# -- changing flights and cabin -----------------------------------------------------------------


async def test_change_flights_charges_the_fare_difference_and_moves_seats(air):
    # AAA111: 2 passengers, HAT001 at 180 -> HAT003 + HAT004 at 120 + 130: (250 - 180) x 2 = 140
    r = await ok(air, "update_reservation_flights", {
        "reservation_id": "AAA111", "cabin": "economy", "payment_id": ANA_CARD,
        "flights": [{"flight_number": "HAT003", "date": "2024-05-20"}, {"flight_number": "HAT004", "date": "2024-05-20"}]})
    assert [f["price"] for f in r["flights"]] == [120.0, 130.0]
    assert r["payment_history"][-1] == {"payment_id": ANA_CARD, "amount": 140.0}
    assert (await seats(air, "HAT001", "2024-05-20"))["economy"] == 5  # released
    assert (await seats(air, "HAT003", "2024-05-20", "JFK", "ORD"))["economy"] == 7  # taken


async def test_downgrade_refunds_the_difference_to_a_gift_card(air):
    # same flight, basic economy now 100: (100 - 180) x 2 = -160, credited to the gift card
    r = await ok(air, "update_reservation_flights", {
        "reservation_id": "AAA111", "cabin": "basic_economy", "payment_id": ANA_GIFT,
        "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}]})
    assert r["cabin"] == "basic_economy" and r["flights"][0]["price"] == 100.0
    assert r["payment_history"][-1] == {"payment_id": ANA_GIFT, "amount": -160.0}
    assert (await methods(air))[ANA_GIFT]["amount"] == 260.0
    assert await seats(air, "HAT001", "2024-05-20") == {"basic_economy": 3, "economy": 5, "business": 2}


async def test_unchanged_flights_keep_their_price_and_cost_nothing(air):
    args = {"reservation_id": "AAA111", "cabin": "economy", "payment_id": ANA_CARD,
            "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}]}
    before = await digest(air)
    r = await ok(air, "update_reservation_flights", args)
    assert r["flights"][0]["price"] == 180.0 and len(r["payment_history"]) == 2
    assert await digest(air) == before


async def test_basic_economy_can_change_cabin_but_not_flights(air):
    err = await fails(air, "update_reservation_flights", {
        "reservation_id": "CCC333", "cabin": "basic_economy", "payment_id": BEN_CARD,
        "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}]}, "precondition_failed")
    assert "basic economy" in err["message"]
    # upgrading the same flight: economy is 180 today, 85 was paid -> 95
    r = await ok(air, "update_reservation_flights", {
        "reservation_id": "CCC333", "cabin": "economy", "payment_id": BEN_CARD,
        "flights": [{"flight_number": "HAT001", "date": "2024-05-21"}]})
    assert r["cabin"] == "economy" and r["payment_history"][-1] == {"payment_id": BEN_CARD, "amount": 95.0}


async def test_change_flights_errors(air):
    base = {"reservation_id": "AAA111", "cabin": "economy", "payment_id": ANA_CARD,
            "flights": [{"flight_number": "HAT003", "date": "2024-05-20"}, {"flight_number": "HAT004", "date": "2024-05-20"}]}
    err = await fails(air, "update_reservation_flights", {**base, "payment_id": ANA_GIFT}, "precondition_failed")
    assert "100.00 left" in err["message"] and "140.00" in err["message"]
    await fails(air, "update_reservation_flights", {**base, "payment_id": ANA_CERT}, "precondition_failed")
    await fails(air, "update_reservation_flights", {**base, "payment_id": BEN_CARD}, "precondition_failed")
    await fails(air, "update_reservation_flights", {**base, "payment_id": "gift_card_0000000"}, "not_found")
    await fails(air, "update_reservation_flights", {**base, "flights": base["flights"][:1]}, "invalid_arguments")
    await fails(air, "update_reservation_flights", {**base, "cabin": "business"}, "precondition_failed")  # 0 seats
    await fails(air, "update_reservation_flights", {**base, "reservation_id": "XXX000"}, "not_found")
    await fails(air, "update_reservation_flights", {**base, "reservation_id": "EEE555", "payment_id": BEN_CARD},
                "precondition_failed")  # cancelled
    err = await fails(air, "update_reservation_flights", {  # a flown flight cannot change cabin
        "reservation_id": "DDD444", "cabin": "business", "payment_id": BEN_CARD,
        "flights": [{"flight_number": "HAT001", "date": "2024-05-10"}]}, "precondition_failed")
    assert "landed" in err["message"]


# -- bags and passengers ------------------------------------------------------------------------


async def test_add_bags_charges_50_per_new_paid_bag(air):
    r = await ok(air, "update_reservation_baggages", {"reservation_id": "AAA111", "total_baggages": 3,
                                                      "nonfree_baggages": 2, "payment_id": ANA_GIFT})
    assert (r["total_baggages"], r["nonfree_baggages"]) == (3, 2)
    assert r["payment_history"][-1] == {"payment_id": ANA_GIFT, "amount": 100.0}
    assert (await methods(air))[ANA_GIFT]["amount"] == 0.0
    # free bags cost nothing and record no payment
    r = await ok(air, "update_reservation_baggages", {"reservation_id": "AAA111", "total_baggages": 4,
                                                      "nonfree_baggages": 2, "payment_id": ANA_CARD})
    assert len(r["payment_history"]) == 3


async def test_bag_errors(air):
    base = {"reservation_id": "AAA111", "total_baggages": 2, "nonfree_baggages": 0, "payment_id": ANA_CARD}
    await fails(air, "update_reservation_baggages", {**base, "total_baggages": 0}, "precondition_failed")
    await fails(air, "update_reservation_baggages", {**base, "nonfree_baggages": 3}, "invalid_arguments")
    await fails(air, "update_reservation_baggages", {**base, "nonfree_baggages": 2, "payment_id": ANA_CERT},
                "precondition_failed")
    await fails(air, "update_reservation_baggages", {**base, "reservation_id": "NOPE00"}, "not_found")
    await fails(air, "update_reservation_baggages", {**base, "nonfree_baggages": 2, "payment_id": "gift_card_404"},
                "not_found")


async def test_update_passengers_keeps_the_count(air):
    new = [ANA_PAX, {"first_name": "Mei", "last_name": "Garcia", "dob": "1989-12-13"}]
    r = await ok(air, "update_reservation_passengers", {"reservation_id": "AAA111", "passengers": new})
    assert r["passengers"] == new
    err = await fails(air, "update_reservation_passengers", {"reservation_id": "AAA111", "passengers": [ANA_PAX]},
                      "precondition_failed")
    assert "cannot change" in err["message"]
    await fails(air, "update_reservation_passengers", {"reservation_id": "EEE555", "passengers": [ANA_PAX]},
                "precondition_failed")
    await fails(air, "update_reservation_passengers", {"reservation_id": "NOPE00", "passengers": [ANA_PAX]},
                "not_found")


# -- compensation, arithmetic, handoff ----------------------------------------------------------


async def test_send_certificate_adds_a_payment_method(air):
    c = await ok(air, "send_certificate", {"user_id": BEN, "amount": 150})
    # the next id after the highest numeric certificate id (certificate_1000009)
    assert c == {"user_id": BEN, "payment_id": "certificate_1000010", "amount": 150.0,
                 "message": "Certificate certificate_1000010 added to user ben_okafor_2002 with amount 150.00."}
    assert (await methods(air, BEN))["certificate_1000010"]["amount"] == 150.0
    await fails(air, "send_certificate", {"user_id": "nobody_1", "amount": 50}, "not_found")
    await fails(air, "send_certificate", {"user_id": BEN, "amount": 0}, "invalid_arguments")


async def test_calculate(air):
    assert (await ok(air, "calculate", {"expression": "2 * ((350 - 122) + (499 - 127))"}))["result"] == 1200.0
    assert (await ok(air, "calculate", {"expression": "10 / 3"}))["result"] == 3.33
    await fails(air, "calculate", {"expression": "__import__('os')"}, "invalid_arguments")
    await fails(air, "calculate", {"expression": "1 / 0"}, "invalid_arguments")


async def test_transfer_to_human_agents_records_the_handoff(air):
    t = await ok(air, "transfer_to_human_agents", {"summary": "wants to cancel a flown trip"})
    assert t["transfer_id"] == "xfer_000001" and t["requested_at"] == "2024-05-15T15:01:00"
    await fails(air, "transfer_to_human_agents", {"summary": ""}, "invalid_arguments")


# -- episodes ----------------------------------------------------------------------------------


async def test_episodes_are_isolated_and_deterministic(air):
    one = await ok(air, "book_reservation", booking(), episode="one")
    two = await ok(air, "book_reservation", booking(), episode="two")
    assert one == two  # same calls in the same order: same id, time and rows
    assert await digest(air, "one") == await digest(air, "two") != await digest(air, "three")
    await fails(air, "get_reservation_details", {"reservation_id": one["reservation_id"]}, "not_found",
                episode="three")
    # one passenger, insured, one paid bag: 200 + 30 + 50 = 280
    again = await ok(air, "book_reservation", booking(passengers=[ANA_PAX], payment_methods=[
        {"payment_id": ANA_CARD, "amount": 280}]), episode="one")
    assert again["reservation_id"] != one["reservation_id"]


async def test_diff_lists_the_rows_a_booking_wrote(air):
    r = await ok(air, "book_reservation", booking(), episode="d")
    res = await air.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "d"})
    diff = json.loads(res.contents[0].text)
    assert set(diff) == {"reservations", "reservation_flights", "reservation_passengers", "payments",
                         "payment_methods", "flight_dates"}
    assert diff["reservations"]["added"][0]["reservation_id"] == r["reservation_id"]
    assert diff["flight_dates"]["changed"] == [{"key": ["HAT001", "2024-05-20"], "fields": {"seats_economy": [3, 1]}}]


async def test_call_helper_reports_kind_for_unknown_tool(air):
    res = await call(air, "book_flight", {})
    assert res.is_error and result_error(res)["kind"] == "unknown_tool"


async def test_every_tool_is_exercised_here():
    """Guard: a new airline tool must get behaviour tests in this file."""
    from pathlib import Path

    from shiftbox_servers.airline import tools

    source = Path(__file__).read_text()
    untested = [s.name for s in tools if f'"{s.name}"' not in source]
    assert not untested, f"tools without behaviour tests: {untested}"
    assert len(tools) == 14
