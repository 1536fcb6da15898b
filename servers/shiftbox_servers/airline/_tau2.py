"""tau2-bench's 14 airline tools as tau2 serves them (`--toolset tau2`), and as AgentChangeBench's fork serves
them (`--toolset agentchangebench`: the same tools, whose update tools name the payment method they cannot
find, fork commit 12315af), over the same database as the native tools.

Thin adapters: each checks what tau2's tool checks, in tau2's order and with tau2's error message (kinded),
matches ids exactly, returns tau2's result shape (reservations and users as tau2 dumps them, a flight's
status and the certificate message as text, searches and airports as lists under "result") and writes the
state tau2 writes: fixed new ids (reservations HATHAT, HATHAU, HATHAV; certificates certificate_3221322 to
certificate_3221324), tau2's clock on new reservations, refunds recorded without crediting anything, seats
taken by a booking only (never released, never taken by a flight change).

Different only where tau2 corrupts data or crashes (docs/servers.md, "Deliberate differences from the
reference tools"): a second cancellation changes nothing, and a booking or bag change that would store
negative balances or seat counts, impossible bag counts, unknown airports or zero and negative payments is
refused. A hand-off is also stored as a transfer, as every tool set does.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from shiftbox_servers.kit import (
    Episode,
    InvalidArguments,
    NotFound,
    PreconditionFailed,
    ToolSet,
    record_transfer,
    reference_calculate,
    reference_result,
    round_money,
)

from . import _models
from ._models import Address, Cabin, FlightType, Insurance, Name
from ._models import Passenger as Person
from ._schema import BAG_FEE, CABINS, CLOCK_START, INSURANCE_FEE
from ._tools import _move_seats, _record_payment

NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = ("certificate_3221322", "certificate_3221323", "certificate_3221324")
TAU2_NOW = CLOCK_START.isoformat(timespec="seconds")
"""tau2's airline clock: every reservation it books is created at 2024-05-15T15:00:00."""
METHOD_NOT_FOUND = "Payment method not found"


def _whole(value: float) -> int | float:
    """A stored amount as tau2 holds it: prices and payments are whole dollars (ints) in its data model."""
    return int(value) if float(value).is_integer() else value


def _arg(description: str) -> Any:
    return Annotated[str, Field(description=description)]


# -- arguments and results in tau2's shapes -----------------------------------------------------------


class FlightArg(BaseModel):
    flight_number: str = Field(description="the flight number, such as 'HAT001'")
    date: str = Field(description="the flight's date, 'YYYY-MM-DD', such as '2024-05-01'")


class Payment(BaseModel):
    payment_id: str = Field(description="a payment method id of the user's profile")
    amount: int = Field(description="the amount in whole dollars")


class CreditCard(BaseModel):
    source: Literal["credit_card"]
    id: str
    brand: str
    last_four: str


class Balance(BaseModel):
    source: Literal["gift_card", "certificate"]
    id: str
    amount: float


class User(_models.User):
    payment_methods: dict[str, CreditCard | Balance]
    reservations: list[str]


class Leg(_models.ReservationFlight):
    price: int | float


class Paid(_models.Payment):
    amount: int | float


class Reservation(_models.Reservation):
    """The native reservation in tau2's types: whole-dollar amounts, `status` null until cancelled."""

    flights: list[Leg]
    payment_history: list[Paid]
    status: Literal["cancelled"] | None


class DirectFlight(_models.DirectFlight):
    date: str | None
    available_seats: dict[str, int]
    prices: dict[str, int | float]


class Airport(BaseModel):
    iata: str
    city: str


class Airports(BaseModel):
    result: list[Airport]


class DirectFlights(BaseModel):
    result: list[DirectFlight]


class OneStopFlights(BaseModel):
    result: list[list[DirectFlight]] = Field(description="pairs [first flight, connecting flight]")


ReservationId = _arg("the reservation id, such as 'ZFA04Y'")
UserId = _arg("the user id, such as 'sara_doe_496'")
PaymentId = _arg("a payment method id of the user's profile, such as 'credit_card_7815826' or 'gift_card_7815826'")
ReservationResult = Annotated[CallToolResult, Reservation]


