"""Import a tau2 / AgentChangeBench airline db.json as a snapshot of the shiftbox schema (ids kept), so tasks
written against it run on the same tools. Every record is checked before anything is written; a problem
is reported with the table, the record id and the field.

db.json (tau2's airline data model): `flights` keyed by flight number, each with its route, scheduled
times and `dates` (date -> status: `available` with seats and prices per cabin; `on time` / `delayed`
with estimated times; `flying` with the actual departure and estimated arrival; `landed` with actual
times; `cancelled`); `users` keyed by user id (name, address, email, dob, membership, saved passengers,
payment methods: credit cards, and gift cards and certificates with an `amount`, the list of their
reservation ids); `reservations` keyed by id (trip, cabin, flights with the price paid, passengers,
payment history of {payment_id, amount}, bags, insurance, `status` absent or "cancelled").

Mapping: the airports are the 20 that tau2's list_all_airports names (db.json holds no airport table; a
code outside them is refused). A reservation without status is 'active'. A user's `reservations` list
and a reservation flight's origin and destination are not stored but checked (they follow from the
foreign keys). tau2 removes a certificate from the profile once it pays for a booking; a payment by such
a certificate (an id that is in no profile) keeps it as a redeemed certificate of the reservation's user,
as the native snapshot stores one. Payment entries carry no time in db.json: each gets the reservation's
created_at. Zero-amount entries carry no money and are dropped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import SnapshotManifest

from ..kit._json_records import check_same_id as _same_id
from ..kit._json_records import checked_keys as _keys
from ..kit._json_records import keyed_records as _mapping
from ..kit._json_records import load_db_json
from ..kit._json_records import record_error as _fail
from ..kit._json_records import text_field as _str
from ._builder import AIRPORTS
from ._schema import CABINS, SCHEMA, new_database

Row = dict[str, Any]
TABLES = ("airports", "flights", "flight_dates", "users", "saved_passengers", "payment_methods", "reservations",
          "reservation_flights", "reservation_passengers", "payments")
"""In an order where every reference points to an earlier table."""
CITIES = {iata: city for iata, city, _, _ in AIRPORTS}
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
CLOCK = re.compile(r"^\d{2}:\d{2}:\d{2}(\+1)?$")
STATUS_FIELDS = {  # status -> the fields it carries besides `status` (all required)
    "available": ("available_seats", "prices"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": (),
}
METHOD_FIELDS = {"credit_card": {"source", "id", "brand", "last_four"}, "gift_card": {"source", "id", "amount"},
                 "certificate": {"source", "id", "amount"}}
USER_FIELDS = {"user_id", "name", "address", "email", "dob", "payment_methods", "saved_passengers", "membership",
               "reservations"}
RESERVATION_FIELDS = {"reservation_id", "user_id", "origin", "destination", "flight_type", "cabin", "flights",
                      "passengers", "payment_history", "created_at", "total_baggages", "nonfree_baggages",
                      "insurance", "status"}
PERSON_FIELDS = {"first_name", "last_name", "dob"}


def import_agentchangebench(db_json: Path, directory: Path) -> SnapshotManifest:
    """Read the airline db.json, validate every record and write it as snapshot acb-v1."""
    db = load_db_json(db_json, convert, new_database, TABLES)
    return SCHEMA.write_snapshot(db, directory, snapshot_version="acb-v1", source="agentchangebench airline db.json")


def convert(data: Any) -> dict[str, list[Row]]:
    """db.json's flights / users / reservations as rows of the shiftbox tables (ValueError on any misfit)."""
    _keys("db.json", "(top level)", data, {"flights", "users", "reservations"}, {"flights", "users", "reservations"})
    rows: dict[str, list[Row]] = {table: [] for table in TABLES}
    rows["airports"] = [{"iata": iata, "city": city} for iata, city in CITIES.items()]
    flights: dict[str, Row] = {}
    days: set[tuple[str, str]] = set()
    for number, flight in _mapping(data, "flights"):
        _flight(number, flight, rows, flights, days)
    methods: dict[str, Row] = {}
    listed: dict[str, list[str]] = {}
    for user_id, user in _mapping(data, "users"):
        _user(user_id, user, rows, methods, listed)
    owned: dict[str, list[str]] = {user_id: [] for user_id in listed}
    for rid, reservation in _mapping(data, "reservations"):
        _reservation(rid, reservation, rows, flights, days, methods, owned)
    for user_id, ids in listed.items():
        if sorted(ids) != sorted(owned[user_id]):
            raise _fail("users", user_id, "reservations", f"lists {sorted(ids)} but the reservations of the user are "
                        f"{sorted(owned[user_id])}")
    rows["payment_methods"] = list(methods.values())
    return rows


