"""A small hand-written airline snapshot whose every value the tests know by heart.

Now is 2024-05-15 15:00 EST (each write moves the clock one minute).
"""

from __future__ import annotations

from pathlib import Path

from shiftbox_servers.airline import CLOCK_START, new_database
from shiftbox_servers.kit import Snapshot
from tests.servers.helpers import IsolationProbe, domain_fixtures, fixture_snapshot

AIRPORTS = [("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"), ("SEA", "Seattle")]
FLIGHTS = [
    ("HAT001", "JFK", "LAX", "08:00:00", "11:30:00"),
    ("HAT002", "LAX", "JFK", "13:00:00", "21:00:00"),
    ("HAT003", "JFK", "ORD", "09:00:00", "11:00:00"),
    ("HAT004", "ORD", "LAX", "12:00:00", "14:30:00"),
    ("HAT005", "ORD", "SEA", "22:00:00", "01:30:00+1"),
    ("HAT006", "SEA", "LAX", "07:00:00", "09:30:00"),
]
AVAILABLE = {  # (flight, date): (seats basic, economy, business), (prices basic, economy, business)
    ("HAT001", "2024-05-20"): ((5, 3, 2), (100, 200, 500)),
    ("HAT001", "2024-05-21"): ((4, 4, 4), (90, 180, 450)),
    ("HAT002", "2024-05-25"): ((5, 5, 5), (110, 210, 520)),
    ("HAT003", "2024-05-20"): ((9, 9, 9), (60, 120, 300)),
    ("HAT004", "2024-05-20"): ((9, 9, 0), (70, 130, 310)),
    ("HAT005", "2024-05-20"): ((9, 9, 9), (80, 150, 400)),
    ("HAT006", "2024-05-21"): ((9, 9, 9), (50, 100, 250)),
}
OTHER_DAYS = [
    {"flight_number": "HAT001", "date": "2024-05-10", "status": "landed",
     "actual_departure_time_est": "2024-05-10T08:05:00", "actual_arrival_time_est": "2024-05-10T11:20:00"},
    {"flight_number": "HAT001", "date": "2024-05-15", "status": "flying",
     "actual_departure_time_est": "2024-05-15T08:02:00", "estimated_arrival_time_est": "2024-05-15T11:31:00"},
    {"flight_number": "HAT001", "date": "2024-05-22", "status": "cancelled"},
    {"flight_number": "HAT002", "date": "2024-05-15", "status": "delayed",
     "estimated_departure_time_est": "2024-05-15T16:30:00", "estimated_arrival_time_est": "2024-05-16T00:30:00"},
    {"flight_number": "HAT002", "date": "2024-05-16", "status": "on time",
     "estimated_departure_time_est": "2024-05-16T13:00:00", "estimated_arrival_time_est": "2024-05-16T21:00:00"},
]
USERS = [
    {"user_id": "ana_lopez_1001", "first_name": "Ana", "last_name": "Lopez", "email": "ana@example.com",
     "dob": "1990-01-02", "address1": "1 Main St", "address2": "Apt 2", "city": "Austin", "state": "TX",
     "country": "USA", "zip": "73301", "membership": "gold"},
    {"user_id": "ben_okafor_2002", "first_name": "Ben", "last_name": "Okafor", "email": "ben@example.com",
     "dob": "1985-05-05", "address1": "2 Oak Rd", "address2": None, "city": "Boise", "state": "ID",
     "country": "USA", "zip": "83701", "membership": "regular"},
]
SAVED = [("ana_lopez_1001", 0, "Ben", "Lopez", "2010-02-02")]
METHODS = [  # payment_id, user, source, brand, last four, balance, status
    ("credit_card_1000001", "ana_lopez_1001", "credit_card", "visa", "1111", None, "active"),
    ("gift_card_1000002", "ana_lopez_1001", "gift_card", None, None, 100.0, "active"),
    ("certificate_1000003", "ana_lopez_1001", "certificate", None, None, 250.0, "active"),
    ("certificate_1000004", "ana_lopez_1001", "certificate", None, None, 100.0, "active"),
    ("certificate_1000009", "ana_lopez_1001", "certificate", None, None, 0.0, "redeemed"),
    ("credit_card_2000001", "ben_okafor_2002", "credit_card", "mastercard", "2222", None, "active"),
    ("gift_card_2000002", "ben_okafor_2002", "gift_card", None, None, 30.0, "active"),
]
RESERVATIONS = [  # id, user, origin, destination, type, cabin, created, bags, nonfree, insurance, status
    ("AAA111", "ana_lopez_1001", "JFK", "LAX", "one_way", "economy", "2024-05-10T10:00:00", 1, 0, "no", "active"),
    ("BBB222", "ana_lopez_1001", "JFK", "LAX", "round_trip", "economy", "2024-05-11T10:00:00", 0, 0, "yes",
     "active"),
    ("CCC333", "ben_okafor_2002", "JFK", "LAX", "one_way", "basic_economy", "2024-05-12T10:00:00", 0, 0, "no",
     "active"),
    ("DDD444", "ben_okafor_2002", "JFK", "LAX", "one_way", "economy", "2024-05-01T10:00:00", 0, 0, "no", "active"),
    ("EEE555", "ben_okafor_2002", "JFK", "LAX", "one_way", "economy", "2024-05-02T10:00:00", 0, 0, "no",
     "cancelled"),
]
LEGS = [
    ("AAA111", 0, "HAT001", "2024-05-20", 180.0),
    ("BBB222", 0, "HAT001", "2024-05-20", 200.0), ("BBB222", 1, "HAT002", "2024-05-25", 210.0),
    ("CCC333", 0, "HAT001", "2024-05-21", 85.0),
    ("DDD444", 0, "HAT001", "2024-05-10", 150.0),
    ("EEE555", 0, "HAT001", "2024-05-21", 170.0),
]
PASSENGERS = [
    ("AAA111", 0, "Ana", "Lopez", "1990-01-02"), ("AAA111", 1, "Ben", "Lopez", "2010-02-02"),
    ("BBB222", 0, "Ana", "Lopez", "1990-01-02"),
    ("CCC333", 0, "Ben", "Okafor", "1985-05-05"),
    ("DDD444", 0, "Ben", "Okafor", "1985-05-05"),
    ("EEE555", 0, "Ben", "Okafor", "1985-05-05"),
]
PAYMENTS = [
    ("AAA111", 0, "gift_card_1000002", 60.0, "payment", "2024-05-10T10:00:00"),
    ("AAA111", 1, "credit_card_1000001", 300.0, "payment", "2024-05-10T10:00:00"),
    ("BBB222", 0, "certificate_1000009", 250.0, "payment", "2024-05-11T10:00:00"),
    ("BBB222", 1, "credit_card_1000001", 190.0, "payment", "2024-05-11T10:00:00"),
    ("CCC333", 0, "credit_card_2000001", 85.0, "payment", "2024-05-12T10:00:00"),
    ("DDD444", 0, "credit_card_2000001", 150.0, "payment", "2024-05-01T10:00:00"),
    ("EEE555", 0, "credit_card_2000001", 170.0, "payment", "2024-05-02T10:00:00"),
    ("EEE555", 1, "credit_card_2000001", -170.0, "refund", "2024-05-03T10:00:00"),
]


