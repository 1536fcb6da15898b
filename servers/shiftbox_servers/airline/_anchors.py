"""Facts harvested from AgentChangeBench's airline tasks (tau2's airline tasks), so they run here.

tau2's airline database is not published with AgentChangeBench, so the native snapshot recreates
what the tasks name: their users, reservations, flight numbers and payment ids, with routes, dates,
statuses, prices and balances chosen so the gold calls succeed and the tasks' stated facts hold
(e.g. the $5244 refund of GV1N64, the $23553 Omar Davis saves, the $1628 of Daiki Muller's other
upcoming flights). Everything else in the snapshot is generated around these rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# -- flights -----------------------------------------------------------------------------------------

ANCHOR_FLIGHTS: dict[str, tuple[str, str, str]] = {
    # flight number: (origin, destination, scheduled departure EST); the arrival follows from distance
    # flights named by the tasks' gold calls
    "HAT001": ("PHL", "LGA", "07:00"), "HAT003": ("LAS", "DEN", "08:00"), "HAT005": ("ORD", "MIA", "09:00"),
    "HAT010": ("ATL", "MCO", "13:30"), "HAT023": ("JFK", "SFO", "08:00"), "HAT028": ("BOS", "ORD", "06:30"),
    "HAT033": ("JFK", "DTW", "04:00"), "HAT039": ("ATL", "SEA", "15:40"), "HAT041": ("EWR", "LAX", "10:00"),
    "HAT045": ("PHX", "SEA", "16:00"), "HAT056": ("JFK", "DTW", "07:00"), "HAT069": ("JFK", "SEA", "06:00"),
    "HAT072": ("IAH", "SFO", "11:00"), "HAT076": ("ATL", "DFW", "11:30"), "HAT078": ("IAH", "PHX", "06:00"),
    "HAT080": ("MIA", "ATL", "08:00"), "HAT084": ("SEA", "LAS", "07:00"), "HAT097": ("DTW", "MSP", "07:00"),
    "HAT100": ("PHX", "JFK", "15:00"), "HAT110": ("ATL", "CLT", "07:00"), "HAT112": ("IAH", "LAS", "17:00"),
    "HAT118": ("PHX", "DEN", "10:00"), "HAT136": ("JFK", "ATL", "11:00"), "HAT138": ("DTW", "ORD", "11:00"),
    "HAT148": ("CLT", "MIA", "13:00"), "HAT169": ("DTW", "JFK", "04:30"), "HAT172": ("CLT", "PHL", "10:30"),
    "HAT175": ("LAS", "IAH", "16:30"), "HAT178": ("MIA", "ORD", "12:00"), "HAT202": ("EWR", "PHX", "06:00"),
    "HAT204": ("SFO", "PHX", "09:00"), "HAT208": ("EWR", "MSP", "17:00"), "HAT215": ("EWR", "CLT", "13:00"),
    "HAT228": ("LAX", "SEA", "16:00"), "HAT232": ("PHX", "LAX", "13:00"), "HAT251": ("MSP", "SEA", "11:00"),
    "HAT255": ("DFW", "CLT", "08:00"), "HAT258": ("SEA", "SFO", "14:00"), "HAT266": ("LAS", "IAH", "09:00"),
    "HAT268": ("JFK", "ATL", "08:30"), "HAT271": ("ORD", "PHL", "09:30"), "HAT276": ("SEA", "JFK", "07:00"),
    "HAT277": ("ORD", "DEN", "12:00"), "HAT278": ("SFO", "IAH", "12:00"), "HAT279": ("JFK", "SEA", "10:00"),
    "HAT290": ("DEN", "LAS", "13:00"), "HAT300": ("MSP", "EWR", "08:00"),
    # flights of the tasks' reservations whose numbers the tasks do not name
    "HAT013": ("MSP", "BOS", "12:00"), "HAT020": ("LAX", "EWR", "06:00"), "HAT047": ("LAX", "ORD", "09:00"),
    "HAT048": ("SFO", "DEN", "11:00"), "HAT050": ("BOS", "MIA", "10:00"), "HAT057": ("LAX", "DFW", "09:30"),
    "HAT058": ("DFW", "ATL", "12:30"), "HAT061": ("DTW", "LGA", "08:00"), "HAT062": ("LGA", "DTW", "18:00"),
    "HAT064": ("ATL", "BOS", "09:00"), "HAT065": ("JFK", "DFW", "14:00"), "HAT067": ("IAH", "SEA", "10:00"),
    "HAT068": ("SEA", "IAH", "09:00"), "HAT070": ("LAX", "ATL", "08:00"), "HAT071": ("ATL", "DEN", "09:00"),
    "HAT073": ("DEN", "LAX", "13:00"), "HAT074": ("JFK", "MIA", "12:00"), "HAT075": ("MCO", "CLT", "07:00"),
    "HAT077": ("DFW", "SEA", "08:30"), "HAT079": ("JFK", "ORD", "07:00"), "HAT081": ("ORD", "SFO", "11:00"),
    "HAT082": ("ORD", "BOS", "14:00"), "HAT083": ("CLT", "LGA", "09:00"), "HAT085": ("LGA", "CLT", "16:00"),
    "HAT086": ("MIA", "DEN", "10:00"), "HAT087": ("DEN", "MIA", "08:00"), "HAT092": ("DFW", "JFK", "08:00"),
    "HAT093": ("DFW", "BOS", "09:00"), "HAT094": ("JFK", "BOS", "10:00"), "HAT095": ("JFK", "MIA", "12:00"),
    "HAT098": ("DFW", "LGA", "07:30"), "HAT101": ("BOS", "JFK", "18:00"), "HAT102": ("ATL", "JFK", "07:00"),
    "HAT104": ("JFK", "BOS", "17:00"), "HAT105": ("JFK", "ATL", "10:00"), "HAT106": ("ORD", "LAS", "13:00"),
    "HAT107": ("LAS", "ORD", "08:00"), "HAT114": ("JFK", "SFO", "14:00"), "HAT119": ("SFO", "JFK", "13:00"),
    "HAT126": ("ATL", "PHL", "08:00"), "HAT130": ("IAH", "SFO", "07:30"), "HAT131": ("SFO", "IAH", "14:00"),
    "HAT140": ("EWR", "IAH", "06:00"), "HAT141": ("IAH", "EWR", "15:00"), "HAT150": ("CLT", "EWR", "17:00"),
    "HAT173": ("DEN", "IAH", "15:00"), "HAT183": ("LAS", "PHX", "07:00"), "HAT184": ("PHX", "IAH", "10:30"),
    "HAT190": ("LAS", "ORD", "17:30"), "HAT191": ("ORD", "LAS", "09:00"), "HAT235": ("BOS", "MCO", "18:00"),
    "HAT298": ("MCO", "MSP", "09:00"),
}

NO_DIRECT_ROUTES: frozenset[tuple[str, str]] = frozenset({("JFK", "MCO")})
"""Routes no generated flight may fly (task 9: there is no nonstop JFK -> MCO to switch M20IZO to)."""

FLIGHT_DATE_OVERRIDES: dict[tuple[str, str], dict[str, object]] = {
    # (flight, date): today's status and/or prices per cabin that the tasks' facts depend on
    ("HAT039", "2024-05-15"): {"status": "delayed"},   # tasks 20/27: Ethan Martin's delayed flight
    ("HAT045", "2024-05-15"): {"status": "delayed"},   # task 5: Mei Brown's delayed flight
    ("HAT190", "2024-05-15"): {"status": "delayed"},   # tasks 2/38: Noah Muller's most recent reservation
    ("HAT271", "2024-05-26"): {"economy": 174},        # task 8: 2 x 174 = 348 on one certificate
    ("HAT023", "2024-05-26"): {"business": 301},       # tasks 14/23: 301 + 285 + 285 = 871 in business
    ("HAT204", "2024-05-28"): {"business": 285},
    ("HAT100", "2024-05-28"): {"business": 285},
    ("HAT114", "2024-05-26"): {"business": 488},       # … and the direct alternatives cost more
    ("HAT119", "2024-05-28"): {"business": 612},
    ("HAT136", "2024-05-20"): {"economy": 130},        # task 20: 130 + 125 = 255 = 250 + 5
    ("HAT039", "2024-05-20"): {"economy": 125},
    ("HAT069", "2024-05-20"): {"basic_economy": 52},   # task 24: 52 + 54 = 106 = 39 + 67
    ("HAT276", "2024-05-25"): {"basic_economy": 54},
    ("HAT097", "2024-05-17"): {"economy": 190},        # task 25: 190 + 185 = 375 = 128 + 247
    ("HAT251", "2024-05-17"): {"economy": 185},
    ("HAT069", "2024-05-24"): {"economy": 150},        # task 35: 150 + 140 = 290
    ("HAT258", "2024-05-24"): {"economy": 140},
    ("HAT001", "2024-05-16"): {"economy": 122},        # AgentChangeBench tasks_new: 122 for HAT001
    ("HAT003", "2024-05-19"): {"basic_economy": 42},   # task 11: (1401 - 90) x 4 = 5244 refunded
    ("HAT290", "2024-05-20"): {"basic_economy": 48},
    ("HAT235", "2024-05-18"): {"economy": 122, "business": 350},  # task 12: 2 x ((350-122) + (499-127))
    ("HAT298", "2024-05-19"): {"economy": 127, "business": 499},
    ("HAT028", "2024-05-21"): {"economy": 140},        # task 18: Omar Davis saves 23553 in total
    ("HAT277", "2024-05-21"): {"economy": 160},
    ("HAT080", "2024-05-28"): {"economy": 150},
    ("HAT076", "2024-05-28"): {"economy": 130},
    ("HAT255", "2024-05-30"): {"economy": 170},
    ("HAT148", "2024-05-30"): {"economy": 150},
    ("HAT232", "2024-05-24"): {"economy": 90},
    ("HAT228", "2024-05-24"): {"economy": 80},
    ("HAT084", "2024-05-23"): {"economy": 170},
    ("HAT175", "2024-05-23"): {"economy": 150},
    ("HAT276", "2024-05-21"): {"economy": 190},
    ("HAT279", "2024-05-22"): {"economy": 184},
    ("HAT300", "2024-05-25"): {"business": 410},       # task 44: upgrades cost 515 + 220 + 650 = 1385
    ("HAT208", "2024-05-27"): {"business": 395},
    ("HAT268", "2024-05-24"): {"business": 380},
    ("HAT300", "2024-05-21"): {"business": 480},
    ("HAT215", "2024-05-21"): {"business": 440},
    ("HAT056", "2024-05-25"): {"economy": 128},        # task 17: upgrade FQ8APE for 129 on a 250 gift card
    ("HAT138", "2024-05-25"): {"economy": 119},
    ("HAT110", "2024-05-24"): {"economy": 95},         # task 15: 95 + 105 = 200, 40 back on the gift card
    ("HAT172", "2024-05-24"): {"economy": 105},
    ("HAT290", "2024-05-27"): {"economy": 110},        # task 21: 110 + 120 - 180 = 50 on an 80 gift card
    ("HAT175", "2024-05-27"): {"economy": 120},
    ("HAT266", "2024-05-19"): {"economy": 130},        # task 30: 130 - 160 = 30 back on the gift card
    ("HAT072", "2024-05-19"): {"economy": 160},        # task 33: 310 - 335 = 25 back, then 2 bags for 100
    ("HAT278", "2024-05-23"): {"economy": 150},
}

GOLD_FLIGHT_DATES: tuple[tuple[str, str], ...] = (
    # flights the tasks' gold calls book or switch to: kept bookable, with seats for every passenger
    ("HAT271", "2024-05-26"), ("HAT023", "2024-05-26"), ("HAT204", "2024-05-28"), ("HAT100", "2024-05-28"),
    ("HAT136", "2024-05-20"), ("HAT039", "2024-05-20"), ("HAT069", "2024-05-20"), ("HAT276", "2024-05-25"),
    ("HAT069", "2024-05-24"), ("HAT258", "2024-05-24"), ("HAT001", "2024-05-16"), ("HAT110", "2024-05-24"),
    ("HAT172", "2024-05-24"), ("HAT290", "2024-05-27"), ("HAT175", "2024-05-27"), ("HAT169", "2024-05-17"),
    ("HAT033", "2024-05-19"), ("HAT266", "2024-05-19"), ("HAT041", "2024-05-21"), ("HAT072", "2024-05-19"),
    ("HAT278", "2024-05-23"),
)

# -- users -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnchorUser:
    user_id: str
    first_name: str
    last_name: str
    dob: str
    membership: str
    payment_methods: tuple[tuple, ...]
    """(id, brand, last_four) for credit cards; (id, balance) for gift cards and certificates."""
    saved_passengers: tuple[tuple[str, str, str], ...] = ()


def _u(user_id: str, dob: str, membership: str, *methods: tuple, saved: tuple = ()) -> AnchorUser:
    first, last = (part.capitalize() for part in user_id.split("_")[:2])
    return AnchorUser(user_id, first, last, dob, membership, tuple(methods), tuple(saved))


ANCHOR_USERS: tuple[AnchorUser, ...] = (
    _u("aarav_ahmed_6699", "1985-04-04", "regular", ("credit_card_9074831", "mastercard", "7334"),
       ("gift_card_5327120", 84.0)),
    _u("aarav_garcia_1177", "1986-07-22", "regular", ("credit_card_4663051", "visa", "2261"),
       ("gift_card_8887175", 60.0)),
    _u("amelia_davis_8890", "1984-03-05", "gold", ("credit_card_4074252", "visa", "5092"),
       ("gift_card_2278451", 112.0), saved=(("Amelia", "Lopez", "1979-02-11"), ("Lucas", "Davis", "2002-08-30"))),
    _u("amelia_rossi_1297", "1961-12-04", "regular", ("credit_card_4240750", "visa", "3385")),
    _u("amelia_sanchez_4739", "1955-02-01", "regular", ("credit_card_1698071", "mastercard", "4907")),
    _u("anya_garcia_5901", "1992-11-12", "silver", ("credit_card_2259499", "visa", "7816"),
       ("gift_card_7416602", 155.0), saved=(("Mei", "Lee", "1989-12-13"),)),
    _u("chen_lee_6825", "1967-12-12", "gold", ("credit_card_4938634", "visa", "9990"),
       ("certificate_3136074", 150.0), saved=(("Noah", "Hernandez", "1968-01-06"),)),
    _u("daiki_lee_6144", "1976-10-08", "regular", ("credit_card_6198952", "visa", "1724"),
       ("gift_card_5128346", 52.0)),
    _u("daiki_muller_1116", "1954-07-04", "silver", ("credit_card_2408938", "visa", "2135"),
       ("gift_card_6421385", 215.0)),
    _u("emma_kim_9957", "1990-07-28", "regular", ("credit_card_5832574", "mastercard", "8014"),
       ("gift_card_6400084", 47.0)),
    _u("ethan_martin_2396", "1963-05-18", "silver", ("credit_card_5447879", "visa", "4216"),
       ("certificate_7442032", 100.0), saved=(("Liam", "Martin", "1993-03-21"), ("Mia", "Martin", "1995-09-06"))),
    _u("ivan_muller_7015", "1990-05-23", "regular", ("credit_card_3563913", "visa", "8422"),
       ("gift_card_8516878", 128.0), ("certificate_9246237", 500.0),
       saved=(("Ivan", "Smith", "1986-03-14"),)),
    _u("ivan_rossi_8555", "1958-10-19", "regular", ("credit_card_9659780", "mastercard", "3045")),
    _u("james_lee_6136", "1995-06-02", "regular", ("credit_card_1559867", "visa", "6390")),
    _u("james_patel_9828", "1980-11-24", "gold", ("credit_card_5108751", "mastercard", "6641"),
       ("gift_card_1642017", 35.0),
       saved=(("Sophia", "Patel", "1983-04-19"), ("Ava", "Patel", "2010-06-02"), ("Lucas", "Patel", "2013-09-15"))),
    _u("james_taylor_7043", "1997-01-23", "regular", ("credit_card_7437203", "visa", "2902"),
       ("gift_card_5634230", 100.0)),
    _u("liam_khan_2521", "1979-09-27", "silver", ("credit_card_7231150", "visa", "4457"),
       saved=(("Fatima", "Khan", "1981-02-10"),)),
    _u("lisa_wilson_4567", "1988-08-08", "regular", ("credit_card_6690242", "visa", "1818")),
    _u("lucas_brown_4047", "1968-08-26", "regular", ("credit_card_7872117", "mastercard", "5565")),
    _u("mei_brown_7075", "1986-12-14", "regular", ("credit_card_4920843", "visa", "3717"),
       ("certificate_1783327", 150.0)),
    _u("mia_kim_4397", "1965-06-09", "silver", ("credit_card_7988435", "visa", "2409"),
       ("gift_card_7359776", 39.0), ("gift_card_7773485", 150.0), saved=(("Ethan", "Kim", "1991-10-23"),)),
    _u("mia_li_3668", "1990-04-05", "gold", ("credit_card_4421486", "visa", "7447"),
       ("certificate_4856383", 100.0), ("certificate_7504069", 250.0)),
    _u("mohamed_hernandez_5188", "1991-04-17", "regular", ("credit_card_2436051", "visa", "4780")),
    _u("mohamed_silva_9265", "1960-11-26", "regular", ("credit_card_2198526", "mastercard", "1681"),
       ("certificate_2765295", 250.0), ("certificate_3765853", 500.0), ("certificate_9984806", 250.0),
       ("gift_card_6136092", 129.0), ("gift_card_8020792", 198.0),
       saved=(("Raj", "Sanchez", "1986-09-12"), ("Liam", "Wilson", "1980-03-27"),
              ("Aarav", "Sanchez", "1986-09-12"), ("Evelyn", "Wilson", "1980-03-27"))),
    _u("noah_muller_9847", "1963-01-22", "silver", ("credit_card_7574394", "visa", "6290")),
    _u("olivia_gonzalez_2305", "1988-06-13", "regular", ("credit_card_9969263", "visa", "1525"),
       ("gift_card_2200803", 123.0)),
    _u("omar_davis_3817", "1982-10-19", "regular", ("credit_card_2929732", "visa", "7803"),
       ("credit_card_9525117", "mastercard", "6522"), ("gift_card_3481935", 22.0), ("gift_card_6847880", 31.0)),
    _u("omar_rossi_1241", "1970-06-06", "gold", ("credit_card_8931521", "visa", "3902"),
       ("gift_card_8190333", 250.0), saved=(("Ivan", "Garcia", "1982-03-15"),)),
    _u("raj_brown_5782", "1967-09-04", "regular", ("credit_card_8003957", "visa", "7705")),
    _u("raj_sanchez_7340", "1965-08-17", "regular", ("credit_card_7891819", "visa", "6237"),
       ("gift_card_1591043", 76.0)),
    _u("sofia_kim_7287", "1950-06-24", "silver", ("credit_card_9771526", "visa", "3430"),
       ("gift_card_6276644", 80.0), ("gift_card_7480005", 420.0)),
    _u("sophia_martin_4574", "1990-03-30", "gold", ("credit_card_1402274", "mastercard", "8834"),
       saved=(("Mia", "Jackson", "1983-04-28"),)),
    _u("sophia_silva_7557", "1957-10-05", "regular", ("credit_card_4196779", "visa", "5046"),
       ("certificate_8045380", 500.0), ("certificate_3887113", 250.0)),
    _u("sophia_taylor_9065", "1999-05-27", "regular", ("credit_card_9302073", "visa", "8974")),
    _u("yara_garcia_1905", "1972-05-21", "regular", ("credit_card_5364632", "visa", "4410"),
       ("gift_card_6941833", 150.0)),
)

# -- reservations --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnchorReservation:
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: str
    cabin: str
    legs: tuple[tuple, ...]
    """(flight number, date) or (flight number, date, price paid per passenger)."""
    passengers: int | tuple[tuple[str, str, str], ...]
    """A count (the user, then saved passengers, then generated people) or explicit passengers."""
    created_at: str
    pay_with: str
    bags: tuple[int, int] = (0, 0)
    insurance: str = "no"
    status: str = "active"
    notes: str = field(default="", compare=False)


def _r(rid: str, user: str, trip: str, flight_type: str, cabin: str, legs: tuple, pax, created: str, pay: str,
       **kw) -> AnchorReservation:
    origin, destination = trip.split("-")
    return AnchorReservation(rid, user, origin, destination, flight_type, cabin, legs, pax, created, pay, **kw)


ANCHOR_RESERVATIONS: tuple[AnchorReservation, ...] = (
    _r("EHGLP3", "emma_kim_9957", "MSP-BOS", "one_way", "economy", (("HAT013", "2024-05-21"),), 1,
       "2024-05-03T08:30:00", "credit_card_5832574"),
    _r("Q69X3R", "raj_sanchez_7340", "PHL-LGA", "one_way", "economy", (("HAT001", "2024-05-20"),), 1,
       "2024-05-06T14:03:00", "credit_card_7891819"),
    _r("SDZQKO", "noah_muller_9847", "ORD-LAS", "one_way", "economy", (("HAT191", "2024-05-08"),), 1,
       "2024-05-01T10:12:00", "credit_card_7574394", bags=(1, 0)),
    _r("4OG6T3", "noah_muller_9847", "LAS-ORD", "one_way", "economy", (("HAT190", "2024-05-15"),), 1,
       "2024-05-10T19:40:00", "credit_card_7574394"),
    _r("JMO1MG", "anya_garcia_5901", "LAX-ORD", "one_way", "economy", (("HAT047", "2024-05-25"),), 2,
       "2024-05-09T11:25:00", "credit_card_2259499"),
    _r("3RK2T9", "anya_garcia_5901", "SFO-DEN", "one_way", "economy", (("HAT048", "2024-05-28"),),
       (("Anya", "Garcia", "1992-11-12"), ("Mei", "Lee", "1989-12-13")), "2024-05-12T09:14:00",
       "credit_card_2259499"),
    _r("NM1VX1", "sophia_silva_7557", "MSP-EWR", "round_trip", "economy",
       (("HAT300", "2024-05-25", 150), ("HAT208", "2024-05-27", 140)), 1, "2024-05-07T16:45:00",
       "credit_card_4196779"),
    _r("KC18K6", "sophia_silva_7557", "MSP-CLT", "one_way", "economy",
       (("HAT300", "2024-05-21", 140), ("HAT215", "2024-05-21", 130)), 1, "2024-05-08T12:02:00",
       "credit_card_4196779"),
    _r("S61CZX", "sophia_silva_7557", "LAX-CLT", "round_trip", "economy",
       (("HAT020", "2024-05-23"), ("HAT215", "2024-05-24"), ("HAT150", "2024-05-24"), ("HAT041", "2024-05-25")),
       1, "2024-05-04T09:31:00", "credit_card_4196779"),
    _r("H8Q05L", "sophia_silva_7557", "JFK-ATL", "one_way", "economy", (("HAT268", "2024-05-24", 160),), 1,
       "2024-05-05T18:20:00", "credit_card_4196779", insurance="yes"),
    _r("WUNA5K", "sophia_silva_7557", "ORD-PHL", "one_way", "economy", (("HAT271", "2024-05-10"),), 1,
       "2024-05-02T07:55:00", "credit_card_4196779"),
    _r("2ZB4LW", "mei_brown_7075", "PHX-SEA", "one_way", "economy", (("HAT045", "2024-05-15"),), 1,
       "2024-05-06T13:10:00", "credit_card_4920843"),
    _r("PEP4E0", "sophia_taylor_9065", "BOS-MIA", "one_way", "economy", (("HAT050", "2024-05-24"),), 1,
       "2024-05-09T20:41:00", "credit_card_9302073"),
    _r("XEHM4B", "daiki_muller_1116", "ORD-MIA", "round_trip", "basic_economy",
       (("HAT005", "2024-05-20"), ("HAT178", "2024-05-30")), 1, "2024-05-10T08:00:00", "credit_card_2408938",
       insurance="yes"),
    _r("59XX6W", "daiki_muller_1116", "LAX-DFW", "one_way", "business", (("HAT057", "2024-05-22"),), 1,
       "2024-05-11T15:26:00", "credit_card_2408938"),
    _r("7ZR4QD", "daiki_muller_1116", "DFW-ATL", "one_way", "business", (("HAT058", "2024-05-26", 814),), 2,
       "2024-05-12T10:48:00", "credit_card_2408938"),
    _r("IFOYYZ", "aarav_ahmed_6699", "ATL-BOS", "one_way", "basic_economy", (("HAT064", "2024-05-21"),), 1,
       "2024-05-01T09:05:00", "credit_card_9074831"),
    _r("NQNU5R", "aarav_ahmed_6699", "JFK-DFW", "one_way", "business", (("HAT065", "2024-05-27"),), 1,
       "2024-05-06T17:37:00", "credit_card_9074831"),
    _r("M20IZO", "aarav_ahmed_6699", "JFK-MCO", "one_way", "economy",
       (("HAT268", "2024-05-22"), ("HAT010", "2024-05-22")), 1, "2024-05-03T12:12:00", "credit_card_9074831"),
    _r("8QL3ZX", "liam_khan_2521", "IAH-SEA", "round_trip", "economy",
       (("HAT067", "2024-05-23"), ("HAT068", "2024-05-26")), 2, "2024-05-04T19:02:00", "credit_card_7231150"),
    _r("GV1N64", "james_patel_9828", "LAS-DEN", "round_trip", "business",
       (("HAT003", "2024-05-19", 690), ("HAT290", "2024-05-20", 711)), 4, "2024-05-02T14:44:00",
       "gift_card_1642017"),
    _r("YAX4DR", "chen_lee_6825", "BOS-MSP", "one_way", "economy",
       (("HAT235", "2024-05-18", 122), ("HAT298", "2024-05-19", 127)), 2, "2024-05-07T10:03:00",
       "credit_card_4938634"),
    _r("XEWRD9", "james_lee_6136", "LAX-ATL", "round_trip", "economy",
       (("HAT070", "2024-05-20"), ("HAT071", "2024-05-24"), ("HAT073", "2024-05-24")), 1,
       "2024-05-08T21:30:00", "credit_card_1559867"),
    _r("K1NW8N", "mohamed_silva_9265", "JFK-SFO", "round_trip", "basic_economy",
       (("HAT114", "2024-05-26"), ("HAT119", "2024-05-28")),
       (("Mohamed", "Silva", "1960-11-26"), ("Raj", "Sanchez", "1986-09-12"), ("Liam", "Wilson", "1980-03-27")),
       "2024-05-14T21:05:00", "credit_card_2198526"),
    _r("M05KNL", "aarav_garcia_1177", "ATL-PHL", "one_way", "economy", (("HAT126", "2024-05-23", 240),), 1,
       "2024-05-05T11:11:00", "gift_card_8887175"),
    _r("FQ8APE", "omar_rossi_1241", "JFK-ORD", "one_way", "basic_economy",
       (("HAT056", "2024-05-25", 60), ("HAT138", "2024-05-25", 58)), (("Ivan", "Garcia", "1982-03-15"),),
       "2024-05-08T15:00:00", "gift_card_8190333"),
    _r("JG7FMM", "omar_davis_3817", "BOS-DEN", "one_way", "business",
       (("HAT028", "2024-05-21", 480), ("HAT277", "2024-05-21", 520)), 3, "2024-05-01T08:20:00",
       "credit_card_2929732"),
    _r("2FBBAH", "omar_davis_3817", "MIA-DFW", "round_trip", "business",
       (("HAT080", "2024-05-28", 510), ("HAT076", "2024-05-28", 490), ("HAT255", "2024-05-30", 530),
        ("HAT148", "2024-05-30", 470)), 4, "2024-05-02T09:40:00", "gift_card_3481935"),
    _r("X7BYG1", "omar_davis_3817", "PHX-SEA", "one_way", "business",
       (("HAT232", "2024-05-24", 700), ("HAT228", "2024-05-24", 651)), 4, "2024-05-03T10:10:00",
       "credit_card_2929732"),
    _r("EQ1G6C", "omar_davis_3817", "SEA-IAH", "one_way", "business",
       (("HAT084", "2024-05-23", 820), ("HAT175", "2024-05-23", 745)), 5, "2024-05-04T11:55:00",
       "gift_card_6847880"),
    _r("BOH180", "omar_davis_3817", "SEA-JFK", "round_trip", "business",
       (("HAT276", "2024-05-21", 790), ("HAT279", "2024-05-22", 810)), 4, "2024-05-05T12:25:00",
       "credit_card_9525117"),
    _r("Z7GOZK", "olivia_gonzalez_2305", "EWR-IAH", "round_trip", "basic_economy",
       (("HAT140", "2024-05-22"), ("HAT141", "2024-05-22")), 1, "2024-05-09T16:16:00", "credit_card_9969263",
       insurance="yes"),
    _r("OBUT9V", "sofia_kim_7287", "IAH-DEN", "round_trip", "economy",
       (("HAT078", "2024-05-27"), ("HAT118", "2024-05-27"), ("HAT173", "2024-05-29", 180)), 1,
       "2024-05-06T13:33:00", "credit_card_9771526", bags=(1, 0)),
    _r("N7ZK4Q", "ivan_muller_7015", "DTW-SEA", "one_way", "economy",
       (("HAT097", "2024-05-17"), ("HAT251", "2024-05-17")), 1, "2024-05-05T10:01:00", "credit_card_3563913"),
    _r("5KQH8M", "amelia_sanchez_4739", "MCO-CLT", "one_way", "basic_economy", (("HAT075", "2024-05-23"),), 1,
       "2024-05-03T17:48:00", "credit_card_1698071"),
    _r("TZ6E3W", "ethan_martin_2396", "ATL-SEA", "one_way", "economy", (("HAT039", "2024-05-15"),), 3,
       "2024-05-02T12:00:00", "credit_card_5447879"),
    _r("SI5UKW", "amelia_rossi_1297", "DFW-SEA", "one_way", "basic_economy", (("HAT077", "2024-05-19"),), 1,
       "2024-05-04T07:27:00", "credit_card_4240750"),
    _r("VA5SGQ", "raj_brown_5782", "DTW-LGA", "round_trip", "economy",
       (("HAT061", "2024-05-17"), ("HAT062", "2024-05-19")), 1, "2024-05-05T22:14:00", "credit_card_8003957",
       insurance="yes"),
    _r("1N99U6", "james_taylor_7043", "LAS-IAH", "round_trip", "economy",
       (("HAT183", "2024-05-19", 70), ("HAT184", "2024-05-19", 90), ("HAT112", "2024-05-27")), 1,
       "2024-05-06T08:49:00", "gift_card_5634230", bags=(1, 0)),
    _r("JQ9VG6", "daiki_lee_6144", "JFK-SFO", "one_way", "basic_economy",
       (("HAT079", "2024-05-17"), ("HAT081", "2024-05-17")), 1, "2024-05-05T19:19:00", "credit_card_6198952"),
    _r("OWZ4XL", "ivan_rossi_8555", "EWR-LAX", "one_way", "basic_economy",
       (("HAT202", "2024-05-21"), ("HAT232", "2024-05-21")), 1, "2024-05-07T06:58:00", "credit_card_9659780"),
    _r("HXDUBJ", "yara_garcia_1905", "IAH-SFO", "round_trip", "economy",
       (("HAT130", "2024-05-18", 170), ("HAT131", "2024-05-22", 165)), 1, "2024-05-04T14:36:00",
       "gift_card_6941833"),
    _r("EUJUY6", "lucas_brown_4047", "ORD-BOS", "one_way", "basic_economy", (("HAT082", "2024-05-18"),), 1,
       "2024-05-06T09:09:00", "credit_card_7872117"),
    _r("UDMOP1", "amelia_davis_8890", "MIA-DEN", "one_way", "economy", (("HAT086", "2024-05-07"),), 1,
       "2024-05-01T10:30:00", "credit_card_4074252"),
    _r("XAZ3C0", "amelia_davis_8890", "LGA-CLT", "one_way", "economy", (("HAT085", "2024-05-19"),), 1,
       "2024-05-02T15:15:00", "credit_card_4074252", status="cancelled"),
    _r("I6M8JQ", "amelia_davis_8890", "CLT-LGA", "one_way", "economy", (("HAT083", "2024-05-09"),), 1,
       "2024-05-03T11:45:00", "credit_card_4074252"),
    _r("8C8K4E", "amelia_davis_8890", "CLT-LGA", "one_way", "economy", (("HAT083", "2024-05-20"),), 2,
       "2024-05-05T08:05:00", "credit_card_4074252"),
    _r("4XGCCM", "amelia_davis_8890", "LGA-CLT", "one_way", "economy", (("HAT085", "2024-05-12"),), 2,
       "2024-05-06T13:50:00", "credit_card_4074252"),
    _r("LU15PA", "amelia_davis_8890", "MIA-DEN", "one_way", "basic_economy", (("HAT086", "2024-05-24"),), 2,
       "2024-05-08T19:12:00", "gift_card_2278451"),
    _r("MSJ4OA", "amelia_davis_8890", "DEN-MIA", "one_way", "business", (("HAT087", "2024-05-26"),), 3,
       "2024-05-10T07:07:00", "credit_card_4074252"),
    _r("MFRB94", "sophia_martin_4574", "DFW-JFK", "one_way", "economy", (("HAT092", "2024-05-17"),), 1,
       "2024-05-03T09:22:00", "credit_card_1402274"),
    _r("PUNERT", "sophia_martin_4574", "JFK-BOS", "one_way", "economy", (("HAT094", "2024-05-22"),), 1,
       "2024-05-04T10:44:00", "credit_card_1402274"),
    _r("HSR97W", "sophia_martin_4574", "JFK-MIA", "one_way", "business", (("HAT095", "2024-05-22"),), 1,
       "2024-05-06T14:27:00", "credit_card_1402274"),
    _r("SE9KEL", "sophia_martin_4574", "DFW-LGA", "one_way", "economy", (("HAT098", "2024-05-17"),),
       (("Mia", "Jackson", "1983-04-28"),), "2024-05-07T12:39:00", "credit_card_1402274"),
    _r("FDZ0T5", "sophia_martin_4574", "DFW-BOS", "one_way", "business", (("HAT093", "2024-05-17"),), 1,
       "2024-05-08T16:03:00", "credit_card_1402274"),
    _r("HTR26G", "sophia_martin_4574", "BOS-JFK", "one_way", "economy", (("HAT101", "2024-05-09"),), 1,
       "2024-05-02T18:18:00", "credit_card_1402274"),
    _r("5BGGWZ", "sophia_martin_4574", "BOS-JFK", "one_way", "economy", (("HAT101", "2024-05-26"),), 1,
       "2024-05-09T08:51:00", "credit_card_1402274"),
    _r("35V5SM", "mohamed_hernandez_5188", "JFK-ATL", "one_way", "economy", (("HAT105", "2024-05-06"),), 1,
       "2024-04-28T10:10:00", "credit_card_2436051"),
    _r("9HBUV8", "mohamed_hernandez_5188", "ATL-JFK", "one_way", "economy", (("HAT102", "2024-05-17"),), 1,
       "2024-05-04T13:13:00", "credit_card_2436051"),
    _r("D1EW9B", "mohamed_hernandez_5188", "JFK-BOS", "one_way", "economy", (("HAT104", "2024-05-17"),), 1,
       "2024-05-05T15:40:00", "credit_card_2436051"),
    _r("V5EMZH", "mohamed_hernandez_5188", "LAS-ORD", "one_way", "economy", (("HAT107", "2024-05-19"),), 1,
       "2024-05-07T09:58:00", "credit_card_2436051", status="cancelled"),
    _r("XXDC1M", "mohamed_hernandez_5188", "ORD-LAS", "one_way", "economy", (("HAT106", "2024-05-25"),), 1,
       "2024-05-09T20:20:00", "credit_card_2436051"),
    _r("H9ZU1C", "mia_kim_4397", "JFK-MIA", "one_way", "economy", (("HAT074", "2024-05-21"),),
       (("Mia", "Kim", "1965-06-09"), ("Ethan", "Kim", "1991-10-23")), "2024-05-03T16:30:00",
       "credit_card_7988435"),
    _r("4WQ150", "lisa_wilson_4567", "PHL-LGA", "one_way", "economy", (("HAT001", "2024-05-18"),), 1,
       "2024-05-07T11:00:00", "credit_card_6690242"),
)


# -- what the tasks' users choose ----------------------------------------------------------------------


@dataclass(frozen=True)
class SearchRule:
    """The gold itinerary must be the unique best one a search from `origins` to `destinations` on `date`
    offers (after the user's filters); the builder raises the fares of, or cancels, the rivals."""

    origins: tuple[str, ...]
    destinations: tuple[str, ...]
    date: str
    gold: tuple[str, ...]
    cabin: str = "economy"
    best: str = "cheapest"  # or "fastest" (shortest time from first departure to last arrival)
    direct_only: bool = False
    depart_after: str = "00:00"
    depart_before: str = "24:00"
    arrive_before: str | None = None  # HH:MM on the departure day
    task: str = ""


SEARCH_RULES: tuple[SearchRule, ...] = (
    SearchRule(("JFK",), ("SEA",), "2024-05-20", ("HAT136", "HAT039"), depart_after="11:00", task="20"),
    SearchRule(("JFK", "EWR"), ("SEA", "SFO", "LAX"), "2024-05-20", ("HAT069",), cabin="basic_economy",
               direct_only=True, task="24"),
    SearchRule(("SEA", "SFO", "LAX"), ("JFK", "EWR"), "2024-05-25", ("HAT276",), cabin="basic_economy",
               direct_only=True, task="24"),
    SearchRule(("ATL",), ("PHL", "EWR"), "2024-05-24", ("HAT110", "HAT172"), task="15"),
    SearchRule(("JFK",), ("SFO",), "2024-05-26", ("HAT023",), cabin="business", task="14"),
    SearchRule(("SFO",), ("JFK",), "2024-05-28", ("HAT204", "HAT100"), cabin="business", task="14"),
    SearchRule(("DEN",), ("IAH",), "2024-05-27", ("HAT290", "HAT175"), best="fastest", depart_after="12:00",
               task="21"),
    SearchRule(("DTW",), ("JFK",), "2024-05-17", ("HAT169",), direct_only=True, arrive_before="07:00", task="29"),
    SearchRule(("JFK",), ("DTW",), "2024-05-19", ("HAT033",), direct_only=True, arrive_before="07:00", task="29"),
    SearchRule(("LAS",), ("IAH",), "2024-05-19", ("HAT266",), direct_only=True, task="30"),
    SearchRule(("EWR",), ("LAX",), "2024-05-21", ("HAT041",), direct_only=True, task="32"),
    SearchRule(("IAH",), ("SFO",), "2024-05-19", ("HAT072",), direct_only=True, depart_after="08:00",
               depart_before="21:00", task="33"),
    SearchRule(("SFO",), ("IAH",), "2024-05-23", ("HAT278",), direct_only=True, depart_after="08:00",
               depart_before="21:00", task="33"),
)
