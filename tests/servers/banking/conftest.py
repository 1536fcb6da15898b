"""A small hand-written banking snapshot whose every value the tests know by heart."""

from __future__ import annotations

from pathlib import Path

from shiftbox_servers.banking import CLOCK_START, new_database
from shiftbox_servers.kit import Snapshot
from tests.servers.helpers import IsolationProbe, domain_fixtures, fixture_snapshot

CUSTOMERS = [
    ("cust_a", "Ana Lopez", "1990-01-02", "ana@example.com", "+15550001111", "1 Main St", "Austin", "TX", "73301", "2024-01-01T00:00:00"),
    ("cust_b", "Ben Okafor", "1985-05-05", "ben@example.com", "+15550002222", "2 Oak Rd", "Boise", "ID", "83701", "2024-02-01T00:00:00"),
]
ACCOUNTS = [
    ("acc_a1", "cust_a", "checking", 0, "••••1111", "Active", 1000.00, 950.00),
    ("acc_a2", "cust_a", "savings", 0, "••••2222", "Active", 5000.00, 5000.00),
    ("acc_a3", "cust_a", "checking", 1, "••••3333", "Frozen", 10.00, 10.00),
    ("acc_b1", "cust_b", "checking", 0, "••••4444", "Active", 20.00, 20.00),
]
CARDS = [
    ("card_a1", "acc_a1", "debit", "1111", "Active", None),
    ("card_a2", "acc_a2", "debit", "2222", "Locked", "lost"),
    ("card_a3", "acc_a1", "debit", "3333", "Closed", None),
    ("card_b1", "acc_b1", "debit", "4444", "Active", None),
]
STATEMENTS = [
    ("stmt_1", "acc_a1", "2025-04-01", "2025-04-30", "2025-05-01", 100.00, 25.00, "2025-05-15", "Paid"),
    ("stmt_2", "acc_a1", "2025-05-01", "2025-05-31", "2025-06-01", 200.00, 35.00, "2025-06-15", "Paid"),
    ("stmt_3", "acc_a1", "2025-06-01", "2025-06-30", "2025-07-01", 300.00, 45.00, "2025-07-15", "Issued"),
]
TRANSACTIONS = [
    ("tx_1", "acc_a1", "2025-06-01T10:00:00", "card_purchase", -40.00, "Grocer", "Posted", ""),
    ("tx_2", "acc_a1", "2025-06-15T12:00:00", "card_purchase", -89.99, "UNKNOWN MERCHANT", "Posted", "SUSPICIOUS_CHARGE"),
    ("tx_3", "acc_a1", "2025-06-20T08:30:00", "deposit", 500.00, "Payroll", "Posted", ""),
    ("tx_4", "acc_a1", "2025-06-21T09:00:00", "card_purchase", -10.00, "Cafe", "Reversed", ""),
    ("tx_5", "acc_a1", "2025-06-22T18:45:00", "card_purchase", -15.00, "Cinema", "Disputed", ""),
    ("tx_b1", "acc_b1", "2025-06-10T10:00:00", "fee", -5.00, "Bank fee", "Posted", ""),
]
PAYEES = [("payee_a1", "cust_a", "Electric Co", "electronic", 1), ("payee_b1", "cust_b", "Water Co", "check", 1)]
PAYMENT_REQUESTS = [
    ("req_b1", "cust_b", "acc_b1", "payee_b1", 50.00, "Authorized", "user", "2025-06-30T10:00:00", None, None, None),
    ("req_a0", "cust_a", "acc_a1", "payee_a1", 12.00, "Settled", "user", "2025-06-01T10:00:00", None, "tx_1", None),
]
DISPUTES = [("disp_1", "acc_a1", "tx_5", "unauthorized", "Submitted", "2025-06-23T10:00:00")]


def write_fixture_snapshot(directory: Path) -> Snapshot:
    """The hand-written banking snapshot, written into `directory` (the `banking_snapshot` fixture)."""
    tables = [("customers", CUSTOMERS), ("accounts", ACCOUNTS), ("cards", CARDS), ("statements", STATEMENTS),
              ("transactions", TRANSACTIONS), ("payees", PAYEES), ("payment_requests", PAYMENT_REQUESTS),
              ("disputes", DISPUTES)]
    return fixture_snapshot(new_database(), directory, domain="banking", clock_start=CLOCK_START, tables=tables)


# What tests/servers/test_every_domain.py checks of this domain.
TOOL_COUNT = 20
NATIVE_CLOCK_START = "2025-07-01T09:00:00"
"""The native snapshot's episode clock start."""
STDIO_CALLS = (("lock_card", {"card_id": "card_b1"}, ("status", "Locked")),
               ("get_statements", {"account_id": "acc_a1", "limit": "3"}))
"""(a call that succeeds, (output field, value)), (a call with a wrongly typed argument)."""
ISOLATION = IsolationProbe(
    ("file_dispute", {"account_id": "acc_a1", "tx_id": "tx_2", "reason_code": "unauthorized"}),
    ("get_transactions", {"account_id": "acc_a1"}),
    lambda res: {t["tx_id"]: t["status"] for t in res["transactions"]}["tx_2"], "Posted", "Disputed",
    ("get_dispute", "dispute_id"))


banking_snapshot, bank = domain_fixtures("banking", "bank")


# What tests elsewhere exercise on the native snapshot (tests/interop, containers, metrics, bench/run.py):
NATIVE_DETAIL_LOOKUP = ("get_account", "accounts", "account_id")
"""A real database-backed lookup, and the table and column its argument comes from."""
NATIVE_MISSING_LOOKUP = ("get_customer_by_id", {"customer_id": "cust_missing"})
"""A lookup of an id no snapshot holds: a tool-level not_found."""
NATIVE_INVISIBLE_WRITES = [("add_payee", {"customer_id": "cust_0001", "name": "{}"}),
                           ("lock_card", {"card_id": "card_00002", "reason": "{}"})]
"""Writes on the native snapshot, "{}" where an invisible value goes."""
INTEROP_CASES = {
    "ok": ("get_customer_by_phone", {"phone_number": "+15555640027"}, ("customer_id", "cust_0011")),
    "rejected": ("get_account", {"account_id": 5}),
    "missing": ("get_account", {"account_id": "acc_99999"}),
}
"""A call that succeeds on the native snapshot (with a field its result carries), one with an argument of the wrong
JSON type, one naming an id the snapshot does not have."""


# Written out by hand from _missions.py: the goals whose builder or variants make an MMTB chat or clarify mission
# (tests/client/tasks/test_generate_types.py: four of each let every four-type sequence go to distinct goals).
MMTB_CHAT_GOALS = ['account_info', 'insights', 'statements', 'transactions']
MMTB_CLARIFY_GOALS = ['cards', 'dispute', 'statements', 'transactions']
