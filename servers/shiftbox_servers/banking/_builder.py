"""Build the native banking snapshot: a synthetic bank of 300 customers with the scenarios tasks need.

Everything comes from one random.Random(seed), fixed name lists and id counters (no wall clock, no
uuid), so a seed always gives the same snapshot, byte for byte.
"""

from __future__ import annotations

import calendar
import itertools
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

from shiftbox_servers.kit import SnapshotManifest

from ._schema import SCHEMA, SNAPSHOT_VERSION, new_database

Row = dict[str, Any]

TX_TYPES = ("card_purchase", "deposit", "billpay", "transfer", "fee", "refund", "atm_withdrawal")
AWAITING = "Awaiting Payment"
SUSPICIOUS_REFERENCE = "SUSPICIOUS_CHARGE"

N_CUSTOMERS = 300
N_DISPUTES = 12
TX_START = datetime(2025, 1, 1)
TX_END = datetime(2025, 6, 30, 23, 59, 59)
PENDING_FROM = datetime(2025, 6, 27)
"""Transactions this recent may still be Pending."""
STATEMENT_MONTHS = range(1, 7)  # 2025-01 .. 2025-06

FIRST_NAMES = (
    "Aaron", "Abigail", "Adrian", "Aisha", "Alan", "Alice", "Amara", "Andre", "Bianca", "Brandon",
    "Caleb", "Camila", "Carmen", "Daniel", "Diana", "Elena", "Emeka", "Farah", "Gabriel", "Grace",
    "Hannah", "Hiro", "Isaac", "Jasmine", "Julian", "Kenji", "Laura", "Lucas", "Maya", "Nadia",
    "Nathan", "Olivia", "Omar", "Priya", "Rafael", "Rosa", "Samuel", "Sofia", "Thomas", "Zoe",
)
LAST_NAMES = (
    "Adams", "Alvarez", "Baker", "Bennett", "Chen", "Clarke", "Dubois", "Evans", "Fischer", "Garcia",
    "Gupta", "Hughes", "Ibrahim", "Jensen", "Kim", "Kowalski", "Lopez", "Martin", "Mensah", "Nakamura",
    "Nguyen", "Novak", "Okafor", "Olsen", "Patel", "Perez", "Quinn", "Reyes", "Rossi", "Schmidt",
    "Silva", "Singh", "Sullivan", "Tanaka", "Turner", "Walker", "Weber", "Wright", "Young", "Zhang",
)
STREET_NAMES = (
    "Oak", "Maple", "Cedar", "Pine", "Elm", "Birch", "Walnut", "Willow", "Lake", "Hill",
    "Park", "Washington", "Lincoln", "Jefferson", "Sunset", "River", "Highland", "Meadow", "Spring", "Church",
)
STREET_SUFFIXES = ("Street", "Avenue", "Drive", "Lane", "Court", "Road", "Boulevard", "Way", "Place")
CITIES = (  # (city, state, first three digits of its ZIP codes)
    ("Springfield", "IL", "627"), ("Austin", "TX", "787"), ("Denver", "CO", "802"),
    ("Seattle", "WA", "981"), ("Portland", "OR", "972"), ("Phoenix", "AZ", "850"),
    ("San Diego", "CA", "921"), ("Sacramento", "CA", "958"), ("Columbus", "OH", "432"),
    ("Raleigh", "NC", "276"), ("Atlanta", "GA", "303"), ("Nashville", "TN", "372"),
    ("Madison", "WI", "537"), ("Boston", "MA", "021"), ("Richmond", "VA", "232"),
    ("Salt Lake City", "UT", "841"), ("Minneapolis", "MN", "554"), ("Tampa", "FL", "336"),
    ("Albuquerque", "NM", "871"), ("Pittsburgh", "PA", "152"),
)
EMAIL_DOMAINS = ("example.com", "example.net", "example.org")