def _flight_dates() -> list[dict]:
    days = []
    for (number, day), (seats, prices) in AVAILABLE.items():
        row = {"flight_number": number, "date": day, "status": "available"}
        for cabin, n, price in zip(("basic_economy", "economy", "business"), seats, prices, strict=True):
            row[f"seats_{cabin}"], row[f"price_{cabin}"] = n, float(price)
        days.append(row)
    return days + OTHER_DAYS


def write_fixture_snapshot(directory: Path) -> Snapshot:
    """The hand-written airline snapshot, written into `directory` (the `airline_snapshot` fixture)."""
    db = new_database()
    db["airports"].insert_all([{"iata": i, "city": c} for i, c in AIRPORTS])
    db["flights"].insert_all([dict(zip(("flight_number", "origin", "destination", "scheduled_departure_time_est",
                                        "scheduled_arrival_time_est"), f, strict=True)) for f in FLIGHTS])
    db["flight_dates"].insert_all(_flight_dates())
    db["users"].insert_all(USERS)
    tables = [("saved_passengers", SAVED), ("payment_methods", METHODS), ("reservations", RESERVATIONS),
              ("reservation_flights", LEGS), ("reservation_passengers", PASSENGERS), ("payments", PAYMENTS)]
    return fixture_snapshot(db, directory, domain="airline", clock_start=CLOCK_START, tables=tables)