# -- flights -----------------------------------------------------------------------------------------


def _flight(number: str, flight: Any, rows: dict[str, list[Row]], flights: dict[str, Row],
            days: set[tuple[str, str]]) -> None:
    fields = {"flight_number", "origin", "destination", "scheduled_departure_time_est", "scheduled_arrival_time_est",
              "dates"}
    _keys("flights", number, flight, fields, fields)
    _same_id("flights", number, "flight_number", flight["flight_number"])
    if not re.fullmatch(r"[A-Z]{3}\d{3}", number):
        raise _fail("flights", number, "flight_number", "must be three capital letters and three digits, e.g. HAT001")
    origin, destination = (_airport("flights", number, f, flight[f]) for f in ("origin", "destination"))
    if origin == destination:
        raise _fail("flights", number, "destination", f"is the origin {origin}")
    row = {"flight_number": number, "origin": origin, "destination": destination}
    for f in ("scheduled_departure_time_est", "scheduled_arrival_time_est"):
        row[f] = _match("flights", number, f, flight[f], CLOCK, "HH:MM:SS, with '+1' for the next day")
    flights[number] = row
    rows["flights"].append(row)
    if not isinstance(flight["dates"], dict):
        raise _fail("flights", number, "dates", "must be an object keyed by date")
    for day, status in flight["dates"].items():
        record = f"{number} on {day}"
        _match("flights", number, "dates", day, DATE, "YYYY-MM-DD keys")
        rows["flight_dates"].append(_flight_day(record, number, day, status))
        days.add((number, day))


def _flight_day(record: str, number: str, day: str, data: Any) -> Row:
    name = data.get("status") if isinstance(data, dict) else None
    if name not in STATUS_FIELDS:
        raise _fail("flights", record, "status", f"is {name!r}; allowed: {list(STATUS_FIELDS)}")
    fields = {"status", *STATUS_FIELDS[name]}
    _keys("flights", record, data, fields, fields)
    row: Row = {"flight_number": number, "date": day, "status": name}
    if name == "available":
        seats = _keys("flights", record, data["available_seats"], set(CABINS), set(CABINS), "available_seats")
        prices = _keys("flights", record, data["prices"], set(CABINS), set(CABINS), "prices")
        for cabin in CABINS:
            row[f"seats_{cabin}"] = _count("flights", record, f"available_seats.{cabin}", seats[cabin])
            row[f"price_{cabin}"] = _money("flights", record, f"prices.{cabin}", prices[cabin], positive=True)
    for f in STATUS_FIELDS[name]:
        if f.endswith("_est"):
            row[f] = _match("flights", record, f, data[f], DATETIME, "YYYY-MM-DDTHH:MM:SS")
    return row


# -- users -------------------------------------------------------------------------------------------


