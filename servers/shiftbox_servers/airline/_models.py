"""Typed arguments and structured outputs of the airline tools (tau2's airline shapes)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from shiftbox_servers.kit import IsoDate, identifier, money, text

Cabin = Literal["basic_economy", "economy", "business"]
FlightType = Literal["one_way", "round_trip"]
Insurance = Literal["yes", "no"]
Membership = Literal["regular", "silver", "gold"]
FlightStatusName = Literal["available", "on time", "delayed", "flying", "landed", "cancelled"]
PaymentSource = Literal["credit_card", "gift_card", "certificate"]

FlightNumber = Annotated[str, Field(pattern=r"^[A-Za-z]{3}\d{3}$", description="flight number, e.g. HAT001")]
AirportCode = Annotated[str, Field(pattern=r"^[A-Za-z]{3}$", description="IATA airport code, e.g. JFK")]


# -- nested arguments (closed and strict like the tool arguments themselves) ----------------------


class _Argument(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class FlightInfo(_Argument):
    """One flight of an itinerary: which flight, on which date."""

    flight_number: FlightNumber
    date: IsoDate


class PassengerInfo(_Argument):
    """A passenger as the reservation records them."""

    first_name: text("passenger's first name", max_length=100)
    last_name: text("passenger's last name", max_length=100)
    dob: IsoDate


class PaymentInfo(_Argument):
    """How much to charge to one payment method of the user's profile."""

    payment_id: identifier("payment method id from the user's profile, e.g. credit_card_4421486")
    amount: money("amount in USD charged to this method, at most 2 decimals", maximum=100_000)


# -- outputs -----------------------------------------------------------------------------------------


class Airport(BaseModel):
    iata: str
    city: str


class AirportList(BaseModel):
    airports: list[Airport]


class SeatsByCabin(BaseModel):
    basic_economy: int
    economy: int
    business: int


class PricesByCabin(BaseModel):
    basic_economy: float
    economy: float
    business: float


class DirectFlight(BaseModel):
    """A bookable flight on one date."""

    flight_number: str
    origin: str
    destination: str
    status: Literal["available"]
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    date: str
    available_seats: SeatsByCabin
    prices: PricesByCabin


class DirectFlightSearch(BaseModel):
    origin: str
    destination: str
    date: str
    flights: list[DirectFlight]


class OneStopSearch(BaseModel):
    origin: str
    destination: str
    date: str
    itineraries: list[list[DirectFlight]] = Field(
        description="each itinerary is [first flight, connecting flight]; the second leg may be on the next day"
    )


class FlightStatus(BaseModel):
    flight_number: str
    date: str
    origin: str
    destination: str
    status: FlightStatusName
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    estimated_departure_time_est: str | None
    estimated_arrival_time_est: str | None
    actual_departure_time_est: str | None
    actual_arrival_time_est: str | None


class Name(BaseModel):
    first_name: str
    last_name: str


class Address(BaseModel):
    address1: str
    address2: str | None
    city: str
    country: str
    state: str
    zip: str


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class PaymentMethod(BaseModel):
    source: PaymentSource
    id: str
    brand: str | None = Field(description="credit cards only")
    last_four: str | None = Field(description="credit cards only")
    amount: float | None = Field(description="remaining balance of a gift card or certificate")


class User(BaseModel):
    user_id: str
    name: Name
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    membership: Membership
    reservations: list[str] = Field(description="reservation ids, oldest booking first")


class ReservationFlight(BaseModel):
    flight_number: str
    origin: str
    destination: str
    date: str
    price: float = Field(description="per passenger, as booked")


class Payment(BaseModel):
    payment_id: str
    amount: float = Field(description="positive: charged; negative: refunded")


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: FlightType
    cabin: Cabin
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[Payment]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: Insurance
    status: Literal["active", "cancelled"]


class Calculation(BaseModel):
    expression: str
    result: float


class CertificateIssued(BaseModel):
    user_id: str
    payment_id: str
    amount: float
    message: str