# What tests/servers/test_every_domain.py checks of this domain.
TOOL_COUNT = 14
NATIVE_CLOCK_START = "2024-05-15T15:00:00"
"""The native snapshot's episode clock start."""
STDIO_CALLS = (("get_reservation_details", {"reservation_id": "AAA111"}, ("user_id", "ana_lopez_1001")),
               ("update_reservation_baggages", {"reservation_id": "AAA111", "total_baggages": "2",
                                                "nonfree_baggages": 0, "payment_id": "x"}))
"""(a call that succeeds, (output field, value)), (a call with a wrongly typed argument)."""
ISOLATION = IsolationProbe(
    ("book_reservation", {
        "user_id": "ben_okafor_2002", "origin": "JFK", "destination": "LAX", "flight_type": "one_way",
        "cabin": "basic_economy", "flights": [{"flight_number": "HAT001", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Ben", "last_name": "Okafor", "dob": "1985-05-05"}],
        "payment_methods": [{"payment_id": "credit_card_2000001", "amount": 100}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no",
    }),
    ("search_direct_flight", {"origin": "JFK", "destination": "LAX", "date": "2024-05-20"}),
    lambda res: res["flights"][0]["available_seats"]["basic_economy"], 5, 4,
    ("get_reservation_details", "reservation_id"))


airline_snapshot, air = domain_fixtures("airline", "air")


# What tests elsewhere exercise on the native snapshot (tests/interop, containers, metrics, bench/run.py):
NATIVE_DETAIL_LOOKUP = ("get_reservation_details", "reservations", "reservation_id")
"""A real database-backed lookup, and the table and column its argument comes from."""
NATIVE_MISSING_LOOKUP = ("get_user_details", {"user_id": "nobody_missing_0"})
"""A lookup of an id no snapshot holds: a tool-level not_found."""
NATIVE_INVISIBLE_WRITES = [("update_reservation_passengers",
                            {"reservation_id": "EHGLP3", "passengers": [{"first_name": "{}", "last_name": "Kim",
                                                                         "dob": "1990-07-28"}]})]
"""Writes on the native snapshot, "{}" where an invisible value goes."""
INTEROP_CASES = {
    "ok": ("get_reservation_details", {"reservation_id": "PCQF6E"}, ("user_id", "evelyn_nguyen_6005")),
    "rejected": ("get_reservation_details", {"reservation_id": ["PCQF6E"]}),
    "missing": ("get_reservation_details", {"reservation_id": "ZZZZZZ"}),
}
"""A call that succeeds on the native snapshot (with a field its result carries), one with an argument of the wrong
JSON type, one naming an id the snapshot does not have."""


# Written out by hand from _missions.py: the goals whose builder or variants make an MMTB chat or clarify mission
# (tests/client/tasks/test_generate_types.py: four of each let every four-type sequence go to distinct goals).
MMTB_CHAT_GOALS = ['baggage', 'cancellation', 'flight_status', 'reservation_lookup']
MMTB_CLARIFY_GOALS = ['flight_status', 'modification', 'passenger_update', 'reservation_lookup']