# -- reads as tau2 does them ----------------------------------------------------------------------------


def _reservation_row(ep: Episode, reservation_id: str) -> Any:
    row = ep.query_one("SELECT * FROM reservations WHERE reservation_id = ?", (reservation_id,))
    if row is None:
        raise NotFound(f"Reservation {reservation_id} not found", field="reservation_id")
    return row


def _user_row(ep: Episode, user_id: str) -> Any:
    row = ep.query_one("SELECT * FROM users WHERE user_id = ?", (user_id,))
    if row is None:
        raise NotFound(f"User {user_id} not found", field="user_id")
    return row


def _flight_row(ep: Episode, flight_number: str) -> Any:
    row = ep.query_one("SELECT * FROM flights WHERE flight_number = ?", (flight_number,))
    if row is None:
        raise NotFound(f"Flight {flight_number} not found", field="flights")
    return row


def _flight_day(ep: Episode, flight_number: str, date: str) -> Any:
    _flight_row(ep, flight_number)
    row = ep.query_one("SELECT * FROM flight_dates WHERE flight_number = ? AND date = ?", (flight_number, date))
    if row is None:
        raise NotFound(f"Flight {flight_number} not found on date {date}", field="flights")
    return row


def _bookable(ep: Episode, flight_number: str, date: str, cabin: str, passengers: int) -> Any:
    """tau2's checks of a flight to book: it flies on the date, is available and has the seats."""
    day = _flight_day(ep, flight_number, date)
    if day["status"] != "available":
        raise PreconditionFailed(f"Flight {flight_number} not available on date {date}", field="flights")
    if day[f"seats_{cabin}"] < passengers:
        raise PreconditionFailed(f"Not enough seats on flight {flight_number}", field="flights")
    return day


def _profile_method(ep: Episode, user_id: str, payment_id: str) -> Any | None:
    """One of the methods in the user's profile (a redeemed certificate is no longer in it)."""
    return ep.query_one("SELECT * FROM payment_methods WHERE payment_id = ? AND user_id = ? AND status = 'active'",
                        (payment_id, user_id))


def _user(ep: Episode, row: Any) -> User:
    uid = row["user_id"]
    methods = ep.query("SELECT * FROM payment_methods WHERE user_id = ? AND status = 'active' ORDER BY rowid", (uid,))
    return User(
        user_id=uid, name=Name(first_name=row["first_name"], last_name=row["last_name"]),
        address=Address(address1=row["address1"], address2=row["address2"], city=row["city"],
                        country=row["country"], state=row["state"], zip=row["zip"]),
        email=row["email"], dob=row["dob"],
        payment_methods={m["payment_id"]: (
            CreditCard(source="credit_card", id=m["payment_id"], brand=m["brand"], last_four=m["last_four"])
            if m["source"] == "credit_card" else Balance(source=m["source"], id=m["payment_id"],
                                                         amount=float(m["balance"]))) for m in methods},
        saved_passengers=[Person(**dict(p)) for p in ep.query(
            "SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ? ORDER BY position", (uid,))],
        membership=row["membership"],
        reservations=[r[0] for r in ep.query("SELECT reservation_id FROM reservations WHERE user_id = ? "
                                             "ORDER BY rowid", (uid,))],
    )


