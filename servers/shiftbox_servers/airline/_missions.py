"""Airline missions for the seeded task generator (`shiftbox tasks generate airline`).

Same format as `shiftbox_servers.banking._missions` (read its docstring): one builder per goal label,
`build(db, rng, subject) -> Mission | None`, reading the task's episode database as the earlier
goals left it. The subject is a `users` row (plus `customer_id`, the user id, for the generator's
notes): `MISSIONS.subjects(db)` lists them and `MISSIONS.introduce(subject)` is the opening sentence
of known_info (airline has no `customers` table; the user identifies by user id).

The clock is the snapshot's (2024-05-15 15:00 EST): flights on later dates are still bookable, and a
reservation is changed, cancelled or given bags only while none of its flights has departed.
Communicated values are ids, dates, statuses and counts: never cabin codes with underscores or round
amounts (the output's 200.0 is not a whole token of the "200.00" an agent would say).
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from typing import Any

from shiftbox_servers.kit import Fact, Mission, MissionSet
from shiftbox_servers.kit import mission as _mission
from shiftbox_servers.kit import mission_call as _call
from shiftbox_servers.kit import select_rows as _rows

from ._schema import BAG_FEE, CLOCK_START, FREE_BAGS, INSURANCE_FEE

TODAY = CLOCK_START.date().isoformat()
RECENT = "2024-05-14T15:00:00"
"""Booked after this (the last 24 hours before the clock start): cancellable for any reason."""
NEW_PASSENGERS = (("Ava", "Moreno", "1990-03-14"), ("Liam", "Okafor", "1985-11-02"),
                  ("Noah", "Lindqvist", "1978-07-21"), ("Emma", "Takahashi", "1996-01-30"),
                  ("Sofia", "Haddad", "1988-09-09"), ("Lucas", "Brennan", "2001-05-17"))
CABIN_LABEL = {"basic_economy": "basic economy", "economy": "economy", "business": "business"}


def _reservations(db: sqlite3.Connection, user_id: str, *, upcoming: bool = True) -> list[dict[str, Any]]:
    """The user's active reservations; with `upcoming`, only those whose flights are all still bookable."""
    rows = _rows(db, "SELECT * FROM reservations WHERE user_id = ? AND status = 'active' ORDER BY reservation_id",
                 (user_id,))
    if not upcoming:
        return rows
    return [r for r in rows if db.execute(
        "SELECT 1 FROM reservation_flights rf JOIN flight_dates fd USING (flight_number, date) "
        "WHERE rf.reservation_id = ? AND fd.status <> 'available'", (r["reservation_id"],)).fetchone() is None]


def _legs(db: sqlite3.Connection, reservation_id: str) -> list[dict[str, Any]]:
    return _rows(db, "SELECT rf.*, f.origin, f.destination FROM reservation_flights rf JOIN flights f "
                     "USING (flight_number) WHERE rf.reservation_id = ? ORDER BY rf.position", (reservation_id,))


def _passengers(db: sqlite3.Connection, reservation_id: str) -> list[dict[str, Any]]:
    return _rows(db, "SELECT first_name, last_name, dob FROM reservation_passengers WHERE reservation_id = ? "
                     "ORDER BY position", (reservation_id,))


def _methods(db: sqlite3.Connection, user_id: str, source: str) -> list[dict[str, Any]]:
    return _rows(db, "SELECT * FROM payment_methods WHERE user_id = ? AND source = ? AND status = 'active' "
                     "ORDER BY payment_id", (user_id, source))


def _day(db: sqlite3.Connection, flight_number: str, date: str) -> dict[str, Any]:
    return _rows(db, "SELECT * FROM flight_dates WHERE flight_number = ? AND date = ?", (flight_number, date))[0]


