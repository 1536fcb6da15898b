"""Build the native airline snapshot at tau2's scale: 300 flights x 30 dates, 500 users, 2,000 reservations.

The rows AgentChangeBench's airline tasks name (`_anchors.py`) come first; everything else is generated
around them from one random.Random(seed), fixed name lists and no wall clock, so a seed always gives
the same snapshot, byte for byte.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

from shiftbox_servers.kit import SnapshotManifest

from ._anchors import (
    ANCHOR_FLIGHTS,
    ANCHOR_RESERVATIONS,
    ANCHOR_USERS,
    FLIGHT_DATE_OVERRIDES,
    GOLD_FLIGHT_DATES,
    NO_DIRECT_ROUTES,
    SEARCH_RULES,
    AnchorReservation,
    SearchRule,
)
from ._schema import (
    BAG_FEE,
    CABINS,
    CLOCK_START,
    DATES,
    FREE_BAGS,
    INSURANCE_FEE,
    SCHEMA,
    SNAPSHOT_VERSION,
    new_database,
)

Row = dict[str, Any]

N_FLIGHTS = 300
N_USERS = 500
N_RESERVATIONS = 2000
PROTECTED_MIN_SEATS = 9
"""Seats per cabin at least on the flights the tasks' gold calls book or reprice."""

AIRPORTS = (  # iata, city (tau2's list_all_airports), latitude, longitude
    ("SFO", "San Francisco", 37.62, -122.38), ("JFK", "New York", 40.64, -73.78),
    ("LAX", "Los Angeles", 33.94, -118.41), ("ORD", "Chicago", 41.98, -87.90),
    ("DFW", "Dallas", 32.90, -97.04), ("DEN", "Denver", 39.86, -104.67),
    ("SEA", "Seattle", 47.45, -122.31), ("ATL", "Atlanta", 33.64, -84.43),
    ("MIA", "Miami", 25.80, -80.29), ("BOS", "Boston", 42.36, -71.01),
    ("PHX", "Phoenix", 33.43, -112.01), ("IAH", "Houston", 29.98, -95.34),
    ("LAS", "Las Vegas", 36.08, -115.15), ("MCO", "Orlando", 28.43, -81.31),
    ("EWR", "Newark", 40.69, -74.17), ("CLT", "Charlotte", 35.21, -80.94),
    ("MSP", "Minneapolis", 44.88, -93.22), ("DTW", "Detroit", 42.21, -83.35),
    ("PHL", "Philadelphia", 39.87, -75.24), ("LGA", "LaGuardia", 40.78, -73.87),
)
PRICE_RANGES = {"basic_economy": (50, 100), "economy": (100, 200), "business": (200, 500)}

FIRST_NAMES = (
    "Aarav", "Amelia", "Anya", "Ava", "Chen", "Daiki", "Emma", "Ethan", "Evelyn", "Fatima", "Harper",
    "Isabella", "Ivan", "James", "Juan", "Lei", "Liam", "Lucas", "Mason", "Mei", "Mia", "Mohamed", "Noah",
    "Olivia", "Omar", "Raj", "Sofia", "Sophia", "Yara", "Yusuf", "Chloe", "Aisha", "Mateo", "Hana",
    "Arjun", "Zoe", "Kenji", "Nora", "Elena", "Priya",
)
LAST_NAMES = (
    "Ahmed", "Brown", "Davis", "Garcia", "Gonzalez", "Hernandez", "Ito", "Jackson", "Johansson", "Khan",
    "Kim", "Kovacs", "Lee", "Li", "Lopez", "Martin", "Moore", "Muller", "Nguyen", "Patel", "Rossi",
    "Sanchez", "Santos", "Silva", "Smith", "Taylor", "Thomas", "Wilson", "Wright", "Young",
)
STREETS = ("Cedar Avenue", "Chestnut Street", "Elm Avenue", "Hickory Lane", "Lakeview Drive", "Main Street",
           "Maple Drive", "Oak Street", "Park Avenue", "Pine Lane", "River Road", "Sunset Drive",
           "Willow Lane", "Broadway", "Highland Avenue", "Spruce Street")
