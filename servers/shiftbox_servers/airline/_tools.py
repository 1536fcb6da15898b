"""The 14 airline tools (tau2 / AgentChangeBench airline contract), over one episode's database.

Where tau2's reference tools leave a rule to the agent and then corrupt state when it is broken,
these check it: payments must belong to the user and add up, balances are debited and refunded,
seats are taken and released, itineraries must connect, basic economy flights cannot be changed,
bags cannot be removed, and a cancelled reservation is never refunded twice.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import date as Date
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import Field

from shiftbox_servers.kit import (
    Episode,
    InvalidArguments,
    IsoDate,
    NotFound,
    PreconditionFailed,
    ToolSet,
    add_transfer_tool,
    evaluate_arithmetic,
    identifier,
    money,
    round_money,
    text,
)

from ._models import (
    Address,
    Airport,
    AirportCode,
    AirportList,
    Cabin,
    Calculation,
    CertificateIssued,
    DirectFlight,
    DirectFlightSearch,
    FlightInfo,
    FlightNumber,
    FlightStatus,
    FlightType,
    Insurance,
    Name,
    OneStopSearch,
    Passenger,
    PassengerInfo,
    PaymentInfo,
    PaymentMethod,
    PricesByCabin,
    Reservation,
    SeatsByCabin,
    User,
)
from ._schema import BAG_FEE, INSURANCE_FEE

tools = ToolSet()

UserId = identifier("user id, e.g. mia_li_3668")
ReservationId = Annotated[str, Field(pattern=r"^[A-Za-z0-9]{6}$",
                                     description="six-character reservation id, e.g. 4WQ150")]
PaymentId = identifier("payment method id from the user's profile, e.g. credit_card_4421486 or gift_card_7359776")
FlightDate = IsoDate
Bags = Annotated[int, Field(ge=0, le=50)]
Flights = Annotated[list[FlightInfo], Field(
    min_length=1, max_length=8,
    description="every flight of the itinerary in travel order (outbound, then return for a round trip)")]
Passengers = Annotated[list[PassengerInfo], Field(min_length=1, max_length=5,
                                                  description="one to five passengers")]
PaymentMethods = Annotated[list[PaymentInfo], Field(
    min_length=1, max_length=5,
    description="methods from the user's profile and the amount for each; the amounts must add up to the total")]

MAX_CERTIFICATES, MAX_CREDIT_CARDS, MAX_GIFT_CARDS = 1, 1, 3
RESERVATION_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
CENT = 0.005


# -- lookups ---------------------------------------------------------------------------------------


def _user_row(ep: Episode, user_id: str) -> Any:
    uid = user_id.strip().lower()
    row = ep.query_one("SELECT * FROM users WHERE user_id = ?", (uid,))
    if row is None:
        raise NotFound(f"no user with id {user_id!r}", field="user_id")
    return row


def _reservation_row(ep: Episode, reservation_id: str) -> Any:
    rid = reservation_id.strip().upper()
    row = ep.query_one("SELECT * FROM reservations WHERE reservation_id = ?", (rid,))
    if row is None:
        raise NotFound(f"no reservation with id {reservation_id!r}", field="reservation_id")
    return row


def _airport(ep: Episode, code: str, field: str) -> str:
    iata = code.upper()
    if ep.query_one("SELECT 1 FROM airports WHERE iata = ?", (iata,)) is None:
        raise NotFound(f"no airport with code {code!r}; list_all_airports gives the codes served", field=field)
    return iata


def _flight_row(ep: Episode, flight_number: str, field: str = "flight_number") -> Any:
    row = ep.query_one("SELECT * FROM flights WHERE flight_number = ?", (flight_number.upper(),))
    if row is None:
        raise NotFound(f"no flight {flight_number!r}", field=field)
    return row


def _flight_date_row(ep: Episode, flight_number: str, date: str, field: str = "date") -> Any:
    row = ep.query_one("SELECT * FROM flight_dates WHERE flight_number = ? AND date = ?",
                       (flight_number.upper(), date))
    if row is None:
        span = ep.query_one("SELECT MIN(date), MAX(date) FROM flight_dates")
        raise NotFound(f"flight {flight_number.upper()} does not operate on {date} "
                       f"(flights are scheduled from {span[0]} to {span[1]})", field=field)
    return row


def _user_model(ep: Episode, row: Any) -> User:
    uid = row["user_id"]
    methods = ep.query("SELECT * FROM payment_methods WHERE user_id = ? AND status = 'active' "
                       "ORDER BY payment_id", (uid,))
    saved = ep.query("SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ? "
                     "ORDER BY position", (uid,))
    reservations = ep.query("SELECT reservation_id FROM reservations WHERE user_id = ? "
                            "ORDER BY created_at, reservation_id", (uid,))
    return User(
        user_id=uid,
        name=Name(first_name=row["first_name"], last_name=row["last_name"]),
        address=Address(address1=row["address1"], address2=row["address2"], city=row["city"],
                        country=row["country"], state=row["state"], zip=row["zip"]),
        email=row["email"],
        dob=row["dob"],
        payment_methods={m["payment_id"]: PaymentMethod(
            source=m["source"], id=m["payment_id"], brand=m["brand"], last_four=m["last_four"],
            amount=m["balance"]) for m in methods},
        saved_passengers=[Passenger(**dict(p)) for p in saved],
        membership=row["membership"],
        reservations=[r[0] for r in reservations],
    )


def _reservation_model(ep: Episode, row: Any) -> Reservation:
    rid = row["reservation_id"]
    legs = ep.query(
        "SELECT rf.flight_number, f.origin, f.destination, rf.date, rf.price FROM reservation_flights rf "
        "JOIN flights f USING (flight_number) WHERE rf.reservation_id = ? ORDER BY rf.position", (rid,))
    passengers = ep.query("SELECT first_name, last_name, dob FROM reservation_passengers "
                          "WHERE reservation_id = ? ORDER BY position", (rid,))
    payments = ep.query("SELECT payment_id, amount FROM payments WHERE reservation_id = ? ORDER BY position",
                        (rid,))
    # One validation of plain rows: the same model as a constructor per part, in a fraction of the time.
    return Reservation.model_validate({
        "reservation_id": rid, "user_id": row["user_id"], "origin": row["origin"], "destination": row["destination"],
        "flight_type": row["flight_type"], "cabin": row["cabin"],
        "flights": [dict(leg) for leg in legs],
        "passengers": [dict(p) for p in passengers],
        "payment_history": [dict(p) for p in payments],
        "created_at": row["created_at"], "total_baggages": row["total_baggages"],
        "nonfree_baggages": row["nonfree_baggages"], "insurance": row["insurance"], "status": row["status"],
    })


def _direct_flight(flight: Any, day: Any) -> DirectFlight:
    return DirectFlight(
        flight_number=flight["flight_number"], origin=flight["origin"], destination=flight["destination"],
        status="available", scheduled_departure_time_est=flight["scheduled_departure_time_est"],
        scheduled_arrival_time_est=flight["scheduled_arrival_time_est"], date=day["date"],
        available_seats=SeatsByCabin(basic_economy=day["seats_basic_economy"], economy=day["seats_economy"],
                                     business=day["seats_business"]),
        prices=PricesByCabin(basic_economy=day["price_basic_economy"], economy=day["price_economy"],
                             business=day["price_business"]),
    )


# -- itineraries -----------------------------------------------------------------------------------


def _times(flight: Any, date: str) -> tuple[datetime, datetime]:
    """Scheduled departure and arrival of a flight on a date, as datetimes (EST)."""
    day = Date.fromisoformat(date)
    dep = datetime.combine(day, datetime.strptime(flight["scheduled_departure_time_est"], "%H:%M:%S").time())
    arr_text = flight["scheduled_arrival_time_est"]
    arr = datetime.combine(day, datetime.strptime(arr_text[:8], "%H:%M:%S").time())
    if arr_text.endswith("+1"):
        arr += timedelta(days=1)
    return dep, arr


def _check_itinerary(legs: list[tuple[Any, str]], origin: str, destination: str, flight_type: str,
                     *, must_reach_destination: bool) -> None:
    """Legs (flight row, date) must connect in time and place and start/end where the trip does."""
    if legs[0][0]["origin"] != origin:
        raise InvalidArguments(f"the first flight {legs[0][0]['flight_number']} leaves from "
                               f"{legs[0][0]['origin']}, not from the trip's origin {origin}", field="flights")
    for (prev, prev_date), (nxt, nxt_date) in zip(legs, legs[1:], strict=False):
        if nxt["origin"] != prev["destination"]:
            raise InvalidArguments(
                f"flight {nxt['flight_number']} leaves from {nxt['origin']}, but the flight before it "
                f"({prev['flight_number']}) lands at {prev['destination']}", field="flights")
        if _times(nxt, nxt_date)[0] < _times(prev, prev_date)[1]:
            raise InvalidArguments(
                f"flight {nxt['flight_number']} on {nxt_date} departs before flight {prev['flight_number']} "
                f"on {prev_date} lands; give the flights in travel order with feasible connections",
                field="flights")
    end = legs[-1][0]["destination"]
    expected_end = origin if flight_type == "round_trip" else destination
    if end != expected_end:
        raise InvalidArguments(f"a {flight_type} trip from {origin} must end at {expected_end}, but the last "
                               f"flight lands at {end}", field="flights")
    if must_reach_destination and not any(f["destination"] == destination for f, _ in legs):
        raise InvalidArguments(f"no flight of this round trip lands at its destination {destination}",
                               field="flights")


def _resolve_legs(ep: Episode, flights: list[FlightInfo]) -> list[tuple[Any, str]]:
    """(flight row, date) per requested flight; unknown flights or dates are NotFound."""
    keys = [(f.flight_number.upper(), f.date) for f in flights]
    repeated = [f"{n} on {d}" for (n, d), c in Counter(keys).items() if c > 1]
    if repeated:
        raise InvalidArguments(f"flight {repeated[0]} is listed twice", field="flights")
    legs = []
    for i, (number, date) in enumerate(keys):
        legs.append((_flight_row(ep, number, field=f"flights.{i}.flight_number"), date))
        _flight_date_row(ep, number, date, field=f"flights.{i}.date")
    return legs


def _bookable_price(ep: Episode, number: str, date: str, cabin: str, passengers: int, index: int) -> float:
    """Current price of a seat in `cabin`, after checking the flight can be booked for everyone."""
    day = _flight_date_row(ep, number, date, field=f"flights.{index}.date")
    if day["status"] != "available":
        raise PreconditionFailed(f"flight {number} on {date} is {day['status']}; only flights with status "
                                 "'available' can be booked", field=f"flights.{index}")
    seats = day[f"seats_{cabin}"]
    if seats < passengers:
        raise PreconditionFailed(f"flight {number} on {date} has {seats} {cabin} seat(s) left; "
                                 f"{passengers} needed", field=f"flights.{index}")
    return float(day[f"price_{cabin}"])


def _move_seats(ep: Episode, number: str, date: str, cabin: str, delta: int) -> None:
    """Take (delta < 0) or release (delta > 0) seats; only a bookable flight date has seat counts."""
    ep.execute(f"UPDATE flight_dates SET seats_{cabin} = seats_{cabin} + ? "
               "WHERE flight_number = ? AND date = ? AND status = 'available'", (delta, number, date))


# -- payments --------------------------------------------------------------------------------------


def _payment_method(ep: Episode, payment_id: str, user_id: str, field: str) -> Any:
    row = ep.query_one("SELECT * FROM payment_methods WHERE payment_id = ?", (payment_id.strip(),))
    if row is None:
        raise NotFound(f"no payment method {payment_id!r}", field=field)
    if row["user_id"] != user_id:
        raise PreconditionFailed(f"payment method {payment_id} is not in the profile of user {user_id}; "
                                 "only the user's own saved methods can be used", field=field)
    if row["status"] != "active":
        raise PreconditionFailed(f"certificate {payment_id} was already redeemed", field=field)
    return row


def _next_position(ep: Episode, table: str, reservation_id: str) -> int:
    return ep.query_one(f"SELECT COALESCE(MAX(position), -1) + 1 FROM {table} WHERE reservation_id = ?",
                        (reservation_id,))[0]


def _record_payment(ep: Episode, reservation_id: str, payment_id: str, amount: float) -> None:
    ep.execute("INSERT INTO payments VALUES (?, ?, ?, ?, ?, ?)",
               (reservation_id, _next_position(ep, "payments", reservation_id), payment_id, round_money(amount),
                "payment" if amount > 0 else "refund", ep.now_iso()))


def _charge_for_update(ep: Episode, reservation_id: str, user_id: str, payment_id: str, amount: float) -> None:
    """Charge (amount > 0) or refund (amount < 0) one credit card or gift card for a change.

    The method is checked even when nothing is owed (tau2's rule); certificates cannot pay for changes.
    """
    method = _payment_method(ep, payment_id, user_id, "payment_id")
    if method["source"] == "certificate":
        raise PreconditionFailed("a certificate cannot pay for a change; use a credit card or gift card from "
                                 "the user's profile", field="payment_id")
    if method["source"] == "gift_card" and amount > method["balance"] + CENT:
        raise PreconditionFailed(f"gift card {payment_id} has {method['balance']:.2f} left; the change costs "
                                 f"{amount:.2f}", field="payment_id")
    if abs(amount) < CENT:
        return
    if method["source"] == "gift_card":
        ep.execute("UPDATE payment_methods SET balance = ? WHERE payment_id = ?",
                   (round_money(method["balance"] - amount), method["payment_id"]))
    _record_payment(ep, reservation_id, method["payment_id"], amount)


def _new_reservation_id(ep: Episode) -> str:
    """A fresh six-character id, a pure function of the episode's state (same calls -> same id)."""
    count = ep.query_one("SELECT COUNT(*) FROM reservations")[0]
    for attempt in range(1000):
        digest = hashlib.sha256(f"shiftbox-airline:{count}:{attempt}".encode()).digest()
        candidate = "".join(RESERVATION_ID_ALPHABET[b % 36] for b in digest[:6])
        if ep.query_one("SELECT 1 FROM reservations WHERE reservation_id = ?", (candidate,)) is None:
            return candidate
    raise RuntimeError("no free reservation id")  # pragma: no cover - 36**6 ids


# -- users, reservations, airports -------------------------------------------------------------------


@tools.tool(read_only=True)
def get_user_details(ep: Episode, user_id: UserId) -> User:
    """Get a user's profile: name, address, email, date of birth, membership level (regular, silver,
    gold), saved passengers, payment methods (credit cards; gift cards and certificates with their
    remaining balance) and the ids of their reservations, oldest booking first."""
    return _user_model(ep, _user_row(ep, user_id))


@tools.tool(read_only=True)
def get_reservation_details(ep: Episode, reservation_id: ReservationId) -> Reservation:
    """Get a reservation: user, origin and destination, trip type, cabin, flights (with the price
    paid per passenger), passengers, payment history (refunds are negative), creation time, checked
    bags, insurance and status ('active' or 'cancelled')."""
    return _reservation_model(ep, _reservation_row(ep, reservation_id))


@tools.tool(read_only=True)
def list_all_airports(ep: Episode) -> AirportList:
    """List every airport served, as IATA code and city."""
    rows = ep.query("SELECT iata, city FROM airports ORDER BY iata")
    return AirportList(airports=[Airport(**dict(r)) for r in rows])


# -- flights ---------------------------------------------------------------------------------------


@tools.tool(read_only=True)
def search_direct_flight(ep: Episode, origin: AirportCode, destination: AirportCode, date: FlightDate) -> DirectFlightSearch:
    """Search nonstop flights from origin to destination on a date (YYYY-MM-DD).

    Only bookable flights (status 'available') are listed, with seats left and the current price per
    passenger for each cabin (basic_economy, economy, business). Times are EST; '+1' means the next day.
    """
    o, d = _airport(ep, origin, "origin"), _airport(ep, destination, "destination")
    rows = ep.query(
        "SELECT f.*, fd.* FROM flights f CROSS JOIN flight_dates fd USING (flight_number) "
        "WHERE f.origin = ? AND f.destination = ? AND fd.date = ? AND fd.status = 'available' "
        "ORDER BY f.scheduled_departure_time_est, f.flight_number", (o, d, date))
    return DirectFlightSearch(origin=o, destination=d, date=date, flights=[_direct_flight(r, r) for r in rows])


@tools.tool(read_only=True)
def search_onestop_flight(ep: Episode, origin: AirportCode, destination: AirportCode, date: FlightDate) -> OneStopSearch:
    """Search one-stop itineraries from origin to destination departing on a date (YYYY-MM-DD).

    Each itinerary is a pair of bookable flights: the first leaves on the date, the second leaves the
    connecting airport after the first lands (on the landing day, which is the next day when the first
    flight's arrival time ends in '+1'). Seats and prices are per flight and cabin.
    """
    o, d = _airport(ep, origin, "origin"), _airport(ep, destination, "destination")
    firsts = ep.query(
        "SELECT f.*, fd.* FROM flights f CROSS JOIN flight_dates fd USING (flight_number) "
        "WHERE f.origin = ? AND f.destination NOT IN (?, ?) AND fd.date = ? AND fd.status = 'available' "
        "ORDER BY f.scheduled_departure_time_est, f.flight_number", (o, d, o, date))
    itineraries = []
    for first in firsts:
        _, lands = _times(first, date)
        seconds = ep.query(
            "SELECT f.*, fd.* FROM flights f CROSS JOIN flight_dates fd USING (flight_number) "
            "WHERE f.origin = ? AND f.destination = ? AND fd.date = ? AND fd.status = 'available' "
            "AND f.scheduled_departure_time_est >= ? ORDER BY f.scheduled_departure_time_est, f.flight_number",
            (first["destination"], d, lands.date().isoformat(), lands.time().isoformat()))
        itineraries += [[_direct_flight(first, first), _direct_flight(s, s)] for s in seconds]
    return OneStopSearch(origin=o, destination=d, date=date, itineraries=itineraries)


@tools.tool(read_only=True)
def get_flight_status(ep: Episode, flight_number: FlightNumber, date: FlightDate) -> FlightStatus:
    """Get the status of a flight on a date: 'available' (bookable), 'on time' or 'delayed' (not yet
    departed, with estimated times), 'flying' (departed), 'landed' (with actual times) or 'cancelled'."""
    flight = _flight_row(ep, flight_number)
    day = _flight_date_row(ep, flight["flight_number"], date)
    return FlightStatus(
        flight_number=flight["flight_number"], date=date, origin=flight["origin"],
        destination=flight["destination"], status=day["status"],
        scheduled_departure_time_est=flight["scheduled_departure_time_est"],
        scheduled_arrival_time_est=flight["scheduled_arrival_time_est"],
        estimated_departure_time_est=day["estimated_departure_time_est"],
        estimated_arrival_time_est=day["estimated_arrival_time_est"],
        actual_departure_time_est=day["actual_departure_time_est"],
        actual_arrival_time_est=day["actual_arrival_time_est"],
    )


# -- booking and cancelling --------------------------------------------------------------------------


@tools.tool(read_only=False)
def book_reservation(
    ep: Episode,
    user_id: UserId,
    origin: AirportCode,
    destination: AirportCode,
    flight_type: FlightType,
    cabin: Cabin,
    flights: Flights,
    passengers: Passengers,
    payment_methods: PaymentMethods,
    total_baggages: Bags,
    nonfree_baggages: Bags,
    insurance: Insurance,
) -> Reservation:
    """Book a reservation for a user and charge it to payment methods of the user's profile.

    All flights must be 'available' with enough seats in the one cabin for every passenger, and must
    connect: a one_way trip goes from origin to destination, a round_trip from origin via destination
    back to origin. Total = sum of the flights' current prices x passengers + 30 per passenger if
    insurance is 'yes' + 50 per non-free checked bag. The payment amounts must add up to the total
    exactly; at most one certificate, one credit card and three gift cards; a gift card or certificate
    must hold the amount. Gift cards are debited; a certificate is redeemed whole (its remainder is
    forfeited). Seats are taken. Returns the reservation with its new id.
    """
    user = _user_row(ep, user_id)
    uid = user["user_id"]
    o, d = _airport(ep, origin, "origin"), _airport(ep, destination, "destination")
    if o == d:
        raise InvalidArguments("origin and destination are the same airport", field="destination")
    if nonfree_baggages > total_baggages:
        raise InvalidArguments(f"nonfree_baggages ({nonfree_baggages}) cannot exceed total_baggages "
                               f"({total_baggages})", field="nonfree_baggages")
    legs = _resolve_legs(ep, flights)
    _check_itinerary(legs, o, d, flight_type, must_reach_destination=flight_type == "round_trip")
    pax = len(passengers)
    prices = [_bookable_price(ep, f["flight_number"], day, cabin, pax, i) for i, (f, day) in enumerate(legs)]
    total = round_money(sum(prices) * pax + (INSURANCE_FEE * pax if insurance == "yes" else 0)
                        + BAG_FEE * nonfree_baggages)

    methods = _booking_methods(ep, uid, payment_methods)
    paid = round_money(sum(p.amount for p in payment_methods))
    if abs(paid - total) >= CENT:
        raise PreconditionFailed(
            f"payment amounts do not add up: the total price is {total:.2f} "
            f"({'+'.join(f'{p:.2f}' for p in prices)} x {pax} passenger(s)"
            f"{f' + insurance {INSURANCE_FEE * pax:.2f}' if insurance == 'yes' else ''}"
            f"{f' + bags {BAG_FEE * nonfree_baggages:.2f}' if nonfree_baggages else ''}), but {paid:.2f} was given",
            field="payment_methods")

    rid = _new_reservation_id(ep)
    now = ep.now_iso()
    ep.execute("INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active')",
               (rid, uid, o, d, flight_type, cabin, now, total_baggages, nonfree_baggages, insurance))
    for i, ((flight, day), price) in enumerate(zip(legs, prices, strict=True)):
        ep.execute("INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?)",
                   (rid, i, flight["flight_number"], day, price))
        _move_seats(ep, flight["flight_number"], day, cabin, -pax)
    for i, p in enumerate(passengers):
        ep.execute("INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
                   (rid, i, " ".join(p.first_name.split()), " ".join(p.last_name.split()), p.dob))
    _charge(ep, rid, methods, payment_methods)
    return _reservation_model(ep, _reservation_row(ep, rid))


def _booking_methods(ep: Episode, user_id: str, payment_methods: list[PaymentInfo]) -> list[Any]:
    """The user's payment method rows for a booking's payments, each listed once, within the per-kind limits
    and (gift cards, certificates) holding its amount; an error naming the offending payment otherwise."""
    ids = [p.payment_id.strip() for p in payment_methods]
    repeated = [i for i, c in Counter(ids).items() if c > 1]
    if repeated:
        raise InvalidArguments(f"payment method {repeated[0]} is listed twice; give one amount per method",
                               field="payment_methods")
    methods = [_payment_method(ep, pid, user_id, f"payment_methods.{i}.payment_id") for i, pid in enumerate(ids)]
    kinds = Counter(m["source"] for m in methods)
    for source, limit in (("certificate", MAX_CERTIFICATES), ("credit_card", MAX_CREDIT_CARDS),
                          ("gift_card", MAX_GIFT_CARDS)):
        if kinds[source] > limit:
            raise PreconditionFailed(f"a reservation can use at most one certificate, one credit card and "
                                     f"three gift cards; {kinds[source]} {source.replace('_', ' ')}s given",
                                     field="payment_methods")
    for i, (method, pay) in enumerate(zip(methods, payment_methods, strict=True)):
        if method["source"] != "credit_card" and pay.amount > method["balance"] + CENT:
            raise PreconditionFailed(f"{method['payment_id']} has {method['balance']:.2f} left, less than "
                                     f"{pay.amount:.2f}", field=f"payment_methods.{i}.amount")
    return methods


def _charge(ep: Episode, reservation_id: str, methods: list[Any], payment_methods: list[PaymentInfo]) -> None:
    """Take a booking's payments: gift cards are debited, a certificate is redeemed whole, each is recorded."""
    for method, pay in zip(methods, payment_methods, strict=True):
        if method["source"] == "gift_card":
            ep.execute("UPDATE payment_methods SET balance = ? WHERE payment_id = ?",
                       (round_money(method["balance"] - pay.amount), method["payment_id"]))
        elif method["source"] == "certificate":
            ep.execute("UPDATE payment_methods SET balance = 0, status = 'redeemed' WHERE payment_id = ?",
                       (method["payment_id"],))
        _record_payment(ep, reservation_id, method["payment_id"], pay.amount)


@tools.tool(read_only=False, destructive=True, idempotent=True)
def cancel_reservation(ep: Episode, reservation_id: ReservationId) -> Reservation:
    """Cancel a whole reservation: what was paid (net of earlier refunds) is refunded to the methods
    that paid it (gift cards are credited at once, a redeemed certificate is reissued with the refunded
    amount, credit cards get a refund record) and the seats are released. A reservation with a flight that has already departed
    cannot be cancelled. This tool does not check the cancellation policy (24 hours, insurance,
    business, airline-cancelled flight): confirm it applies first. Cancelling a cancelled reservation
    changes nothing."""
    row = _reservation_row(ep, reservation_id)
    rid = row["reservation_id"]
    if row["status"] == "cancelled":
        return _reservation_model(ep, row)
    flown = ep.query_one(
        "SELECT rf.flight_number, rf.date, fd.status FROM reservation_flights rf JOIN flight_dates fd "
        "USING (flight_number, date) WHERE rf.reservation_id = ? AND fd.status IN ('flying', 'landed') "
        "ORDER BY rf.position LIMIT 1", (rid,))
    if flown is not None:
        raise PreconditionFailed(f"flight {flown[0]} on {flown[1]} of reservation {rid} is {flown[2]}; a "
                                 "reservation with a flown segment cannot be cancelled (transfer to a human agent)")
    nets = ep.query("SELECT payment_id, ROUND(SUM(amount), 2) AS net, MIN(position) AS first FROM payments "
                    "WHERE reservation_id = ? GROUP BY payment_id ORDER BY first", (rid,))
    # what the user paid in all, net of earlier refunds, goes back to the methods that paid, in order
    owed = round_money(sum(pay["net"] for pay in nets))
    for pay in nets:
        refund = round_money(min(pay["net"], owed))
        if refund < CENT:
            continue
        owed = round_money(owed - refund)
        method = ep.query_one("SELECT * FROM payment_methods WHERE payment_id = ?", (pay["payment_id"],))
        if method["source"] != "credit_card":
            ep.execute("UPDATE payment_methods SET balance = ?, status = 'active' WHERE payment_id = ?",
                       (round_money(method["balance"] + refund), pay["payment_id"]))
        _record_payment(ep, rid, pay["payment_id"], -refund)
    pax = ep.query_one("SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?", (rid,))[0]
    for leg in ep.query("SELECT flight_number, date FROM reservation_flights WHERE reservation_id = ?", (rid,)):
        _move_seats(ep, leg["flight_number"], leg["date"], row["cabin"], pax)
    ep.execute("UPDATE reservations SET status = 'cancelled' WHERE reservation_id = ?", (rid,))
    return _reservation_model(ep, _reservation_row(ep, rid))


# -- changes -----------------------------------------------------------------------------------------


def _active_reservation(ep: Episode, reservation_id: str) -> Any:
    row = _reservation_row(ep, reservation_id)
    if row["status"] != "active":
        raise PreconditionFailed(f"reservation {row['reservation_id']} is cancelled and cannot be changed")
    return row


@tools.tool(read_only=False, destructive=True, idempotent=True)
def update_reservation_flights(
    ep: Episode,
    reservation_id: ReservationId,
    cabin: Cabin,
    flights: Annotated[list[FlightInfo], Field(
        min_length=1, max_length=8,
        description="EVERY flight of the new itinerary in travel order, including the unchanged ones")],
    payment_id: PaymentId,
) -> Reservation:
    """Change the flights and/or cabin of a reservation; pass the ENTIRE new itinerary.

    A flight kept on the same date in the same cabin keeps the price paid; every other flight must be
    'available' with seats for all passengers and is priced at today's fare (so a cabin change reprices
    every flight, and is impossible once a flight has been flown). The itinerary must still start at
    the reservation's origin and end at its destination (one_way) or back at its origin (round_trip).
    Basic economy flights cannot be changed (the cabin can). The fare difference x passengers is charged
    to, or refunded to, payment_id: a credit card or gift card of the user (not a certificate).
    """
    row = _active_reservation(ep, reservation_id)
    rid, uid, old_cabin = row["reservation_id"], row["user_id"], row["cabin"]
    pax = ep.query_one("SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?", (rid,))[0]
    old = ep.query("SELECT flight_number, date, price FROM reservation_flights WHERE reservation_id = ? "
                   "ORDER BY position", (rid,))
    old_keys = [(leg["flight_number"], leg["date"]) for leg in old]
    legs = _resolve_legs(ep, flights)
    new_keys = [(f["flight_number"], day) for f, day in legs]
    if old_cabin == "basic_economy" and sorted(new_keys) != sorted(old_keys):
        raise PreconditionFailed(f"reservation {rid} is basic economy: its flights cannot be changed (its "
                                 "cabin can, keeping the same flights)", field="flights")
    _check_itinerary(legs, row["origin"], row["destination"], row["flight_type"], must_reach_destination=False)
    kept = {(leg["flight_number"], leg["date"]): leg["price"] for leg in old
            if cabin == old_cabin and (leg["flight_number"], leg["date"]) in new_keys}
    prices = [kept[key] if key in kept else _bookable_price(ep, key[0], key[1], cabin, pax, i)
              for i, key in enumerate(new_keys)]
    difference = round_money((sum(prices) - sum(leg["price"] for leg in old)) * pax)
    _charge_for_update(ep, rid, uid, payment_id, difference)

    for key in old_keys:
        if key not in kept:
            _move_seats(ep, key[0], key[1], old_cabin, pax)
    for key in new_keys:
        if key not in kept:
            _move_seats(ep, key[0], key[1], cabin, -pax)
    ep.execute("DELETE FROM reservation_flights WHERE reservation_id = ?", (rid,))
    for i, (key, price) in enumerate(zip(new_keys, prices, strict=True)):
        ep.execute("INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?)", (rid, i, key[0], key[1], price))
    ep.execute("UPDATE reservations SET cabin = ? WHERE reservation_id = ?", (cabin, rid))
    return _reservation_model(ep, _reservation_row(ep, rid))


@tools.tool(read_only=False, destructive=True, idempotent=True)
def update_reservation_baggages(
    ep: Episode,
    reservation_id: ReservationId,
    total_baggages: Annotated[int, Field(ge=0, le=50, description="new total of checked bags")],
    nonfree_baggages: Annotated[int, Field(ge=0, le=50, description="how many of them are paid bags")],
    payment_id: PaymentId,
) -> Reservation:
    """Set a reservation's checked bags. Bags can be added, not removed. Each non-free bag beyond the
    reservation's current non-free bags costs 50, charged to payment_id (a credit card or gift card of
    the user; never a certificate). The free allowance depends on membership and cabin: work out
    nonfree_baggages from the policy before calling."""
    row = _active_reservation(ep, reservation_id)
    rid = row["reservation_id"]
    if nonfree_baggages > total_baggages:
        raise InvalidArguments(f"nonfree_baggages ({nonfree_baggages}) cannot exceed total_baggages "
                               f"({total_baggages})", field="nonfree_baggages")
    if total_baggages < row["total_baggages"]:
        raise PreconditionFailed(f"reservation {rid} has {row['total_baggages']} checked bag(s); bags can be "
                                 "added but not removed", field="total_baggages")
    cost = BAG_FEE * max(0, nonfree_baggages - row["nonfree_baggages"])
    _charge_for_update(ep, rid, row["user_id"], payment_id, cost)
    ep.execute("UPDATE reservations SET total_baggages = ?, nonfree_baggages = ? WHERE reservation_id = ?",
               (total_baggages, nonfree_baggages, rid))
    return _reservation_model(ep, _reservation_row(ep, rid))


@tools.tool(read_only=False, destructive=True, idempotent=True)
def update_reservation_passengers(ep: Episode, reservation_id: ReservationId, passengers: Passengers) -> Reservation:
    """Replace the passengers of a reservation (names and dates of birth). The number of passengers
    cannot change: give exactly as many as the reservation has."""
    row = _active_reservation(ep, reservation_id)
    rid = row["reservation_id"]
    count = ep.query_one("SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?", (rid,))[0]
    if len(passengers) != count:
        raise PreconditionFailed(f"reservation {rid} has {count} passenger(s) and {len(passengers)} were given; "
                                 "the number of passengers cannot change", field="passengers")
    ep.execute("DELETE FROM reservation_passengers WHERE reservation_id = ?", (rid,))
    for i, p in enumerate(passengers):
        ep.execute("INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
                   (rid, i, " ".join(p.first_name.split()), " ".join(p.last_name.split()), p.dob))
    return _reservation_model(ep, _reservation_row(ep, rid))


# -- compensation, arithmetic, handoff ---------------------------------------------------------------


@tools.tool(read_only=False)
def send_certificate(
    ep: Episode, user_id: UserId,
    amount: money("certificate value in USD (policy: 100 x passengers for a cancelled flight, 50 x "
                  "passengers for a delay)", maximum=10_000),
) -> CertificateIssued:
    """Issue a travel certificate to a user as compensation; it is added to the user's payment
    methods. Only when the policy allows compensation, after confirming the facts."""
    uid = _user_row(ep, user_id)["user_id"]
    payment_id = ep.next_id("payment_methods", "payment_id", "certificate")
    ep.execute("INSERT INTO payment_methods VALUES (?, ?, 'certificate', NULL, NULL, ?, 'active')",
               (payment_id, uid, amount))
    return CertificateIssued(user_id=uid, payment_id=payment_id, amount=amount,
                             message=f"Certificate {payment_id} added to user {uid} with amount {amount:.2f}.")


@tools.tool(read_only=True)
def calculate(ep: Episode, expression: text("arithmetic with digits, + - * / ( ) . and spaces, e.g. "
                                            "'2 * (350 - 122)'", max_length=200)) -> Calculation:
    """Evaluate an arithmetic expression (numbers, + - * /, parentheses); the result is rounded to 2
    decimals. Use it for fares, fees and refunds instead of mental arithmetic."""
    return Calculation(expression=expression, result=evaluate_arithmetic(expression))


add_transfer_tool(tools, party="user", description="""\
Hand the conversation to a human agent, with a summary. Only when the user explicitly asks for
one, or the request cannot be handled with these tools within the policy; after calling it, tell
the user they are being transferred.""")