def _change_method(db: sqlite3.Connection, rng: random.Random, user_id: str, cost: float) -> dict[str, Any] | None:
    """A credit card, or a gift card that holds the cost, to pay (or receive) a change's difference."""
    options = _methods(db, user_id, "credit_card") + [g for g in _methods(db, user_id, "gift_card")
                                                      if g["balance"] >= cost + 0.01]
    return rng.choice(options) if options else None


def _describe(method: dict[str, Any]) -> str:
    if method["source"] == "credit_card":
        return f"your {method['brand']} credit card ending in {method['last_four']} ({method['payment_id']})"
    return f"your gift card {method['payment_id']}"


def _money(value: float) -> str:
    return f"{value:.2f}"


def _trip(legs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{leg['flight_number']} on {leg['date']}" for leg in legs)


def _booked_here(res: dict[str, Any]) -> bool:
    """Booked earlier in this task's episode: the user learned its id from the agent, not from known_info."""
    return res["created_at"] >= CLOCK_START.isoformat()


def _ref(res: dict[str, Any]) -> str:
    """How the user names the reservation."""
    if _booked_here(res):
        return f"the reservation you booked earlier in this call ({res['origin']} to {res['destination']})"
    return f"your reservation {res['reservation_id']}"


def _which(res: dict[str, Any], detail: str = "") -> str:
    """The known_info sentence about the reservation."""
    if _booked_here(res):
        return (f"The reservation you booked earlier in this call goes from {res['origin']} to "
                f"{res['destination']}{detail}; the agent gave you its id.")
    return f"Your reservation is {res['reservation_id']}, from {res['origin']} to {res['destination']}{detail}."





# -- builders ----------------------------------------------------------------------------------------


def reservation_lookup(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    uid = subject["user_id"]
    identify = _call("user", "get_user_details", {"user_id": uid})
    reservations = _reservations(db, uid, upcoming=False)
    roll = rng.random()
    if not reservations or roll < 0.4:
        return _mission(
            "reservation_lookup", "single",
            "You want the agent to look up your profile and tell you your membership level and reservations.",
            [identify], communicate=("user.membership",),
            nl=("Agent looked up the user's profile by user id before sharing any details",))
    res = rng.choice(reservations)
    known = (_which(res),)
    details = _call("res", "get_reservation_details", {"reservation_id": res["reservation_id"]}, ("user",))
    communicate = ("res.flights.0.flight_number", "res.flights.0.date")
    nl = ("Agent verified the user id before discussing the reservation",
          "Agent told the user the flights and dates of the reservation")
    if len(reservations) > 1 and roll < 0.65:
        return _mission(
            "reservation_lookup", "clarify",
            f"You want the details of one of your reservations ({_ref(res)}), but you only say which when "
            "the agent asks.",
            [identify, details], known=known, communicate=communicate,
            nl=("Agent asked which reservation the user meant", *nl))
    return _mission(
        "reservation_lookup", "serial",
        f"You want the agent to pull up your profile and then go over {_ref(res)}.",
        [identify, details], known=known, communicate=communicate, nl=nl)


def _bookable(db: sqlite3.Connection, pax: int, sql: str = "", params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    return _rows(db, "SELECT fd.*, f.origin, f.destination FROM flight_dates fd JOIN flights f USING (flight_number) "
                     "WHERE fd.status = 'available' AND fd.date > ? AND fd.seats_basic_economy >= ? "
                     f"AND fd.seats_economy >= ? AND fd.seats_business >= ? {sql} ORDER BY fd.date, fd.flight_number",
                 (TODAY, pax, pax, pax, *params))


def _booking_payments(db: sqlite3.Connection, rng: random.Random, user_id: str,
                      total: float) -> tuple[list[dict[str, Any]], str] | None:
    """How the user pays `total` for a new booking (gift card, gift card plus card, or card) and how they say
    it; None when they have no way to pay."""
    cards = _methods(db, user_id, "credit_card")
    gifts = _methods(db, user_id, "gift_card")
    covering = [g for g in gifts if g["balance"] >= total]
    partial = [g for g in gifts if 1 <= g["balance"] < total]
    if covering and (not cards or rng.random() < 0.3):
        gift = rng.choice(covering)
        return ([{"payment_id": gift["payment_id"], "amount": total}],
                f"Pay the whole {_money(total)} with your gift card {gift['payment_id']}.")
    if cards and partial and rng.random() < 0.35:
        gift, card = rng.choice(partial), rng.choice(cards)
        amount = round(gift["balance"], 2)
        return ([{"payment_id": gift["payment_id"], "amount": amount},
                 {"payment_id": card["payment_id"], "amount": round(total - amount, 2)}],
                f"Use all {_money(amount)} left on your gift card {gift['payment_id']} and put the rest on "
                f"{_describe(card)}.")
    if cards:
        card = rng.choice(cards)
        return [{"payment_id": card["payment_id"], "amount": total}], f"Pay with {_describe(card)}."
    return None


def booking(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    uid = subject["user_id"]
    saved = _rows(db, "SELECT first_name, last_name, dob FROM saved_passengers WHERE user_id = ? ORDER BY position",
                  (uid,))
    passengers = [{"first_name": subject["first_name"], "last_name": subject["last_name"], "dob": subject["dob"]}]
    if saved and rng.random() < 0.4:
        passengers.append(rng.choice(saved))
    pax = len(passengers)
    out = rng.choice(_bookable(db, pax))
    legs = [out]
    roll = rng.random()
    if roll < 0.3:
        back = _bookable(db, pax, "AND f.origin = ? AND f.destination = ? AND fd.date >= date(?, '+2 days')",
                         (out["destination"], out["origin"], out["date"]))
        if not back:
            return None
        legs.append(rng.choice(back))
    cabin = rng.choice(("basic_economy", "economy", "economy", "business"))
    insurance = rng.choice(("yes", "no"))
    free = FREE_BAGS[subject["membership"]][cabin] * pax
    total_bags = rng.randint(0, min(free, 2))
    nonfree = 0
    if rng.random() < 0.25:
        total_bags, nonfree = free + 1, 1
    total = round(sum(leg[f"price_{cabin}"] for leg in legs) * pax + (INSURANCE_FEE * pax if insurance == "yes" else 0)
                  + BAG_FEE * nonfree, 2)
    paid = _booking_payments(db, rng, uid, total)
    if paid is None:
        return None
    payments, paying = paid
    origin, destination = out["origin"], out["destination"]
    flight_type = "round_trip" if len(legs) > 1 else "one_way"
    who = "just you" if pax == 1 else (f"you and {passengers[1]['first_name']} {passengers[1]['last_name']} "
                                       f"(born {passengers[1]['dob']}, a saved passenger)")
    bags = f"{total_bags} checked bag(s)" + (f", {nonfree} of them paid" if nonfree else "")
    book = {"user_id": uid, "origin": origin, "destination": destination, "flight_type": flight_type,
            "cabin": cabin, "flights": [{"flight_number": leg["flight_number"], "date": leg["date"]} for leg in legs],
            "passengers": passengers, "payment_methods": payments, "total_baggages": total_bags,
            "nonfree_baggages": nonfree, "insurance": insurance}
    trip = (f"a {flight_type.replace('_', ' ')} trip from {origin} to {destination} in {CABIN_LABEL[cabin]} for {who}, "
            f"{bags}, insurance {insurance}")
    known = [f"The total comes to {_money(total)}. {paying}"]
    nl = ("Agent stated the flights, cabin, passengers, bags, insurance and total before booking, and booked only "
          "after the user confirmed", "Agent gave the user the new reservation id")
    if flight_type == "round_trip":
        known.insert(0, f"You want flight {out['flight_number']} on {out['date']} out and flight "
                        f"{legs[1]['flight_number']} on {legs[1]['date']} back.")
        return _mission(
            "booking", "parallel",
            f"You want to book {trip}; you leave on {out['date']} and come back on {legs[1]['date']}.",
            [_call("out", "search_direct_flight", {"origin": origin, "destination": destination, "date": out["date"]}),
             _call("back", "search_direct_flight", {"origin": destination, "destination": origin,
                                                    "date": legs[1]["date"]}),
             _call("book", "book_reservation", book, ("out", "back"))],
            known=tuple(known), communicate=("book.reservation_id",), nl=nl)
    if roll < 0.65:
        known.insert(0, f"You will take the nonstop flight {out['flight_number']} once the agent finds it.")
        return _mission(
            "booking", "serial", f"You want to book {trip}, on a nonstop flight on {out['date']}.",
            [_call("search", "search_direct_flight", {"origin": origin, "destination": destination,
                                                      "date": out["date"]}),
             _call("book", "book_reservation", book, ("search",))],
            known=tuple(known), communicate=("book.reservation_id",), nl=nl)
    known.insert(0, f"You want flight {out['flight_number']} on {out['date']}.")
    return _mission("booking", "single", f"You want to book {trip}.", [_call("book", "book_reservation", book)],
                    known=tuple(known), communicate=("book.reservation_id",), nl=nl)


def _cancel_reason(db: sqlite3.Connection, res: dict[str, Any]) -> str | None:
    """Why the policy lets this reservation be cancelled (None: it does not)."""
    flights = db.execute("SELECT fd.status FROM reservation_flights rf JOIN flight_dates fd USING (flight_number, date) "
                         "WHERE rf.reservation_id = ?", (res["reservation_id"],)).fetchall()
    statuses = {s[0] for s in flights}
    if statuses & {"flying", "landed"}:
        return None
    if res["created_at"] >= RECENT:
        return "you booked it less than a day ago and changed your plans"
    if "cancelled" in statuses:
        return "the airline cancelled one of its flights"
    if res["cabin"] == "business":
        return "your plans changed (it is a business reservation)"
    if res["insurance"] == "yes":
        return "you are ill and cannot travel (you bought travel insurance)"
    return None


def cancellation(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    options = [(r, why) for r in _reservations(db, subject["user_id"], upcoming=False)
               if (why := _cancel_reason(db, r)) is not None]
    if not options:
        return None
    res, why = rng.choice(options)
    rid = res["reservation_id"]
    known = (_which(res),)
    reason = f"You want to cancel {_ref(res)} because {why}."
    nl = ("Agent checked that the cancellation policy allows it before cancelling",
          "Agent cancelled only after the user confirmed and said where the refund goes")
    cancel_params = {"reservation_id": rid}
    if rng.random() < 0.5:
        return _mission(
            "cancellation", "serial", reason,
            [_call("check", "get_reservation_details", {"reservation_id": rid}),
             _call("cancel", "cancel_reservation", cancel_params, ("check",))],
            known=known, communicate=("cancel.status",), nl=nl)
    return _mission("cancellation", "single", reason, [_call("cancel", "cancel_reservation", cancel_params)],
                    known=known, communicate=("cancel.status",), nl=nl)


def modification(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    uid = subject["user_id"]
    reservations = _reservations(db, uid)
    if not reservations:
        return None
    res = rng.choice(reservations)
    rid, old_cabin = res["reservation_id"], res["cabin"]
    legs = _legs(db, rid)
    pax = len(_passengers(db, rid))
    old_total = sum(leg["price"] for leg in legs)
    movable = old_cabin != "basic_economy" and res["flight_type"] == "one_way" and len(legs) == 1
    alternatives = []
    if movable:
        alternatives = [f for f in _bookable(db, pax, "AND f.origin = ? AND f.destination = ? AND fd.date <> ?",
                                             (res["origin"], res["destination"], legs[0]["date"]))]
    known = [_which(res, f" ({_trip(legs)}, {CABIN_LABEL[old_cabin]})")]
    nl = ("Agent stated the new itinerary and the fare difference before changing, and changed only after the "
          "user confirmed",)
    if alternatives and rng.random() < 0.5:
        new = rng.choice(alternatives)
        diff = round((new[f"price_{old_cabin}"] - old_total) * pax, 2)
        method = _change_method(db, rng, uid, max(diff, 0))
        if method is None:
            return None
        params = {"reservation_id": rid, "cabin": old_cabin,
                  "flights": [{"flight_number": new["flight_number"], "date": new["date"]}],
                  "payment_id": method["payment_id"]}
        known += [f"You want to move it to the nonstop flight {new['flight_number']} on {new['date']}, same cabin.",
                  f"Any difference goes to {_describe(method)}."]
        return _mission(
            "modification", "serial",
            f"You want to move {_ref(res)} to {new['date']}, on a nonstop flight.",
            [_call("check", "get_reservation_details", {"reservation_id": rid}),
             _call("search", "search_direct_flight", {"origin": res["origin"], "destination": res["destination"],
                                                      "date": new["date"]}, ("check",)),
             _call("change", "update_reservation_flights", params, ("search",))],
            known=tuple(known), nl=nl)
    higher = {"basic_economy": "economy", "economy": "business", "business": "economy"}[old_cabin]
    days = [_day(db, leg["flight_number"], leg["date"]) for leg in legs]
    if any(d[f"seats_{higher}"] < pax for d in days):
        return None
    diff = round((sum(d[f"price_{higher}"] for d in days) - old_total) * pax, 2)
    method = _change_method(db, rng, uid, max(diff, 0))
    if method is None:
        return None
    params = {"reservation_id": rid, "cabin": higher,
              "flights": [{"flight_number": leg["flight_number"], "date": leg["date"]} for leg in legs],
              "payment_id": method["payment_id"]}
    known.append(f"Any difference goes to {_describe(method)}.")
    reason = f"You want to change the cabin of {_ref(res)} to {CABIN_LABEL[higher]}, same flights."
    calls = [_call("change", "update_reservation_flights", params, required=["reservation_id", "cabin"])]
    others = [r for r in reservations if r["reservation_id"] != rid]
    if others and rng.random() < 0.35:
        return _mission(
            "modification", "clarify",
            f"You want one of your reservations moved to {CABIN_LABEL[higher]} (it is {_ref(res)}, {_trip(legs)}); you "
            "only say which when the agent asks.",
            [_call("check", "get_reservation_details", {"reservation_id": rid}),
             replace(calls[0], after=("check",))],
            known=tuple(known), communicate=("change.cabin",),
            nl=("Agent asked which reservation the user meant before changing it", *nl))
    return _mission("modification", "single", reason, calls, known=tuple(known), communicate=("change.cabin",),
                    nl=nl)


def baggage(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    uid = subject["user_id"]
    reservations = _reservations(db, uid)
    if not reservations:
        return None
    res = rng.choice(reservations)
    rid = res["reservation_id"]
    pax = len(_passengers(db, rid))
    free = FREE_BAGS[subject["membership"]][res["cabin"]] * pax
    more = rng.randint(1, 3)
    total = res["total_baggages"] + more
    nonfree = max(res["nonfree_baggages"], total - free)
    cost = BAG_FEE * (nonfree - res["nonfree_baggages"])
    method = _change_method(db, rng, uid, cost)
    if method is None:
        return None
    params = {"reservation_id": rid, "total_baggages": total, "nonfree_baggages": nonfree,
              "payment_id": method["payment_id"]}
    known = (_which(res), f"You want {more} more checked bag(s).", f"If anything is owed, pay with {_describe(method)}.")
    reason = f"You want to add {more} checked bag(s) to {_ref(res)}."
    nl = ("Agent worked out the free allowance from the membership and cabin and charged only the extra bags",
          "Agent added the bags only after the user confirmed the cost")
    if rng.random() < 0.5:
        return _mission(
            "baggage", "serial", reason,
            [_call("check", "get_reservation_details", {"reservation_id": rid}),
             _call("bags", "update_reservation_baggages", params, ("check",))],
            known=known, communicate=("bags.total_baggages", "bags.nonfree_baggages"), nl=nl)
    return _mission("baggage", "single", reason, [_call("bags", "update_reservation_baggages", params)],
                    known=known, communicate=("bags.total_baggages", "bags.nonfree_baggages"), nl=nl)


def passenger_update(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    reservations = _reservations(db, subject["user_id"])
    if not reservations:
        return None
    res = rng.choice(reservations)
    rid = res["reservation_id"]
    passengers = _passengers(db, rid)
    i = rng.randrange(len(passengers))
    taken = {(p["first_name"], p["last_name"]) for p in passengers}
    first, last, dob = rng.choice([p for p in NEW_PASSENGERS if (p[0], p[1]) not in taken])
    old = passengers[i]
    new_list = [dict(p) for p in passengers]
    new_list[i] = {"first_name": first, "last_name": last, "dob": dob}
    params = {"reservation_id": rid, "passengers": new_list}
    known = (_which(res), f"{old['first_name']} {old['last_name']} can't travel and {first} {last} "
                           f"(born {dob}) takes their place.")
    reason = f"You want {old['first_name']} {old['last_name']} replaced by {first} {last} on {_ref(res)}."
    nl = ("Agent kept the number of passengers and changed only the one the user asked for",)
    others = [r for r in reservations if r["reservation_id"] != rid]
    if others and rng.random() < 0.3:
        return _mission(
            "passenger_update", "clarify",
            f"You want a passenger replaced on one of your reservations ({old['first_name']} {old['last_name']} by "
            f"{first} {last}, on {_ref(res)}); you only say which reservation when the agent asks.",
            [_call("check", "get_reservation_details", {"reservation_id": rid}),
             _call("update", "update_reservation_passengers", params, ("check",))],
            known=known, communicate=(), nl=("Agent asked which reservation the user meant", *nl))
    if rng.random() < 0.5:
        return _mission(
            "passenger_update", "serial", reason,
            [_call("check", "get_reservation_details", {"reservation_id": rid}),
             _call("update", "update_reservation_passengers", params, ("check",))],
            known=known, nl=nl)
    return _mission("passenger_update", "single", reason,
                    [_call("update", "update_reservation_passengers", params)], known=known, nl=nl)


def flight_status(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    chat = rng.random() < 0.15
    legs = _rows(db, "SELECT rf.flight_number, rf.date FROM reservations r JOIN reservation_flights rf "
                     "USING (reservation_id) JOIN flight_dates fd USING (flight_number, date) WHERE r.user_id = ? "
                     "AND r.status = 'active' AND fd.date BETWEEN ? AND date(?, '+1 day') "
                     "ORDER BY rf.date, rf.flight_number", (subject["user_id"], TODAY, TODAY))
    pool = legs or _rows(db, "SELECT flight_number, date FROM flight_dates WHERE status IN ('on time', 'delayed', "
                             "'flying') ORDER BY date, flight_number")
    if chat:
        pick = rng.choice(pool)
        which = f"flight {pick['flight_number']} on {pick['date']}"
        return _mission(
            "flight_status", "chat",
            f"You want to know how early you should get to the airport for {which}, and whether it is still on "
            "schedule.",
            [_call("status0", "get_flight_status", {"flight_number": pick["flight_number"], "date": pick["date"]})],
            known=(f"You are asking about {which}.",), communicate=("status0.status",),
            nl=("Agent gave general guidance without inventing flight details",))
    picks = rng.sample(pool, 2) if len(pool) > 1 and rng.random() < 0.35 else [rng.choice(pool)]
    picks = list({(p["flight_number"], p["date"]): p for p in picks}.values())
    calls = [_call(f"status{k}", "get_flight_status", {"flight_number": p["flight_number"], "date": p["date"]})
             for k, p in enumerate(picks)]
    which = " and ".join(f"flight {p['flight_number']} on {p['date']}" for p in picks)
    known = (f"You are asking about {which}.",)
    nl = ("Agent reported the status the tool returned",)
    if len(picks) > 1:
        return _mission("flight_status", "parallel", f"You want the status of {which}.", calls, known=known,
                        communicate=("status0.status", "status1.status"), nl=nl)
    return _mission("flight_status", "single", f"You want to know the status of {which}.", calls, known=known,
                    communicate=("status0.status",), nl=nl)


def compensation(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    uid = subject["user_id"]
    options = _rows(db, "SELECT r.*, rf.flight_number, rf.date FROM reservations r JOIN reservation_flights rf "
                        "USING (reservation_id) JOIN flight_dates fd USING (flight_number, date) "
                        "WHERE r.user_id = ? AND r.status = 'active' AND fd.status = 'cancelled' ORDER BY r.reservation_id, rf.position",
                    (uid,))
    if subject["membership"] == "regular":
        options = [o for o in options if o["insurance"] == "yes" or o["cabin"] == "business"]
    if not options:
        return None
    res = rng.choice(options)
    rid = res["reservation_id"]
    pax = len(_passengers(db, rid))
    amount = 100.0 * pax
    known = (f"Your reservation {rid} had flight {res['flight_number']} on {res['date']}, which the airline "
             "cancelled.",)
    reason = f"Your flight {res['flight_number']} on {res['date']} was cancelled and you want compensation."
    cert = {"user_id": uid, "amount": amount}
    nl = (f"Agent confirmed the cancelled flight with the tools before offering a certificate of {amount:.0f}",
          "Agent sent the certificate only after the user accepted it")
    check = _call("check", "get_reservation_details", {"reservation_id": rid})
    status = {"flight_number": res["flight_number"], "date": res["date"]}
    if rng.random() < 0.5:
        return _mission(
            "compensation", "parallel", reason,
            [check, _call("status", "get_flight_status", status),
             _call("cert", "send_certificate", cert, ("check", "status"))],
            known=known, communicate=("cert.payment_id",), nl=nl)
    return _mission(
        "compensation", "serial", reason,
        [check, _call("status", "get_flight_status", status, ("check",)),
         _call("cert", "send_certificate", cert, ("status",))],
        known=known, communicate=("cert.payment_id",), nl=nl)


def introduce(subject: dict[str, Any]) -> str:
    """The user's identity sentence for known_info."""
    return (f"You are {subject['first_name']} {subject['last_name']}, date of birth {subject['dob']}; "
            f"your user id is {subject['user_id']}.")


def account(subject: dict[str, Any]) -> str:
    """The user's airline profile in a cross-domain task: the user id."""
    return f"Your airline user id is {subject['user_id']}."


# -- facts other domains' missions need (cross-domain dependencies) ---------------------------------------


def address_fact(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Fact | None:
    """The home address on the user's airline profile."""
    return Fact("the home address on your airline profile",
                _call("profile", "get_user_details", {"user_id": subject["user_id"]}),
                {f: f"address.{f}" for f in ("address1", "address2", "city", "state", "country", "zip")})


def amount_fact(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Fact | None:
    """What the user paid for one of their reservations (one payment, so the amount is unambiguous)."""
    paid = [r for r in _reservations(db, subject["user_id"], upcoming=False) if db.execute(
        "SELECT count(*) FROM payments WHERE reservation_id = ?", (r["reservation_id"],)).fetchone()[0] == 1]
    if not paid:
        return None
    rid = rng.choice(paid)["reservation_id"]
    return Fact(f"what you paid for your airline reservation {rid}",
                _call("paid", "get_reservation_details", {"reservation_id": rid}),
                {"amount": "payment_history.0.amount"}, known=(f"Your airline reservation is {rid}.",))


# -- variants: the chat and clarify missions a types plan asks for (`MissionSet.variants`) -----------------


def membership_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat reservation_lookup: what membership levels give, and the user's own level."""
    return _mission(
        "reservation_lookup", "chat",
        "You want to know, in general, what the airline's membership levels change for a traveller (bags, "
        "cancellations), and which level you have.",
        [_call("user", "get_user_details", {"user_id": subject["user_id"]})],
        communicate=("user.membership",),
        nl=("Agent explained the membership benefits from the policy and read the level from the profile",))


def _reservation_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any], goal: str,
                          question: str, communicate: tuple[str, ...], nl: str) -> Mission | None:
    """A chat mission about one of the user's active reservations: a general question, grounded in its details."""
    reservations = _reservations(db, subject["user_id"], upcoming=False)
    if not reservations:
        return None
    res = rng.choice(reservations)
    return _mission(
        goal, "chat", question.format(ref=_ref(res)),
        [_call("res", "get_reservation_details", {"reservation_id": res["reservation_id"]})],
        known=(_which(res),), communicate=communicate, nl=(nl,))


def baggage_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat baggage: how the checked-bag allowance works, and what the reservation already holds."""
    return _reservation_question(
        db, rng, subject, "baggage",
        "You want to know, in general, how the free checked-bag allowance works, and in which cabin {ref} is "
        "booked and how many checked bags it already has.",
        ("res.cabin", "res.total_baggages"),
        "Agent explained the bag allowance from the policy without changing the reservation")


def cancellation_question(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A chat cancellation: when a refund is possible, and whether the reservation has travel insurance."""
    return _reservation_question(
        db, rng, subject, "cancellation",
        "You want to know, in general, when a reservation can be cancelled for a refund, and whether {ref} has "
        "travel insurance; you are not cancelling anything now.",
        ("res.insurance", "res.created_at"),
        "Agent explained the cancellation rules from the policy without cancelling anything")


def flight_status_unnamed(db: sqlite3.Connection, rng: random.Random, subject: dict[str, Any]) -> Mission | None:
    """A clarify flight_status: the user has several flights booked and names one only when asked."""
    legs = _rows(db, "SELECT DISTINCT rf.flight_number, rf.date FROM reservations r JOIN reservation_flights rf "
                     "USING (reservation_id) JOIN flight_dates fd USING (flight_number, date) WHERE r.user_id = ? "
                     "AND r.status = 'active' ORDER BY rf.date, rf.flight_number", (subject["user_id"],))
    if len(legs) < 2:
        return None
    pick = rng.choice(legs)
    which = f"flight {pick['flight_number']} on {pick['date']}"
    return _mission(
        "flight_status", "clarify",
        f"You want the status of one of your booked flights ({which}); you only say which flight and date when the "
        "agent asks.",
        [_call("status0", "get_flight_status", {"flight_number": pick["flight_number"], "date": pick["date"]})],
        known=(f"The flight you mean is {which}.",), communicate=("status0.status",),
        nl=("Agent asked which flight the user meant before checking its status",))


MISSIONS = MissionSet({
    "reservation_lookup": reservation_lookup,
    "booking": booking,
    "cancellation": cancellation,
    "modification": modification,
    "baggage": baggage,
    "passenger_update": passenger_update,
    "flight_status": flight_status,
    "compensation": compensation,
}, opener="reservation_lookup", subjects_query="SELECT user_id AS customer_id, * FROM users ORDER BY user_id",
    introduce=introduce, account=account, facts={"address": address_fact, "amount": amount_fact},
    variants={"reservation_lookup": (membership_question,), "baggage": (baggage_question,),
              "cancellation": (cancellation_question,), "flight_status": (flight_status_unnamed,)})
"""Goal label -> mission builder (every label of GOAL_TOOLS); tasks are about every user, in a stable order,
and most start by looking up a reservation. Offers other domains the user's address and a reservation's price."""