def _reservation(ep: Episode, reservation_id: str) -> Reservation:
    row = _reservation_row(ep, reservation_id)
    rid = row["reservation_id"]
    legs = ep.query("SELECT rf.flight_number, f.origin, f.destination, rf.date, rf.price FROM reservation_flights rf "
                    "JOIN flights f USING (flight_number) WHERE rf.reservation_id = ? ORDER BY rf.position", (rid,))
    return Reservation(
        reservation_id=rid, user_id=row["user_id"], origin=row["origin"], destination=row["destination"],
        flight_type=row["flight_type"], cabin=row["cabin"],
        flights=[Leg(**{**dict(leg), "price": _whole(leg["price"])}) for leg in legs],
        passengers=[Person(**dict(p)) for p in ep.query(
            "SELECT first_name, last_name, dob FROM reservation_passengers WHERE reservation_id = ? "
            "ORDER BY position", (rid,))],
        payment_history=[Paid(payment_id=p["payment_id"], amount=_whole(p["amount"])) for p in ep.query(
            "SELECT payment_id, amount FROM payments WHERE reservation_id = ? ORDER BY position", (rid,))],
        created_at=row["created_at"], total_baggages=row["total_baggages"],
        nonfree_baggages=row["nonfree_baggages"], insurance=row["insurance"],
        status="cancelled" if row["status"] == "cancelled" else None,
    )


def _direct_flights(ep: Episode, date: str, origin: str | None, destination: str | None,
                    leave_after: str | None = None) -> list[DirectFlight]:
    """tau2's search: flights (in stored order) available on the date, from/to/leaving after as given."""
    where, params = ["fd.date = ?", "fd.status = 'available'"], [date]
    for clause, value in (("f.origin = ?", origin), ("f.destination = ?", destination),
                          ("f.scheduled_departure_time_est >= ?", leave_after)):
        if value is not None:
            where.append(clause)
            params.append(value)
    rows = ep.query(f"SELECT f.*, fd.* FROM flights f JOIN flight_dates fd USING (flight_number) "
                    f"WHERE {' AND '.join(where)} ORDER BY f.rowid", tuple(params))
    return [DirectFlight(
        flight_number=r["flight_number"], origin=r["origin"], destination=r["destination"], status="available",
        scheduled_departure_time_est=r["scheduled_departure_time_est"],
        scheduled_arrival_time_est=r["scheduled_arrival_time_est"], date=None,
        available_seats={c: r[f"seats_{c}"] for c in CABINS}, prices={c: _whole(r[f"price_{c}"]) for c in CABINS},
    ) for r in rows]


# -- writes ---------------------------------------------------------------------------------------------


def _pay_for_update(ep: Episode, reservation_id: str, user_id: str, payment_id: str, amount: int | float) -> None:
    """tau2's payment for a change: a profile method, not a certificate, a gift card holding the amount
    (debited, or credited when the amount is a refund); an entry unless the amount is 0."""
    method = _profile_method(ep, user_id, payment_id)
    if method is None:
        raise NotFound(METHOD_NOT_FOUND, field="payment_id")
    if method["source"] == "certificate":
        raise PreconditionFailed("Certificate cannot be used to update reservation", field="payment_id")
    if method["source"] == "gift_card":
        if method["balance"] < amount:
            raise PreconditionFailed("Gift card balance is not enough", field="payment_id")
        ep.execute("UPDATE payment_methods SET balance = ? WHERE payment_id = ?",
                   (round_money(method["balance"] - amount), payment_id))
    if amount != 0:
        _record_payment(ep, reservation_id, payment_id, amount)


def _write_legs(ep: Episode, reservation_id: str, legs: list[tuple[str, str, int | float]]) -> None:
    ep.execute("DELETE FROM reservation_flights WHERE reservation_id = ?", (reservation_id,))
    for i, (number, date, price) in enumerate(legs):
        ep.execute("INSERT INTO reservation_flights VALUES (?, ?, ?, ?, ?)", (reservation_id, i, number, date, price))


