"""The airline tools' dependency graph: every tool's preconditions and postconditions (written into its
description in dependency-graph mode; docs/servers.md renders them), and the steps `--graph-refusal` enforces.

Only the certificate is refused out of order: it is sent after the reservation and the flight's status were
looked up. Reservation changes are not refused without a lookup first: in the committed generated tasks
(snapshots/airline/v1/tasks.json) a user who names a reservation id is often served straight away (7 to 11
of each change tool's 33-48 gold calls come with no reservation lookup before them), so those edges are
described, never enforced.
"""

from shiftbox_servers.kit import (
    CALCULATE_CONDITIONS,
    conditions,
    dependency_graph,
    transfer_conditions,
)

_SEARCH = ("search_direct_flight", "search_onestop_flight")
_ROUTE = "origin and destination as IATA codes, and the date"

DEPENDENCIES = dependency_graph(
    {"send_certificate": ["get_reservation_details", "get_flight_status"]},
    {
        "get_user_details": conditions(
            "the user's profile is known: name, membership, payment methods, saved passengers and reservation ids",
            pre="the user's id is known (the user gives it)"),
        "get_reservation_details": conditions(
            "the reservation is known: route, flights, cabin, passengers, bags, insurance and payments",
            pre="the reservation id is known (the user gives it, or the user's profile lists it)",
            after=["get_user_details"]),
        "list_all_airports": conditions("every airport's IATA code and city is known"),
        "search_direct_flight": conditions("the nonstop flights of that date are known, with their seats and prices "
                                           "per cabin", pre=_ROUTE, after=["list_all_airports"]),
        "search_onestop_flight": conditions("the one-stop itineraries of that date are known, with their seats and "
                                            "prices per cabin", pre=_ROUTE, after=["list_all_airports"]),
        "get_flight_status": conditions(
            "the flight's status and times on that date are known",
            pre="the flight number and date are known",
            after=[("get_reservation_details", *_SEARCH)]),
        "book_reservation": conditions(
            "a new reservation exists, charged to the chosen payment methods; its id is returned",
            pre="the user confirmed the flights, cabin, passengers, payment, bags and insurance",
            after=["get_user_details", _SEARCH]),
        "cancel_reservation": conditions(
            "the reservation is cancelled and what was paid is refunded to the methods it came from",
            pre="the user confirmed the cancellation, and the reservation may be cancelled",
            after=["get_reservation_details"]),
        "update_reservation_flights": conditions(
            "the reservation has the new flights and cabin; the price difference is charged or refunded",
            pre="the user confirmed the entire new itinerary and the payment method",
            after=["get_reservation_details", _SEARCH, "get_user_details"]),
        "update_reservation_baggages": conditions(
            "the reservation has the new number of checked bags; paid bags are charged",
            pre="the user confirmed the bags and the payment method",
            after=["get_reservation_details", "get_user_details"]),
        "update_reservation_passengers": conditions(
            "the reservation lists the new passengers",
            pre="the user confirmed every passenger (the number cannot change)",
            after=["get_reservation_details"]),
        "send_certificate": conditions(
            "a travel certificate is added to the user's payment methods",
            pre="the user is owed compensation for that reservation and flight",
            after=["get_user_details"]),
        "calculate": CALCULATE_CONDITIONS,
        "transfer_to_human_agents": transfer_conditions("user"),
    },
)