MERCHANTS = (  # (name, smallest, largest purchase)
    ("Whole Foods Market", 18, 190), ("Trader Joe's", 12, 140), ("Safeway", 15, 160),
    ("Kroger", 15, 150), ("Costco Wholesale", 40, 320), ("Target", 8, 180),
    ("Walmart Supercenter", 8, 200), ("Amazon.com", 6, 240), ("Best Buy", 20, 650),
    ("The Home Depot", 10, 380), ("IKEA", 25, 520), ("CVS Pharmacy", 4, 60),
    ("Walgreens", 4, 55), ("Starbucks", 3.5, 18), ("Chipotle Mexican Grill", 9, 32),
    ("Panera Bread", 8, 28), ("DoorDash", 15, 75), ("Uber Eats", 14, 70),
    ("Shell", 25, 85), ("Chevron", 25, 90), ("ExxonMobil", 22, 80),
    ("Uber Trip", 8, 60), ("Lyft Ride", 7, 55), ("Netflix", 15.49, 15.49),
    ("Spotify USA", 11.99, 11.99), ("Apple.com/bill", 0.99, 29.99), ("Delta Air Lines", 120, 780),
    ("Marriott Hotels", 140, 620), ("REI Co-op", 20, 300), ("Petco", 10, 120),
)
BILLERS = (
    "Pacific Gas & Electric", "City Water Utility", "Comcast Xfinity", "Verizon Wireless",
    "AT&T Mobility", "State Farm Insurance", "Geico Auto Insurance", "Oakwood Apartments",
    "Riverside Property Management", "Navient Student Loans", "Toyota Financial Services",
    "Planet Fitness", "Blue Cross Blue Shield", "Sunrun Solar", "Patel Family Dentistry",
)
EMPLOYERS = (
    "Acme Corp Payroll", "Globex Payroll", "Initech Direct Deposit", "Stark Industries Payroll",
    "Umbrella Health Payroll", "Wayne Enterprises Payroll", "Hooli Payroll", "Soylent Foods Payroll",
)
ATMS = ("ATM 5th & Main", "ATM Union Station", "ATM Market Square", "ATM Airport Terminal B", "ATM Oak Plaza")
BANK_FEES = (("Monthly Maintenance Fee", 12.00), ("Out-of-Network ATM Fee", 3.00),
             ("Overdraft Fee", 35.00), ("Wire Transfer Fee", 25.00))
CARD_FEES = (("Late Payment Fee", 29.00), ("Annual Fee", 95.00), ("Foreign Transaction Fee", 4.50))
TX_WEIGHTS = {  # account type -> {transaction type: weight}
    "checking": {"card_purchase": 50, "billpay": 12, "deposit": 10, "transfer": 10,
                 "atm_withdrawal": 8, "refund": 4, "fee": 4},
    "savings": {"deposit": 50, "transfer": 45, "fee": 5},
    "credit_card": {"card_purchase": 80, "refund": 8, "transfer": 8, "fee": 4},
}
REFERENCE_PREFIX = {"card_purchase": "POS", "deposit": "DEP", "billpay": "BP", "transfer": "TRF",
                    "fee": "FEE", "refund": "RFD", "atm_withdrawal": "ATM"}
CREDIT_LIMITS = (1000, 2500, 5000, 7500, 10000, 15000)
LOCK_REASONS = ("lost", "stolen", "suspected_fraud", "customer_request")
REQUEST_STATUS_WEIGHTS = {"Settled": 30, AWAITING: 15, "Authorized": 10, "Canceled": 15,
                          "Expired": 15, "Failed": 15}
DISPUTE_STATUSES = ("Submitted", "Under Review", "Resolved-Customer Favor", "Resolved-Merchant Favor")
ID_FORMATS = {  # table (in insertion order) -> (id column, id prefix, digits)
    "customers": ("customer_id", "cust", 4), "accounts": ("account_id", "acc", 5),
    "cards": ("card_id", "card", 5), "statements": ("statement_id", "stmt", 5),
    "transactions": ("tx_id", "tx", 6), "payees": ("payee_id", "payee", 5),
    "payment_requests": ("request_id", "req", 5), "disputes": ("dispute_id", "disp", 5),
}
DISPUTE_REASONS = ("unauthorized_charge", "duplicate_charge", "item_not_received",
                   "incorrect_amount", "canceled_subscription")