CITIES = (  # city, state, zip prefix
    ("New York", "NY", "100"), ("Los Angeles", "CA", "900"), ("Chicago", "IL", "606"),
    ("Houston", "TX", "770"), ("Phoenix", "AZ", "850"), ("Philadelphia", "PA", "191"),
    ("San Antonio", "TX", "782"), ("San Diego", "CA", "921"), ("Dallas", "TX", "752"),
    ("Austin", "TX", "787"), ("Charlotte", "NC", "282"), ("Seattle", "WA", "981"),
    ("Denver", "CO", "802"), ("Boston", "MA", "021"), ("Detroit", "MI", "482"),
    ("Orlando", "FL", "328"), ("Miami", "FL", "331"), ("Minneapolis", "MN", "554"),
    ("Las Vegas", "NV", "891"), ("Atlanta", "GA", "303"),
)
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")
MEMBERSHIPS = {"regular": 45, "silver": 30, "gold": 25}
CABIN_WEIGHTS = {"basic_economy": 30, "economy": 45, "business": 25}
PASSENGER_COUNTS = {1: 50, 2: 25, 3: 14, 4: 7, 5: 4}
CERTIFICATE_VALUES = (100.0, 150.0, 200.0, 250.0, 500.0)
ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
BOOKING_WINDOW_START = datetime(2024, 4, 1)


def build_native(directory: Path, seed: int = 7) -> SnapshotManifest:
    """Generate the native airline database from `seed` and write it as a snapshot into `directory`."""
    world = _NativeAirline(Random(seed))
    world.generate()
    db = new_database()
    for table, rows in world.tables().items():
        db[table].insert_all(rows)
    return SCHEMA.write_snapshot(db, directory, snapshot_version=SNAPSHOT_VERSION, source=f"native seed={seed}")



# -- geometry and time -------------------------------------------------------------------------------


def _miles(a: str, b: str) -> float:
    (_, _, lat1, lon1), (_, _, lat2, lon2) = (next(x for x in AIRPORTS if x[0] == code) for code in (a, b))
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    cos = math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(dl)
    return 3959 * math.acos(max(-1.0, min(1.0, cos)))


def block_minutes(origin: str, destination: str) -> int:
    """Scheduled gate-to-gate time: 40 minutes plus cruise at 480 mph, to 5 minutes."""
    return int(round((40 + _miles(origin, destination) / 480 * 60) / 5) * 5)


def _clock(minutes: int) -> str:
    """Minutes after midnight of the departure day -> 'HH:MM:SS', with '+1' on the next day."""
    day, rest = divmod(minutes, 24 * 60)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return text + ("+1" if day else "")


@dataclass(frozen=True)
class _Flight:
    number: str
    origin: str
    destination: str
    departure: int  # minutes after midnight
    duration: int

    @property
    def arrival(self) -> int:
        return self.departure + self.duration

    def times(self, day: str) -> tuple[datetime, datetime]:
        start = datetime.fromisoformat(day)
        return start + timedelta(minutes=self.departure), start + timedelta(minutes=self.arrival)

    def row(self) -> Row:
        return {"flight_number": self.number, "origin": self.origin, "destination": self.destination,
                "scheduled_departure_time_est": _clock(self.departure),
                "scheduled_arrival_time_est": _clock(self.arrival)}


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


def _weighted(rng: Random, weights: Mapping[Any, int]) -> Any:
    return rng.choices(list(weights), list(weights.values()))[0]


# -- the generator -----------------------------------------------------------------------------------