def _user(user_id: str, user: Any, rows: dict[str, list[Row]], methods: dict[str, Row],
          listed: dict[str, list[str]]) -> None:
    _keys("users", user_id, user, USER_FIELDS, USER_FIELDS)
    _same_id("users", user_id, "user_id", user["user_id"])
    name = _keys("users", user_id, user["name"], {"first_name", "last_name"}, {"first_name", "last_name"}, "name")
    address_fields = {"address1", "address2", "city", "country", "state", "zip"}
    address = _keys("users", user_id, user["address"], address_fields, address_fields - {"address2"}, "address")
    membership = user["membership"]
    if membership not in ("regular", "silver", "gold"):
        raise _fail("users", user_id, "membership", f"is {membership!r}; allowed: ['regular', 'silver', 'gold']")
    row = {"user_id": user_id, "first_name": _str("users", user_id, "name.first_name", name["first_name"]),
           "last_name": _str("users", user_id, "name.last_name", name["last_name"]),
           "email": _str("users", user_id, "email", user["email"]),
           "dob": _match("users", user_id, "dob", user["dob"], DATE, "YYYY-MM-DD"), "membership": membership}
    for f in sorted(address_fields):
        value = address.get(f)
        row[f] = None if f == "address2" and value is None else _str("users", user_id, f"address.{f}", value,
                                                                     empty_ok=f == "address2")
    rows["users"].append(row)
    if not isinstance(user["saved_passengers"], list):
        raise _fail("users", user_id, "saved_passengers", "must be a list")
    for i, person in enumerate(user["saved_passengers"]):
        rows["saved_passengers"].append({"user_id": user_id, "position": i,
                                         **_person("users", user_id, f"saved_passengers[{i}]", person)})
    if not isinstance(user["payment_methods"], dict):
        raise _fail("users", user_id, "payment_methods", "must be an object keyed by payment method id")
    for pm_id, method in user["payment_methods"].items():
        where = f"{user_id} payment method {pm_id}"
        source = method.get("source") if isinstance(method, dict) else None
        if source not in METHOD_FIELDS:
            raise _fail("users", where, "source", f"is {source!r}; allowed: {sorted(METHOD_FIELDS)}")
        _keys("users", where, method, METHOD_FIELDS[source], METHOD_FIELDS[source])
        _same_id("users", where, "id", method["id"], pm_id)
        if pm_id in methods:
            raise _fail("users", where, "id", f"repeats the id of a payment method of {methods[pm_id]['user_id']}")
        card = source == "credit_card"
        methods[pm_id] = {
            "payment_id": pm_id, "user_id": user_id, "source": source,
            "brand": _str("users", where, "brand", method["brand"]) if card else None,
            "last_four": _str("users", where, "last_four", method["last_four"]) if card else None,
            "balance": None if card else _money("users", where, "amount", method["amount"]), "status": "active"}
    reservations = user["reservations"]
    if not isinstance(reservations, list) or not all(isinstance(r, str) for r in reservations):
        raise _fail("users", user_id, "reservations", "must be a list of reservation ids")
    listed[user_id] = reservations


# -- reservations ------------------------------------------------------------------------------------


def _reservation(rid: str, r: Any, rows: dict[str, list[Row]], flights: dict[str, Row],
                 days: set[tuple[str, str]], methods: dict[str, Row], owned: dict[str, list[str]]) -> None:
    t = "reservations"
    _keys(t, rid, r, RESERVATION_FIELDS, RESERVATION_FIELDS - {"status"})
    _same_id(t, rid, "reservation_id", r["reservation_id"])
    if not re.fullmatch(r"[A-Za-z0-9]{6}", rid):
        raise _fail(t, rid, "reservation_id", "must be six letters or digits")
    user_id = r["user_id"]
    if user_id not in owned:
        raise _fail(t, rid, "user_id", f"refers to {user_id!r}, which is not in users")
    owned[user_id].append(rid)
    status = r.get("status")
    if status not in (None, "cancelled"):
        raise _fail(t, rid, "status", f"is {status!r}; allowed: absent, null or 'cancelled'")
    choices = {"flight_type": ("one_way", "round_trip"), "cabin": CABINS, "insurance": ("yes", "no")}
    for f, allowed in choices.items():
        if r[f] not in allowed:
            raise _fail(t, rid, f, f"is {r[f]!r}; allowed: {list(allowed)}")
    total, nonfree = (_count(t, rid, f, r[f]) for f in ("total_baggages", "nonfree_baggages"))
    if nonfree > total:
        raise _fail(t, rid, "nonfree_baggages", f"is {nonfree}, more than total_baggages {total}")
    created = _match(t, rid, "created_at", r["created_at"], DATETIME, "YYYY-MM-DDTHH:MM:SS")
    rows[t].append({"reservation_id": rid, "user_id": user_id,
                    "origin": _airport(t, rid, "origin", r["origin"]),
                    "destination": _airport(t, rid, "destination", r["destination"]),
                    "flight_type": r["flight_type"], "cabin": r["cabin"], "created_at": created,
                    "total_baggages": total, "nonfree_baggages": nonfree, "insurance": r["insurance"],
                    "status": status or "active"})
    if not isinstance(r["flights"], list) or not r["flights"]:
        raise _fail(t, rid, "flights", "must be a non-empty list")
    for i, leg in enumerate(r["flights"]):
        field = f"flights[{i}]"
        _keys(t, rid, leg, {"flight_number", "origin", "destination", "date", "price"},
              {"flight_number", "origin", "destination", "date", "price"}, field)
        number, day = leg["flight_number"], leg["date"]
        if number not in flights:
            raise _fail(t, rid, f"{field}.flight_number", f"refers to {number!r}, which is not in flights")
        if (number, day) not in days:
            raise _fail(t, rid, f"{field}.date", f"is {day!r}, a date flight {number} has no entry for")
        for end in ("origin", "destination"):
            if leg[end] != flights[number][end]:
                raise _fail(t, rid, f"{field}.{end}", f"is {leg[end]!r} but flight {number} has {flights[number][end]!r}")
        rows["reservation_flights"].append({"reservation_id": rid, "position": i, "flight_number": number, "date": day,
                                            "price": _money(t, rid, f"{field}.price", leg["price"], positive=True)})
    if not isinstance(r["passengers"], list) or not r["passengers"]:
        raise _fail(t, rid, "passengers", "must be a non-empty list")
    for i, person in enumerate(r["passengers"]):
        rows["reservation_passengers"].append({"reservation_id": rid, "position": i,
                                               **_person(t, rid, f"passengers[{i}]", person)})
    if not isinstance(r["payment_history"], list):
        raise _fail(t, rid, "payment_history", "must be a list")
    position = 0
    for i, payment in enumerate(r["payment_history"]):
        field = f"payment_history[{i}]"
        _keys(t, rid, payment, {"payment_id", "amount"}, {"payment_id", "amount"}, field)
        amount = _money(t, rid, f"{field}.amount", payment["amount"], signed=True)
        payment_id = _payment_method(rid, field, payment["payment_id"], user_id, methods)
        if amount == 0:
            continue
        rows["payments"].append({"reservation_id": rid, "position": position, "payment_id": payment_id,
                                 "amount": amount, "kind": "payment" if amount > 0 else "refund",
                                 "created_at": created})
        position += 1