def build_native(directory: Path, seed: int = 7) -> SnapshotManifest:
    """Generate the native banking database from `seed` and write it as a snapshot into `directory`."""
    bank = _NativeBank(Random(seed))
    bank.generate()
    db = new_database()
    for table, rows in bank.rows.items():
        db[table].insert_all(rows)
    return SCHEMA.write_snapshot(db, directory, snapshot_version=SNAPSHOT_VERSION, source=f"native seed={seed}")



def check_one_awaiting_payment(requests: Iterable[Mapping[str, Any]]) -> None:
    """Raise ValueError if a customer has more than one payment request Awaiting Payment (an invariant)."""
    awaiting: dict[str, str] = {}
    for r in requests:
        if r["status"] != AWAITING:
            continue
        if r["customer_id"] in awaiting:
            raise ValueError(
                f"payment_requests {r['request_id']}: field 'status' is {AWAITING!r} but customer "
                f"{r['customer_id']} already has {awaiting[r['customer_id']]} awaiting payment"
            )
        awaiting[r["customer_id"]] = r["request_id"]


def _counter(prefix: str, width: int) -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"{prefix}_{next(numbers):0{width}d}"


def _money(x: float) -> float:
    return round(x, 2)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _is_settled(tx: Row) -> bool:
    return tx["status"] in ("Posted", "Disputed")