class _NativeAirline:
    """The generator: one RNG and the rows made so far (flights, then users, then reservations)."""

    def __init__(self, rng: Random):
        self.rng = rng
        self.flights: dict[str, _Flight] = {}
        self.by_origin: dict[str, list[_Flight]] = {a[0]: [] for a in AIRPORTS}
        self.protected: set[tuple[str, str]] = set()
        """(flight, date) the tasks' reservations and gold calls use: never cancelled by the builder."""
        self.days: dict[tuple[str, str], Row] = {}
        self.users: dict[str, Row] = {}
        self.saved: dict[str, list[tuple[str, str, str]]] = {}
        self.methods: list[Row] = []
        self.reservations: list[Row] = []
        self.legs: list[Row] = []
        self.passengers: list[Row] = []
        self.payments: list[Row] = []
        self._payment_ids: set[str] = set()
        self._methods_by_id: dict[str, Row] = {}
        self._methods_by_user: dict[str, list[Row]] = {}
        self._reservation_ids: set[str] = set()

    def tables(self) -> dict[str, list[Row]]:
        return {
            "airports": [{"iata": a[0], "city": a[1]} for a in AIRPORTS],
            "flights": [f.row() for f in sorted(self.flights.values(), key=lambda f: f.number)],
            "flight_dates": [self.days[k] for k in sorted(self.days)],
            "users": list(self.users.values()),
            "saved_passengers": [{"user_id": uid, "position": i, "first_name": p[0], "last_name": p[1], "dob": p[2]}
                                 for uid, people in self.saved.items() for i, p in enumerate(people)],
            "payment_methods": self.methods,
            "reservations": self.reservations,
            "reservation_flights": self.legs,
            "reservation_passengers": self.passengers,
            "payments": self.payments,
        }

    def generate(self) -> None:
        self.make_flights()
        self.make_flight_dates()
        for rule in SEARCH_RULES:
            self.enforce(rule)
        for anchor in ANCHOR_USERS:
            self.anchor_user(anchor)
        while len(self.users) < N_USERS:
            self.random_user()
        for anchor in ANCHOR_RESERVATIONS:
            self.anchor_reservation(anchor)
        users = [u for u in self.users if u not in {a.user_id for a in ANCHOR_USERS}]
        while len(self.reservations) < N_RESERVATIONS:
            self.random_reservation(self.rng.choice(users))

    # -- flights --------------------------------------------------------------------------------

    def make_flights(self) -> None:
        for number, (origin, destination, departs) in ANCHOR_FLIGHTS.items():
            hours, minutes = map(int, departs.split(":"))
            self.flights[number] = _Flight(number, origin, destination, hours * 60 + minutes,
                                           block_minutes(origin, destination))
        codes = [a[0] for a in AIRPORTS]
        for n in range(1, N_FLIGHTS + 1):
            number = f"HAT{n:03d}"
            if number in self.flights:
                continue
            while True:
                origin, destination = self.rng.sample(codes, 2)
                if (origin, destination) not in NO_DIRECT_ROUTES:
                    break
            departure = self.rng.randrange(5 * 60, 23 * 60, 30)
            self.flights[number] = _Flight(number, origin, destination, departure,
                                           block_minutes(origin, destination))
        for number in sorted(self.flights):
            self.by_origin[self.flights[number].origin].append(self.flights[number])

    def make_flight_dates(self) -> None:
        protected = set(GOLD_FLIGHT_DATES) | {
            (leg[0], leg[1]) for r in ANCHOR_RESERVATIONS for leg in r.legs if leg[1] > CLOCK_START.date().isoformat()}
        flown = {(leg[0], leg[1]) for r in ANCHOR_RESERVATIONS for leg in r.legs
                 if leg[1] < CLOCK_START.date().isoformat()}
        self.protected = protected | flown
        for number in sorted(self.flights):
            flight = self.flights[number]
            for day in DATES:
                key = (number, day)
                override = FLIGHT_DATE_OVERRIDES.get(key, {})
                status = override.get("status") or self.status(flight, day)
                if key in protected and "status" not in override:
                    status = "available"
                if key in flown and "status" not in override:
                    status = "landed"
                self.days[key] = self.flight_day(flight, day, str(status), override, key in protected)

    def status(self, flight: _Flight, day: str) -> str:
        today = CLOCK_START.date().isoformat()
        r = self.rng.random()
        if day < today:
            return "cancelled" if r < 0.04 else "landed"
        if day == today:
            departs, lands = flight.times(day)
            if lands <= CLOCK_START:
                return "cancelled" if r < 0.04 else "landed"
            if departs <= CLOCK_START:
                return "flying"
            return "on time" if r < 0.70 else "delayed" if r < 0.92 else "cancelled"
        if day == (CLOCK_START.date() + timedelta(days=1)).isoformat():
            return "available" if r < 0.85 else "on time" if r < 0.93 else "delayed" if r < 0.98 else "cancelled"
        return "cancelled" if r < 0.015 else "available"

    def flight_day(self, flight: _Flight, day: str, status: str, override: Mapping[str, object],
                   protected: bool) -> Row:
        rng = self.rng
        row: Row = {"flight_number": flight.number, "date": day, "status": status}
        departs, lands = flight.times(day)
        if status == "available":
            for cabin in CABINS:
                seats = rng.randint(0, 20)
                row[f"seats_{cabin}"] = max(seats, PROTECTED_MIN_SEATS) if protected else seats
                low, high = PRICE_RANGES[cabin]
                row[f"price_{cabin}"] = float(override.get(cabin, rng.randint(low, high)))
        elif status in ("on time", "delayed"):
            late = timedelta(minutes=rng.randint(-5, 10) if status == "on time" else rng.randint(30, 240))
            row["estimated_departure_time_est"] = _iso(departs + late)
            row["estimated_arrival_time_est"] = _iso(lands + late)
        elif status == "flying":
            late = timedelta(minutes=rng.randint(-5, 40))
            row["actual_departure_time_est"] = _iso(departs + late)
            row["estimated_arrival_time_est"] = _iso(lands + late)
        elif status == "landed":
            late = timedelta(minutes=rng.randint(-5, 40))
            row["actual_departure_time_est"] = _iso(departs + late)
            row["actual_arrival_time_est"] = _iso(lands + late + timedelta(minutes=rng.randint(-10, 10)))
        return row

    # -- what the tasks' users choose ----------------------------------------------------------

    def itineraries(self, rule: SearchRule) -> list[list[tuple[_Flight, str]]]:
        """What search_direct_flight / search_onestop_flight offer for the rule, after its filters."""
        found = []
        for origin, destination in itertools.product(rule.origins, rule.destinations):
            for first in self.by_origin[origin]:
                if self.days[(first.number, rule.date)]["status"] != "available":
                    continue
                if first.destination == destination:
                    found.append([(first, rule.date)])
                    continue
                if rule.direct_only or first.destination == origin:
                    continue
                lands = first.times(rule.date)[1]
                later = lands.date().isoformat()
                for second in self.by_origin[first.destination]:
                    if (second.destination == destination and later in DATES
                            and self.days[(second.number, later)]["status"] == "available"
                            and second.times(later)[0] >= lands):
                        found.append([(first, rule.date), (second, later)])
        day = datetime.fromisoformat(rule.date)
        after, before = (day + timedelta(hours=int(t[:2]), minutes=int(t[3:])) for t in
                         (rule.depart_after, rule.depart_before))
        arrive_by = day + timedelta(hours=int(rule.arrive_before[:2]), minutes=int(rule.arrive_before[3:])) \
            if rule.arrive_before else None
        return [it for it in found if after <= it[0][0].times(it[0][1])[0] <= before
                and (arrive_by is None or it[-1][0].times(it[-1][1])[1] <= arrive_by)]

    def score(self, rule: SearchRule, itinerary: list[tuple[_Flight, str]]) -> float:
        if rule.best == "cheapest":
            return sum(self.days[(f.number, d)][f"price_{rule.cabin}"] for f, d in itinerary)
        start, end = itinerary[0][0].times(itinerary[0][1])[0], itinerary[-1][0].times(itinerary[-1][1])[1]
        return (end - start).total_seconds() / 60

    def enforce(self, rule: SearchRule) -> None:
        """Make the rule's gold itinerary the unique best: raise rivals' fares or cancel their flights."""
        for _ in range(500):
            offered = self.itineraries(rule)
            gold = next(it for it in offered if tuple(f.number for f, _ in it) == rule.gold)
            target = self.score(rule, gold)
            rivals = [it for it in offered if it is not gold and self.score(rule, it) <= target]
            if not rivals:
                return
            rival = rivals[0]
            if rule.best == "cheapest":
                keys = [(f.number, d) for f, d in rival
                        if (f.number, d) not in FLIGHT_DATE_OVERRIDES and f.number not in rule.gold]
                if not keys:
                    raise RuntimeError(f"task {rule.task}: cannot make {rule.gold} cheaper than {rival}")
                self.raise_fare(keys[-1], rule.cabin, target - self.score(rule, rival) + self.rng.randint(3, 25))
            else:
                keys = [(f.number, d) for f, d in rival if (f.number, d) not in self.protected]
                if not keys:
                    raise RuntimeError(f"task {rule.task}: cannot make {rule.gold} faster than {rival}")
                self.days[keys[0]] = {"flight_number": keys[0][0], "date": keys[0][1], "status": "cancelled"}
        raise RuntimeError(f"task {rule.task}: rivals of {rule.gold} keep winning")

    def raise_fare(self, key: tuple[str, str], cabin: str, amount: float) -> None:
        """Raise one cabin's fare, keeping basic economy < economy < business."""
        row = self.days[key]
        row[f"price_{cabin}"] += amount
        for lower, higher in itertools.pairwise(CABINS):
            if row[f"price_{higher}"] <= row[f"price_{lower}"]:
                row[f"price_{higher}"] = row[f"price_{lower}"] + self.rng.randint(20, 120)

    # -- users ----------------------------------------------------------------------------------

    def new_payment_id(self, source: str) -> str:
        while True:
            payment_id = f"{source}_{self.rng.randrange(1_000_000, 10_000_000)}"
            if payment_id not in self._payment_ids:
                self._payment_ids.add(payment_id)
                return payment_id

    def add_method(self, user_id: str, payment_id: str, source: str, *, brand: str | None = None,
                   last_four: str | None = None, balance: float | None = None, status: str = "active") -> Row:
        self._payment_ids.add(payment_id)
        row = {"payment_id": payment_id, "user_id": user_id, "source": source, "brand": brand,
               "last_four": last_four, "balance": balance, "status": status}
        self.methods.append(row)
        self._methods_by_id[payment_id] = row
        self._methods_by_user.setdefault(user_id, []).append(row)
        return row

    def person(self) -> tuple[str, str, str]:
        dob = date(1940, 1, 1) + timedelta(days=self.rng.randrange(365 * 66))
        return self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES), dob.isoformat()

    def address(self) -> Row:
        rng = self.rng
        city, state, prefix = rng.choice(CITIES)
        return {"address1": f"{rng.randint(10, 999)} {rng.choice(STREETS)}",
                "address2": f"Suite {rng.randint(100, 999)}" if rng.random() < 0.4 else None,
                "city": city, "state": state, "country": "USA", "zip": f"{prefix}{rng.randrange(100):02d}"}

    def add_user(self, user_id: str, first: str, last: str, dob: str, membership: str) -> None:
        email = f"{first}.{last}{self.rng.randrange(1000, 10000)}@example.com".lower()
        self.users[user_id] = {"user_id": user_id, "first_name": first, "last_name": last, "email": email,
                               "dob": dob, **self.address(), "membership": membership}

    def anchor_user(self, anchor) -> None:
        self.add_user(anchor.user_id, anchor.first_name, anchor.last_name, anchor.dob, anchor.membership)
        self.saved[anchor.user_id] = list(anchor.saved_passengers)
        for method in anchor.payment_methods:
            payment_id = method[0]
            source = payment_id.rsplit("_", 1)[0]
            if source == "credit_card":
                self.add_method(anchor.user_id, payment_id, source, brand=method[1], last_four=method[2])
            else:
                self.add_method(anchor.user_id, payment_id, source, balance=float(method[1]))

    def random_user(self) -> None:
        rng = self.rng
        first, last, dob = self.person()
        user_id = f"{first}_{last}_{rng.randrange(1000, 10000)}".lower()
        if user_id in self.users:
            return
        self.add_user(user_id, first, last, dob, _weighted(rng, MEMBERSHIPS))
        self.saved[user_id] = [self.person() for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]
        for _ in range(rng.choice((1, 1, 1, 2))):
            self.add_method(user_id, self.new_payment_id("credit_card"), "credit_card",
                            brand=rng.choice(CARD_BRANDS), last_four=f"{rng.randrange(10_000):04d}")
        for _ in range(rng.choice((0, 0, 1, 1, 2))):
            self.add_method(user_id, self.new_payment_id("gift_card"), "gift_card",
                            balance=float(rng.randint(0, 300)))
        for _ in range(rng.choice((0, 0, 0, 1, 2))):
            self.add_method(user_id, self.new_payment_id("certificate"), "certificate",
                            balance=rng.choice(CERTIFICATE_VALUES))

    # -- reservations ---------------------------------------------------------------------------

    def add_reservation(self, rid: str, user_id: str, origin: str, destination: str, flight_type: str,
                        cabin: str, legs: list[tuple[str, str, float]], passengers: list[tuple[str, str, str]],
                        created_at: str, bags: tuple[int, int], insurance: str, status: str,
                        pay: list[tuple[str, float]]) -> None:
        self._reservation_ids.add(rid)
        self.reservations.append({
            "reservation_id": rid, "user_id": user_id, "origin": origin, "destination": destination,
            "flight_type": flight_type, "cabin": cabin, "created_at": created_at, "total_baggages": bags[0],
            "nonfree_baggages": bags[1], "insurance": insurance, "status": status})
        self.legs += [{"reservation_id": rid, "position": i, "flight_number": n, "date": d, "price": p}
                      for i, (n, d, p) in enumerate(legs)]
        self.passengers += [{"reservation_id": rid, "position": i, "first_name": f, "last_name": la, "dob": dob}
                            for i, (f, la, dob) in enumerate(passengers)]
        position = itertools.count()
        for payment_id, amount in pay:
            self.payments.append({"reservation_id": rid, "position": next(position), "payment_id": payment_id,
                                  "amount": amount, "kind": "payment", "created_at": created_at})
        if status == "cancelled":
            created = datetime.fromisoformat(created_at)
            refunded = _iso(created + (CLOCK_START - created) * self.rng.uniform(0.1, 0.9))
            for payment_id, amount in pay:
                self.payments.append({"reservation_id": rid, "position": next(position), "payment_id": payment_id,
                                      "amount": -amount, "kind": "refund", "created_at": refunded})
                method = self._methods_by_id[payment_id]
                if method["status"] == "redeemed":  # a refunded certificate is reissued with the refund
                    method.update(status="active", balance=amount)

    def booked_price(self, number: str, day: str, cabin: str) -> float:
        """What a seat cost when booked: near today's fare if still on sale, else a fare of the cabin."""
        row = self.days[(number, day)]
        if row["status"] == "available":
            return float(round(row[f"price_{cabin}"] * self.rng.uniform(0.85, 1.15)))
        return float(self.rng.randint(*PRICE_RANGES[cabin]))

    def passengers_for(self, user_id: str, count: int) -> list[tuple[str, str, str]]:
        user = self.users[user_id]
        people = [(user["first_name"], user["last_name"], user["dob"]), *self.saved.get(user_id, [])]
        while len(people) < count:
            people.append(self.person())
        return people[:count]

    @staticmethod
    def total(prices: Iterable[float], pax: int, insurance: str, nonfree: int) -> float:
        return round(sum(prices) * pax + (INSURANCE_FEE * pax if insurance == "yes" else 0) + BAG_FEE * nonfree, 2)

    def anchor_reservation(self, a: AnchorReservation) -> None:
        legs = [(leg[0], leg[1], float(leg[2]) if len(leg) > 2 else self.booked_price(leg[0], leg[1], a.cabin))
                for leg in a.legs]
        passengers = (self.passengers_for(a.user_id, a.passengers) if isinstance(a.passengers, int)
                      else list(a.passengers))
        amount = self.total((p for _, _, p in legs), len(passengers), a.insurance, a.bags[1])
        self.add_reservation(a.reservation_id, a.user_id, a.origin, a.destination, a.flight_type, a.cabin, legs,
                             passengers, a.created_at, a.bags, a.insurance, a.status, [(a.pay_with, amount)])

    def new_reservation_id(self) -> str:
        while True:
            rid = "".join(self.rng.choice(ID_ALPHABET) for _ in range(6))
            if rid not in self._reservation_ids and not rid.startswith("HAT"):
                return rid

    def route(self, origin: str, day: str, avoid: str | None = None,
              to: str | None = None) -> list[tuple[_Flight, str]] | None:
        """A direct or one-stop itinerary from `origin` leaving on `day` (to `to`, if given)."""
        rng = self.rng
        firsts = [f for f in self.by_origin[origin] if f.destination != avoid]
        direct = [f for f in firsts if to is None or f.destination == to]
        if direct and rng.random() < 0.6:
            return [(rng.choice(direct), day)]
        for first in rng.sample(firsts, len(firsts)):
            lands = first.times(day)[1]
            later = lands.date().isoformat()
            if later not in DATES:
                continue
            seconds = [f for f in self.by_origin[first.destination]
                       if f.destination not in (origin, first.destination) and (to is None or f.destination == to)
                       and f.times(later)[0] >= lands]
            if seconds:
                return [(first, day), (rng.choice(seconds), later)]
        return [(rng.choice(direct), day)] if direct else None

    def random_reservation(self, user_id: str) -> None:
        rng = self.rng
        origin = rng.choice(AIRPORTS)[0]
        out = self.route(origin, rng.choice(DATES))
        if out is None:
            return
        destination = out[-1][0].destination
        legs = list(out)
        flight_type = "one_way"
        if rng.random() < 0.5:
            back_day = (datetime.fromisoformat(out[-1][1]) + timedelta(days=rng.randint(1, 6))).date().isoformat()
            back = self.route(destination, back_day, to=origin) if back_day in DATES else None
            if back:
                legs += back
                flight_type = "round_trip"
        cabin = _weighted(rng, CABIN_WEIGHTS)
        pax = _weighted(rng, PASSENGER_COUNTS)
        membership = self.users[user_id]["membership"]
        insurance = "yes" if rng.random() < 0.35 else "no"
        bags = sum(rng.choice((0, 0, 1, 1, 2)) for _ in range(pax))
        nonfree = max(0, bags - FREE_BAGS[membership][cabin] * pax)
        priced = [(f.number, d, self.booked_price(f.number, d, cabin)) for f, d in legs]
        first_departure = legs[0][0].times(legs[0][1])[0]
        latest = min(first_departure - timedelta(hours=2), CLOCK_START - timedelta(minutes=30))
        earliest = min(BOOKING_WINDOW_START, latest - timedelta(days=1))
        created = earliest + timedelta(seconds=rng.randrange(int((latest - earliest).total_seconds())))
        created = created.replace(second=0)
        status = "cancelled" if rng.random() < 0.07 else "active"
        amount = self.total((p for _, _, p in priced), pax, insurance, nonfree)
        self.add_reservation(self.new_reservation_id(), user_id, origin, destination, flight_type, cabin, priced,
                             self.passengers_for(user_id, pax), _iso(created), (bags, nonfree), insurance, status,
                             self.payment_plan(user_id, amount))

    def payment_plan(self, user_id: str, amount: float) -> list[tuple[str, float]]:
        """Mostly one credit card; sometimes part on a gift card or a (then redeemed) certificate."""
        rng = self.rng
        mine = [m for m in self._methods_by_user[user_id] if m["status"] == "active"]
        card = next(m["payment_id"] for m in mine if m["source"] == "credit_card")
        gift = [m["payment_id"] for m in mine if m["source"] == "gift_card"]
        r = rng.random()
        if r < 0.2 and gift:
            part = min(amount, float(rng.randint(20, 150)))
            return [(rng.choice(gift), part)] + ([(card, round(amount - part, 2))] if amount - part > 0 else [])
        if r < 0.3:
            part = min(amount, rng.choice(CERTIFICATE_VALUES))
            certificate = self.add_method(user_id, self.new_payment_id("certificate"), "certificate",
                                          balance=0.0, status="redeemed")["payment_id"]
            return [(certificate, part)] + ([(card, round(amount - part, 2))] if amount - part > 0 else [])
        return [(card, amount)]