def _write_passengers(ep: Episode, reservation_id: str, passengers: list[Person]) -> None:
    ep.execute("DELETE FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,))
    for i, p in enumerate(passengers):
        ep.execute("INSERT INTO reservation_passengers VALUES (?, ?, ?, ?, ?)",
                   (reservation_id, i, p.first_name, p.last_name, p.dob))


def _check_bag_counts(total: int, nonfree: int) -> None:
    """Not tau2's: it stores any counts; the schema holds 0 <= nonfree <= total (a deliberate difference)."""
    if total < 0 or nonfree < 0:
        raise InvalidArguments("Baggage counts cannot be negative", field="total_baggages")
    if nonfree > total:
        raise InvalidArguments(f"nonfree_baggages ({nonfree}) cannot exceed total_baggages ({total})",
                               field="nonfree_baggages")


def _check_booking_state(ep: Episode, user_id: str, origin: str, destination: str, cabin: str,
                         days: list[Any], passengers: int, payments: list[Payment]) -> None:
    """Not tau2's (deliberate differences): what tau2 would store but the schema cannot hold — an unknown
    airport, a zero or negative payment, a flight listed so often its seats go negative, a method listed so
    often its balance goes negative."""
    for field, code in (("origin", origin), ("destination", destination)):
        if ep.query_one("SELECT 1 FROM airports WHERE iata = ?", (code,)) is None:
            raise NotFound(f"Airport {code} not found", field=field)
    for pay in payments:
        if pay.amount < 0:
            raise InvalidArguments(f"Payment amount for {pay.payment_id} cannot be negative", field="payment_methods")
    for (number, date), times in Counter((d["flight_number"], d["date"]) for d in days).items():
        day = next(d for d in days if (d["flight_number"], d["date"]) == (number, date))
        if day[f"seats_{cabin}"] < passengers * times:
            raise PreconditionFailed(f"Not enough seats on flight {number}", field="flights")
    listed: Counter[str] = Counter()
    for pay in payments:
        listed[pay.payment_id] += pay.amount
    for payment_id, amount in listed.items():
        method = _profile_method(ep, user_id, payment_id)
        if method["source"] != "credit_card" and method["balance"] < amount:
            raise PreconditionFailed(f"Not enough balance in payment method {payment_id}", field="payment_methods")


# -- tools (in tau2's source order) -----------------------------------------------------------------------


def book_reservation(
    ep: Episode, user_id: UserId, origin: _arg("the trip's origin airport code, such as 'SFO'"),
    destination: _arg("the trip's destination airport code, such as 'JFK'"), flight_type: FlightType,
    cabin: Cabin,
    flights: Annotated[list[FlightArg], Field(description="every flight of the trip, in travel order")],
    passengers: Annotated[list[Person], Field(description="every passenger")],
    payment_methods: Annotated[list[Payment], Field(description="the methods of the user's profile that pay, "
                                                                "with their amounts (adding up to the total)")],
    total_baggages: Annotated[int, Field(description="checked bags in all")],
    nonfree_baggages: Annotated[int, Field(description="checked bags to pay for")],
    insurance: Insurance,
) -> ReservationResult:
    """Book a reservation for a user. The total is each flight's price in the cabin times the passengers,
    plus 30 per passenger with insurance, plus 50 per non-free bag; the payments must add up to it
    exactly and gift cards and certificates must hold their amounts. Returns the new reservation."""
    user = _user_row(ep, user_id)
    rid = next((r for r in NEW_RESERVATION_IDS
                if ep.query_one("SELECT 1 FROM reservations WHERE reservation_id = ?", (r,)) is None), None)
    if rid is None:
        raise PreconditionFailed("Too many reservations")
    pax = len(passengers)
    total_price: int | float = 0
    days = []
    for flight in flights:
        day = _bookable(ep, flight.flight_number, flight.date, cabin, pax)
        days.append(day)
        total_price += _whole(day[f"price_{cabin}"]) * pax
    if insurance == "yes":
        total_price += int(INSURANCE_FEE) * pax
    total_price += int(BAG_FEE) * nonfree_baggages
    for pay in payment_methods:
        method = _profile_method(ep, user_id, pay.payment_id)
        if method is None:
            raise NotFound(f"Payment method {pay.payment_id} not found", field="payment_methods")
        if method["source"] != "credit_card" and method["balance"] < pay.amount:
            raise PreconditionFailed(f"Not enough balance in payment method {pay.payment_id}",
                                     field="payment_methods")
    total_payment = sum(pay.amount for pay in payment_methods)
    if total_payment != total_price:
        raise PreconditionFailed(f"Payment amount does not add up, total price is {total_price}, but paid "
                                 f"{total_payment}", field="payment_methods")
    _check_bag_counts(total_baggages, nonfree_baggages)
    _check_booking_state(ep, user_id, origin, destination, cabin, days, pax, payment_methods)

    ep.execute("INSERT INTO reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active')",
               (rid, user["user_id"], origin, destination, flight_type, cabin, TAU2_NOW, total_baggages,
                nonfree_baggages, insurance))
    _write_legs(ep, rid, [(d["flight_number"], d["date"], d[f"price_{cabin}"]) for d in days])
    _write_passengers(ep, rid, passengers)
    for pay in payment_methods:
        method = ep.query_one("SELECT * FROM payment_methods WHERE payment_id = ?", (pay.payment_id,))
        if method["source"] == "gift_card":
            ep.execute("UPDATE payment_methods SET balance = ? WHERE payment_id = ?",
                       (round_money(method["balance"] - pay.amount), pay.payment_id))
        elif method["source"] == "certificate":  # tau2 drops it from the profile
            ep.execute("UPDATE payment_methods SET balance = 0, status = 'redeemed' WHERE payment_id = ?",
                       (pay.payment_id,))
        if pay.amount:  # a 0 entry moves no money and is not stored (a deliberate difference)
            _record_payment(ep, rid, pay.payment_id, pay.amount)
    for d in days:
        _move_seats(ep, d["flight_number"], d["date"], cabin, -pax)
    return reference_result(_reservation(ep, rid))


def calculate(ep: Episode, expression: _arg("the arithmetic to evaluate, such as '2 + 2': numbers, + - * /, "
                                            "parentheses and spaces")) -> CallToolResult:
    """Calculate the value of an arithmetic expression (numbers, + - * /, parentheses, spaces).

    Returns the value rounded to 2 decimals, as text.
    """
    return reference_calculate(expression)


def cancel_reservation(ep: Episode, reservation_id: ReservationId) -> ReservationResult:
    """Cancel a whole reservation: every payment is recorded as refunded to the method that paid it and the
    status becomes 'cancelled'. This tool does not check the cancellation policy: confirm it applies first.
    Returns the reservation after the cancellation."""
    row = _reservation_row(ep, reservation_id)
    if row["status"] != "cancelled":  # tau2 refunds a cancelled reservation again (a deliberate difference)
        for pay in ep.query("SELECT payment_id, amount FROM payments WHERE reservation_id = ? ORDER BY position",
                            (reservation_id,)):
            _record_payment(ep, reservation_id, pay["payment_id"], -pay["amount"])
        ep.execute("UPDATE reservations SET status = 'cancelled' WHERE reservation_id = ?", (reservation_id,))
    return reference_result(_reservation(ep, reservation_id))


def get_reservation_details(ep: Episode, reservation_id: ReservationId) -> ReservationResult:
    """Get the details of a reservation: flights with the price paid, passengers, payments, bags, insurance."""
    return reference_result(_reservation(ep, reservation_id))


def get_user_details(ep: Episode, user_id: UserId) -> Annotated[CallToolResult, User]:
    """Get the details of a user: profile, membership, payment methods, saved passengers, reservation ids."""
    return reference_result(_user(ep, _user_row(ep, user_id)))


def list_all_airports(ep: Episode) -> Annotated[CallToolResult, Airports]:
    """List every airport served, as IATA code and city."""
    rows = ep.query("SELECT iata, city FROM airports ORDER BY rowid")
    return reference_result([Airport(iata=r["iata"], city=r["city"]) for r in rows])


def search_direct_flight(ep: Episode, origin: _arg("the origin airport code, such as 'JFK'"),
                         destination: _arg("the destination airport code, such as 'LAX'"),
                         date: _arg("the date, 'YYYY-MM-DD', such as '2024-01-01'")
                         ) -> Annotated[CallToolResult, DirectFlights]:
    """Search the direct flights between two airports on a date that can be booked, with seats left and
    prices per cabin."""
    return reference_result(_direct_flights(ep, date, origin, destination))


def search_onestop_flight(ep: Episode, origin: _arg("the origin airport code, such as 'JFK'"),
                          destination: _arg("the destination airport code, such as 'LAX'"),
                          date: _arg("the date, 'YYYY-MM-DD', such as '2024-05-01'")
                          ) -> Annotated[CallToolResult, OneStopFlights]:
    """Search one-stop itineraries between two airports departing on a date: pairs of bookable flights, the
    second leaving the connecting airport after the first arrives."""
    pairs = []
    for first in _direct_flights(ep, date, origin, None):
        first.date = date
        second_date = date
        if "+1" in first.scheduled_arrival_time_est:  # tau2's next day: May, the day number plus one, unpadded
            try:
                second_date = f"2024-05-{int(date[-2:]) + 1}"
            except ValueError as exc:
                raise InvalidArguments(str(exc), field="date") from None
        for second in _direct_flights(ep, second_date, first.destination, destination,
                                      leave_after=first.scheduled_arrival_time_est):
            second.date = second_date
            pairs.append([first, second])
    return reference_result(pairs)


def send_certificate(ep: Episode, user_id: UserId,
                     amount: Annotated[int, Field(description="the certificate's value in dollars")]
                     ) -> CallToolResult:
    """Send a travel certificate to a user (it joins their payment methods). Be careful: only when the
    policy grants compensation. Returns a message naming the certificate."""
    uid = _user_row(ep, user_id)["user_id"]
    # tau2 takes the first id not in this user's profile; ids are global here, so one any user ever held is
    # skipped (a deliberate difference)
    for payment_id in NEW_CERTIFICATE_IDS:
        if ep.query_one("SELECT 1 FROM payment_methods WHERE payment_id = ?", (payment_id,)) is None:
            ep.execute("INSERT INTO payment_methods VALUES (?, ?, 'certificate', NULL, NULL, ?, 'active')",
                       (payment_id, uid, float(amount)))
            return reference_result(f"Certificate {payment_id} added to user {user_id} with amount {amount}.")
    raise PreconditionFailed("Too many certificates")


def transfer_to_human_agents(ep: Episode, summary: _arg("a summary of the user's issue")) -> CallToolResult:
    """Transfer the user to a human agent, with a summary of the issue. Only when the user explicitly asks
    for a human agent, or the issue cannot be solved within the policy and these tools."""
    record_transfer(ep, summary)
    return reference_result("Transfer successful")


def update_reservation_baggages(
    ep: Episode, reservation_id: ReservationId,
    total_baggages: Annotated[int, Field(description="the new total of checked bags")],
    nonfree_baggages: Annotated[int, Field(description="the new number of bags to pay for")],
    payment_id: PaymentId,
) -> ReservationResult:
    """Update a reservation's checked bags. Each non-free bag beyond the reservation's current ones costs 50,
    paid by a credit card or gift card of the user's profile. Returns the reservation after the change."""
    row = _reservation_row(ep, reservation_id)
    cost = int(BAG_FEE) * max(0, nonfree_baggages - row["nonfree_baggages"])
    _pay_for_update(ep, reservation_id, row["user_id"], payment_id, cost)
    _check_bag_counts(total_baggages, nonfree_baggages)  # after tau2's own checks (the call is atomic)
    ep.execute("UPDATE reservations SET total_baggages = ?, nonfree_baggages = ? WHERE reservation_id = ?",
               (total_baggages, nonfree_baggages, reservation_id))
    return reference_result(_reservation(ep, reservation_id))


def update_reservation_flights(
    ep: Episode, reservation_id: ReservationId, cabin: Cabin,
    flights: Annotated[list[FlightArg], Field(description="EVERY flight of the new itinerary, the unchanged ones "
                                                          "included")],
    payment_id: PaymentId,
) -> ReservationResult:
    """Update the flights and/or cabin of a reservation; pass the entire new itinerary. A flight kept on the
    same date in the same cabin keeps its price; the others are priced at today's fare. The difference
    times the passengers is paid by (or refunded to) a credit card or gift card of the user's profile.
    Returns the reservation after the change."""
    row = _reservation_row(ep, reservation_id)
    pax = ep.query_one("SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,))[0]
    old = ep.query("SELECT flight_number, date, price FROM reservation_flights WHERE reservation_id = ? "
                   "ORDER BY position", (reservation_id,))
    total_price: int | float = 0
    legs = []
    for flight in flights:
        kept = next((leg for leg in old if (leg["flight_number"], leg["date"]) == (flight.flight_number, flight.date)
                     and cabin == row["cabin"]), None)
        price = kept["price"] if kept else _bookable(ep, flight.flight_number, flight.date, cabin, pax)[f"price_{cabin}"]
        total_price += _whole(price) * pax
        legs.append((flight.flight_number, flight.date, price))
    total_price -= sum(_whole(leg["price"]) for leg in old) * pax
    _pay_for_update(ep, reservation_id, row["user_id"], payment_id, total_price)
    _write_legs(ep, reservation_id, legs)
    ep.execute("UPDATE reservations SET cabin = ? WHERE reservation_id = ?", (cabin, reservation_id))
    return reference_result(_reservation(ep, reservation_id))


def update_reservation_passengers(
    ep: Episode, reservation_id: ReservationId,
    passengers: Annotated[list[Person], Field(description="every passenger, as many as the reservation has")],
) -> ReservationResult:
    """Update the passengers of a reservation (names and dates of birth); their number cannot change.
    Returns the reservation after the change."""
    _reservation_row(ep, reservation_id)
    count = ep.query_one("SELECT COUNT(*) FROM reservation_passengers WHERE reservation_id = ?", (reservation_id,))[0]
    if len(passengers) != count:
        raise PreconditionFailed("Number of passengers does not match", field="passengers")
    _write_passengers(ep, reservation_id, passengers)
    return reference_result(_reservation(ep, reservation_id))


def get_flight_status(ep: Episode, flight_number: _arg("the flight number, such as 'HAT001'"),
                      date: _arg("the date, 'YYYY-MM-DD'")) -> CallToolResult:
    """Get the status of a flight on a date: available, on time, delayed, flying, landed or cancelled."""
    return reference_result(_flight_day(ep, flight_number, date)["status"])


def _names_the_method(fn):
    """AgentChangeBench's version of an update tool: its missing payment method error names the id."""
    @functools.wraps(fn)
    def tool(ep: Episode, **arguments: Any) -> CallToolResult:
        try:
            return fn(ep, **arguments)
        except NotFound as exc:
            if str(exc) != METHOD_NOT_FOUND:
                raise
            raise NotFound(f"Payment method {arguments['payment_id']} not found", field="payment_id") from None
    return tool


READ, WRITE, GENERIC = {"read_only": True}, {"read_only": False, "destructive": True}, {"read_only": False}
TOOLS = ((book_reservation, {"read_only": False}), (calculate, READ), (cancel_reservation, WRITE),
         (get_reservation_details, READ), (get_user_details, READ), (list_all_airports, READ),
         (search_direct_flight, READ), (search_onestop_flight, READ), (send_certificate, GENERIC),
         (transfer_to_human_agents, GENERIC), (update_reservation_baggages, WRITE),
         (update_reservation_flights, WRITE), (update_reservation_passengers, WRITE), (get_flight_status, READ))
"""tau2's 14 airline tools in its source's order, with their MCP hints."""


def _toolset(*, names_the_method: bool) -> ToolSet:
    toolset = ToolSet()
    for fn, hints in TOOLS:
        if names_the_method and fn in (update_reservation_baggages, update_reservation_flights):
            fn = _names_the_method(fn)
        toolset.tool(**hints)(fn)
    return toolset


tau2_tools = _toolset(names_the_method=False)
"""tau2-bench's airline tools (its repository at 2026-08, the version retail's tool set follows)."""
acb_tools = _toolset(names_the_method=True)
"""AgentChangeBench's airline tools: tau2's, whose update tools say 'Payment method <id> not found'."""