class _NativeBank:
    """The generator: one RNG, one id counter per table and the rows made so far (in id order)."""

    def __init__(self, rng: Random):
        self.rng = rng
        self.next_id = {table: _counter(prefix, width) for table, (_, prefix, width) in ID_FORMATS.items()}
        self.rows: dict[str, list[Row]] = {table: [] for table in ID_FORMATS}

    def add(self, table: str, **fields: Any) -> Row:
        """A new row of `table` with the next id, appended to the rows (so they stay in id order)."""
        row = {ID_FORMATS[table][0]: self.next_id[table](), **fields}
        self.rows[table].append(row)
        return row

    def time_between(self, start: datetime, end: datetime) -> datetime:
        return start + timedelta(seconds=self.rng.randrange(int((end - start).total_seconds()) + 1))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- the whole bank -------------------------------------------------------------------------

    def generate(self) -> None:
        names = self.rng.sample(list(itertools.product(FIRST_NAMES, LAST_NAMES)), N_CUSTOMERS)
        phones = self.rng.sample(range(2_000_000, 10_000_000), N_CUSTOMERS)
        for (first, last), phone in zip(names, phones, strict=True):
            self.customer(first, last, phone)
        self.disputes()
        check_one_awaiting_payment(self.rows["payment_requests"])

    def customer(self, first: str, last: str, phone: int) -> None:
        rng = self.rng
        city, state, zip3 = rng.choice(CITIES)
        customer = self.add(
            "customers",
            full_name=f"{first} {last}",
            date_of_birth=(date(1950, 1, 1) + timedelta(days=rng.randrange(20_000))).isoformat(),
            email=f"{first}.{last}@{rng.choice(EMAIL_DOMAINS)}".lower(),
            phone_number=f"+1555{phone:07d}",
            street=f"{rng.randint(10, 9999)} {rng.choice(STREET_NAMES)} {rng.choice(STREET_SUFFIXES)}",
            city=city,
            state=state,
            postal_code=f"{zip3}{rng.randrange(100):02d}",
            created_at=_iso(self.time_between(datetime(2015, 1, 1), datetime(2024, 12, 31, 23, 59, 59))),
        )
        cid = customer["customer_id"]
        accounts = [self.account(cid, "checking")]
        if self.chance(0.6):
            accounts.append(self.account(cid, "savings"))
        if self.chance(0.35):
            accounts.append(self.account(cid, "credit_card"))
        payees = self.payees(cid)
        requests = self.payment_requests(cid, accounts[0], payees)
        card_accounts = [a for a in accounts if a["type"] != "savings" and a["status"] != "Closed"]
        suspicious_in = self.rng.choice(card_accounts) if card_accounts and self.chance(0.10) else None
        for account in accounts:
            extra = []
            if account is accounts[0]:
                extra += [self.settled_payment(r, payees) for r in requests if r["status"] == "Settled"]
            if account is suspicious_in:
                extra.append(self.suspicious_charge())
            txs = self.transactions(account, payees, extra)
            self.balances(account, txs, self.statements(account, txs))

    # -- accounts and cards ---------------------------------------------------------------------

    def account(self, customer_id: str, type_: str) -> Row:
        rng = self.rng
        r = rng.random()
        status = "Closed" if r < 0.02 else "Frozen" if r < 0.05 else "Active"
        account = self.add(
            "accounts",
            customer_id=customer_id,
            type=type_,
            is_business=int(type_ != "savings" and self.chance(0.05)),
            masked_number=f"••••{rng.randrange(10_000):04d}",
            status=status,
            current_balance=0.0,  # set from the transactions by balances()
            available_balance=0.0,
        )
        if type_ != "savings":
            self.card(account)
        return account

    def card(self, account: Row) -> None:
        r = self.rng.random()
        if account["status"] == "Closed" or r < 0.02:
            status, reason = "Closed", None
        elif r < 0.10:
            status, reason = "Locked", self.rng.choice(LOCK_REASONS)
        else:
            status, reason = "Active", None
        self.add(
            "cards",
            account_id=account["account_id"],
            type="debit" if account["type"] == "checking" else "credit",
            last4=account["masked_number"][-4:],
            status=status,
            lock_reason=reason,
        )

    # -- payees and payment requests ------------------------------------------------------------

    def payees(self, customer_id: str) -> list[Row]:
        names = self.rng.sample(BILLERS, self.rng.randint(0, 3))
        return [
            self.add(
                "payees",
                customer_id=customer_id,
                name=name,
                deliver_type="electronic" if self.chance(0.8) else "check",
                verified=int(self.chance(0.85)),
            )
            for name in names
        ]

    def payment_requests(self, customer_id: str, checking: Row, payees: list[Row]) -> list[Row]:
        if not payees or checking["status"] != "Active" or not self.chance(0.35):
            return []
        requests = []
        for _ in range(self.rng.randint(1, 3)):
            taken = any(r["status"] == AWAITING for r in requests)
            statuses = [s for s in REQUEST_STATUS_WEIGHTS if not (taken and s == AWAITING)]
            status = self.rng.choices(statuses, [REQUEST_STATUS_WEIGHTS[s] for s in statuses])[0]
            requests.append(self.payment_request(customer_id, checking, self.rng.choice(payees), status))
        return requests

    def payment_request(self, customer_id: str, checking: Row, payee: Row, status: str) -> Row:
        if status in (AWAITING, "Authorized"):
            window = (datetime(2025, 6, 18), datetime(2025, 6, 30, 20))  # expires after CLOCK_START
        elif status == "Expired":
            window = (datetime(2025, 3, 1), datetime(2025, 5, 31))
        else:
            window = (datetime(2025, 1, 5), datetime(2025, 6, 25))
        created = self.time_between(*window)
        return self.add(
            "payment_requests",
            customer_id=customer_id,
            from_account_id=checking["account_id"],
            to_payee_id=payee["payee_id"],
            amount=_money(self.rng.uniform(20, 450)),
            status=status,
            origin="user",
            created_at=_iso(created),
            expires_at=_iso(created + timedelta(days=14)),
            settled_tx_id=None,  # set once the payment's transaction has its id
            failure_reason="insufficient available balance" if status == "Failed" else None,
        )

    def settled_payment(self, request: Row, payees: list[Row]) -> Row:
        """The billpay transaction that settled `request` (linked both ways once ids are assigned)."""
        payee = next(p for p in payees if p["payee_id"] == request["to_payee_id"])
        paid = datetime.fromisoformat(request["created_at"]) + timedelta(minutes=self.rng.randint(60, 4320))
        return {"timestamp": _iso(paid), "type": "billpay", "amount": -request["amount"],
                "merchant_or_payee": payee["name"], "status": "Posted",
                "reference": request["request_id"], "request": request}

    # -- transactions ---------------------------------------------------------------------------

    def suspicious_charge(self) -> Row:
        when = self.time_between(datetime(2025, 6, 1), datetime(2025, 6, 28))
        return {"timestamp": _iso(when), "type": "card_purchase",
                "amount": -_money(self.rng.uniform(49, 899)),
                "merchant_or_payee": f"UNKNOWN MERCHANT {self.rng.randrange(1000, 10_000)}",
                "status": "Posted", "reference": SUSPICIOUS_REFERENCE}

    def transactions(self, account: Row, payees: list[Row], extra: list[Row]) -> list[Row]:
        weights = TX_WEIGHTS[account["type"]]
        types = self.rng.choices(list(weights), list(weights.values()), k=self.rng.randint(10, 40))
        drafts = [self.transaction(account, type_, payees) for type_ in types] + extra
        drafts.sort(key=lambda t: t["timestamp"])
        txs = []
        for draft in drafts:
            tx = self.add("transactions", account_id=account["account_id"], **draft)
            if "request" in tx:
                tx.pop("request")["settled_tx_id"] = tx["tx_id"]
            txs.append(tx)
        return txs

    def transaction(self, account: Row, type_: str, payees: list[Row]) -> Row:
        when = self.time_between(TX_START, TX_END)
        amount, merchant = self.amount_and_party(account["type"], type_, payees)
        if when >= PENDING_FROM and account["status"] != "Closed" and self.chance(0.6):
            status = "Pending"
        elif self.chance(0.005):
            status = "Reversed"
        else:
            status = "Posted"
        return {"timestamp": _iso(when), "type": type_, "amount": _money(amount),
                "merchant_or_payee": merchant, "status": status,
                "reference": f"{REFERENCE_PREFIX[type_]}{self.rng.randrange(10**8):08d}"}

    def amount_and_party(self, account_type: str, type_: str, payees: list[Row]) -> tuple[float, str]:
        """A signed amount (debits negative) and the merchant or payee of one transaction."""
        rng = self.rng
        if type_ in ("card_purchase", "refund"):
            name, low, high = rng.choice(MERCHANTS)
            return (-1 if type_ == "card_purchase" else 1) * rng.uniform(low, high), name
        if type_ == "billpay":
            return -rng.uniform(30, 450), rng.choice([p["name"] for p in payees] or BILLERS)
        if type_ == "atm_withdrawal":
            return -20.0 * rng.randint(1, 20), rng.choice(ATMS)
        if type_ == "fee":
            name, fee = rng.choice(CARD_FEES if account_type == "credit_card" else BANK_FEES)
            return -fee, name
        if type_ == "deposit":
            if account_type == "savings":
                return (rng.uniform(0.5, 30), "Interest Payment") if self.chance(0.5) else \
                    (rng.uniform(50, 1500), "Mobile Check Deposit")
            return (rng.uniform(800, 3200), rng.choice(EMPLOYERS)) if self.chance(0.7) else \
                (rng.uniform(50, 600), "Mobile Check Deposit")
        return self.transfer(account_type)

    def transfer(self, account_type: str) -> tuple[float, str]:
        rng = self.rng
        if account_type == "credit_card":
            return rng.uniform(50, 1200), "Payment - Thank You"
        if account_type == "savings":
            return (rng.uniform(50, 1000), "Transfer from Checking") if self.chance(0.6) else \
                (-rng.uniform(50, 800), "Transfer to Checking")
        friend = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        return rng.choice([(-rng.uniform(10, 400), f"Zelle to {friend}"),
                           (rng.uniform(10, 400), f"Zelle from {friend}"),
                           (-rng.uniform(50, 800), "Transfer to Savings")])

    # -- statements and balances ----------------------------------------------------------------

    def statements(self, account: Row, txs: list[Row]) -> list[Row]:
        due_day = self.rng.choice((15, 18, 20, 22, 25))
        overdue = (account["type"] == "credit_card" and account["status"] != "Closed"
                   and self.chance(0.2))
        statements = []
        for month in STATEMENT_MONTHS:
            start, end = date(2025, month, 1), _month_end(2025, month)
            issued = end + timedelta(days=1)
            total = self.statement_total(account, txs, start, end)
            if month == STATEMENT_MONTHS[-1]:
                status = "Issued"
            elif month == STATEMENT_MONTHS[-2] and overdue and total > 0:
                status = "Overdue"
            else:
                status = "Paid"
            statements.append(self.add(
                "statements",
                account_id=account["account_id"],
                period_start=start.isoformat(),
                period_end=end.isoformat(),
                issue_date=issued.isoformat(),
                total_due=total,
                minimum_due=min(total, max(25.0, _money(total * 0.02))),
                due_date=issued.replace(day=due_day).isoformat(),
                status=status,
            ))
        return statements

    @staticmethod
    def statement_total(account: Row, txs: list[Row], start: date, end: date) -> float:
        """What a credit card owes for a period (its settled charges less refunds); nothing for deposits."""
        if account["type"] != "credit_card":
            return 0.0
        period = [t for t in txs if _is_settled(t) and t["type"] != "transfer"
                  and start.isoformat() <= t["timestamp"][:10] <= end.isoformat()]
        return max(0.0, _money(-sum(t["amount"] for t in period)))

    def balances(self, account: Row, txs: list[Row], statements: list[Row]) -> None:
        """Current balance from the settled transactions, available = current less pending debits.

        Credit cards hold what is owed as a negative current balance and the credit left as available
        balance, so a payment debits both the same way as on a checking account.
        """
        pending = sum(t["amount"] for t in txs if t["status"] == "Pending" and t["amount"] < 0)
        if account["type"] == "credit_card":
            owed = sum(s["total_due"] for s in statements if s["status"] != "Paid")
            current = -owed
            available = self.rng.choice(CREDIT_LIMITS) + current + pending
        else:
            running = list(itertools.accumulate(t["amount"] for t in txs if _is_settled(t)))
            opening = -min([0.0, *running]) + self.rng.uniform(100, 5000)
            current = opening + (running[-1] if running else 0.0)
            available = current + pending
        if account["status"] == "Closed":
            current = available = 0.0
        elif account["status"] == "Frozen":
            available = 0.0
        account["current_balance"] = _money(current)
        account["available_balance"] = _money(max(0.0, available))

    # -- disputes -------------------------------------------------------------------------------

    def disputes(self) -> None:
        open_accounts = {a["account_id"] for a in self.rows["accounts"] if a["status"] != "Closed"}
        eligible = [t for t in self.rows["transactions"]
                    if t["type"] == "card_purchase" and t["status"] == "Posted"
                    and t["reference"] != SUSPICIOUS_REFERENCE and t["account_id"] in open_accounts
                    and t["timestamp"] < "2025-06-20"]
        chosen = sorted(self.rng.sample(eligible, N_DISPUTES), key=lambda t: t["tx_id"])
        statuses = [DISPUTE_STATUSES[i % len(DISPUTE_STATUSES)] for i in range(N_DISPUTES)]
        self.rng.shuffle(statuses)
        for tx, status in zip(chosen, statuses, strict=True):
            tx["status"] = "Disputed"
            opened = datetime.fromisoformat(tx["timestamp"]) + timedelta(minutes=self.rng.randint(600, 14_400))
            self.add(
                "disputes",
                account_id=tx["account_id"],
                tx_id=tx["tx_id"],
                reason_code=self.rng.choice(DISPUTE_REASONS),
                status=status,
                opened_at=_iso(opened),
            )