def _payment_method(rid: str, field: str, payment_id: Any, user_id: str, methods: dict[str, Row]) -> str:
    """The user's method that paid; a certificate in no profile is one tau2 removed on redeeming it."""
    if not isinstance(payment_id, str) or not payment_id:
        raise _fail("reservations", rid, f"{field}.payment_id", f"must be a non-empty string, not {payment_id!r}")
    method = methods.get(payment_id)
    if method is None and payment_id.startswith("certificate_"):
        method = methods[payment_id] = {"payment_id": payment_id, "user_id": user_id, "source": "certificate",
                                        "brand": None, "last_four": None, "balance": 0.0, "status": "redeemed"}
    if method is None:
        raise _fail("reservations", rid, f"{field}.payment_id", f"is {payment_id!r}, which is no payment method")
    if method["user_id"] != user_id:
        raise _fail("reservations", rid, f"{field}.payment_id",
                    f"is {payment_id}, a payment method of {method['user_id']}, not of {user_id}")
    return payment_id


# -- values ------------------------------------------------------------------------------------------


def _match(table: str, record: str, field: str, value: Any, pattern: re.Pattern[str], shape: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise _fail(table, record, field, f"is {value!r}; expected {shape}")
    return value


def _count(table: str, record: str, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(table, record, field, f"must be a whole number >= 0, not {value!r}")
    return value


def _money(table: str, record: str, field: str, value: Any, *, positive: bool = False, signed: bool = False) -> float:
    """An amount in dollars: > 0 (`positive`), any sign (`signed`: refunds are negative), else >= 0."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if not number or (positive and value <= 0) or (not positive and not signed and value < 0):
        wanted = "a number > 0" if positive else "a number" if signed else "a number >= 0"
        raise _fail(table, record, field, f"must be {wanted}, not {value!r}")
    return round(float(value), 2)


def _airport(table: str, record: str, field: str, code: Any) -> str:
    if code not in CITIES:
        raise _fail(table, record, field, f"is {code!r}, not one of the {len(CITIES)} airports tau2 serves "
                    f"({', '.join(CITIES)})")
    return code


def _person(table: str, record: str, field: str, data: Any) -> Row:
    person = _keys(table, record, data, PERSON_FIELDS, PERSON_FIELDS, field)
    return {"first_name": _str(table, record, f"{field}.first_name", person["first_name"]),
            "last_name": _str(table, record, f"{field}.last_name", person["last_name"]),
            "dob": _match(table, record, f"{field}.dob", person["dob"], DATE, "YYYY-MM-DD")}
