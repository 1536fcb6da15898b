"""A small hand-written retail snapshot whose every value the tests know by heart.

Products: T-Shirt 1000000001 (2000000001 red M 20.00, 2000000002 blue M 25.50, 2000000003 green M 22.00
unavailable, 2000000004 red L 18.25, 2000000005 white S 20.00), Lamp 1000000002 (3000000001 desk
40.00, 3000000002 floor 95.00), Kettle 1000000003 (4000000001 1L 30.00).
Users: ana_lopez_1001 (credit_card_1000001, gift_card_1000002 = 50.00, paypal_1000003),
ben_okafor_2002 (gift_card_2000001 = 6.00, credit_card_2000002), jose_nunez_3003 "José Núñez"
(paypal_3000001).
"""

from __future__ import annotations

import json
from pathlib import Path

from shiftbox_servers.kit import Snapshot
from shiftbox_servers.retail import CLOCK_START, new_database
from tests.servers.helpers import IsolationProbe, domain_fixtures, fixture_snapshot


def _o(**options: str) -> str:
    return json.dumps(options)


PRODUCTS = [("1000000001", "T-Shirt"), ("1000000002", "Lamp"), ("1000000003", "Kettle")]
VARIANTS = [
    ("2000000001", "1000000001", _o(color="red", size="M"), 1, 20.00),
    ("2000000002", "1000000001", _o(color="blue", size="M"), 1, 25.50),
    ("2000000003", "1000000001", _o(color="green", size="M"), 0, 22.00),
    ("2000000004", "1000000001", _o(color="red", size="L"), 1, 18.25),
    ("2000000005", "1000000001", _o(color="white", size="S"), 1, 20.00),
    ("3000000001", "1000000002", _o(style="desk"), 1, 40.00),
    ("3000000002", "1000000002", _o(style="floor"), 1, 95.00),
    ("4000000001", "1000000003", _o(capacity="1L"), 1, 30.00),
    ("4000000002", "1000000003", _o(capacity="2L"), 1, 36.40),
]
ANA_ADDRESS = ("1 Main St", "Apt 2", "Austin", "TX", "USA", "73301")
BEN_ADDRESS = ("2 Oak Rd", "", "Boise", "ID", "USA", "83701")
JOSE_ADDRESS = ("3 Elm St", "Suite 5", "New York", "NY", "USA", "10001")
USERS = [
    ("ana_lopez_1001", "Ana", "Lopez", "ana@example.com", *ANA_ADDRESS),
    ("ben_okafor_2002", "Ben", "Okafor", "ben@example.com", *BEN_ADDRESS),
    ("jose_nunez_3003", "José", "Núñez", "jose@example.com", *JOSE_ADDRESS),
]
PAYMENT_METHODS = [
    ("credit_card_1000001", "ana_lopez_1001", "credit_card", "visa", "1111", None),
    ("gift_card_1000002", "ana_lopez_1001", "gift_card", None, None, 50.00),
    ("paypal_1000003", "ana_lopez_1001", "paypal", None, None, None),
    ("gift_card_2000001", "ben_okafor_2002", "gift_card", None, None, 6.00),
    ("credit_card_2000002", "ben_okafor_2002", "credit_card", "mastercard", "2222", None),
    ("paypal_3000001", "jose_nunez_3003", "paypal", None, None, None),
]
ORDERS = [  # order_id, user_id, status, address…, cancel_reason, exchange pm, exchange difference, return pm
    ("#W1000001", "ana_lopez_1001", "pending", *ANA_ADDRESS, None, None, None, None),
    ("#W1000002", "ana_lopez_1001", "pending", *ANA_ADDRESS, None, None, None, None),
    ("#W1000003", "ana_lopez_1001", "delivered", *ANA_ADDRESS, None, None, None, None),
    ("#W1000004", "ana_lopez_1001", "processed", *ANA_ADDRESS, None, None, None, None),
    ("#W1000005", "ana_lopez_1001", "cancelled", *ANA_ADDRESS, "ordered by mistake", None, None, None),
    ("#W1000006", "ana_lopez_1001", "pending", *ANA_ADDRESS, None, None, None, None),
    ("#W2000001", "ben_okafor_2002", "pending", *BEN_ADDRESS, None, None, None, None),
    ("#W2000002", "ben_okafor_2002", "delivered", *BEN_ADDRESS, None, None, None, None),
    ("#W2000003", "ben_okafor_2002", "pending (item modified)", *BEN_ADDRESS, None, None, None, None),
    ("#W2000004", "ben_okafor_2002", "pending", *BEN_ADDRESS, None, None, None, None),
    ("#W3000001", "jose_nunez_3003", "return requested", *JOSE_ADDRESS, None, None, None, "paypal_3000001"),
    ("#W3000002", "jose_nunez_3003", "exchange requested", *JOSE_ADDRESS, None, "paypal_3000001", 55.00, None),
]
ORDER_ITEMS = [  # order_id, line_no, item_id, price, return_requested, exchange_item_id
    ("#W1000001", 1, "2000000001", 20.00, 0, None), ("#W1000001", 2, "3000000001", 40.00, 0, None),
    ("#W1000002", 1, "2000000001", 20.00, 0, None), ("#W1000002", 2, "2000000001", 20.00, 0, None),
    ("#W1000003", 1, "2000000002", 25.50, 0, None), ("#W1000003", 2, "3000000002", 95.00, 0, None),
    ("#W1000004", 1, "4000000001", 30.00, 0, None),
    ("#W1000005", 1, "3000000001", 40.00, 0, None),
    ("#W1000006", 1, "2000000004", 18.25, 0, None),
    ("#W2000001", 1, "2000000004", 18.25, 0, None),
    ("#W2000002", 1, "2000000001", 20.00, 0, None), ("#W2000002", 2, "4000000001", 30.00, 0, None),
    ("#W2000003", 1, "2000000002", 25.50, 0, None),
    ("#W2000004", 1, "3000000001", 40.00, 0, None),
    ("#W3000001", 1, "2000000001", 20.00, 1, None), ("#W3000001", 2, "2000000002", 25.50, 0, None),
    ("#W3000002", 1, "3000000001", 40.00, 0, "3000000002"),
]
FULFILLMENTS = [
    ("#W1000003", 1, '["111111111111"]', '["2000000002", "3000000002"]'),
    ("#W1000004", 1, '["222222222222"]', '["4000000001"]'),
    ("#W2000002", 1, '["333333333333"]', '["2000000001"]'),
    ("#W2000002", 2, '["444444444444"]', '["4000000001"]'),
    ("#W3000001", 1, '["555555555555"]', '["2000000001", "2000000002"]'),
    ("#W3000002", 1, '["666666666666"]', '["3000000001"]'),
]
ORDER_PAYMENTS = [
    ("#W1000001", 1, "payment", 60.00, "credit_card_1000001"),
    ("#W1000002", 1, "payment", 40.00, "gift_card_1000002"),
    ("#W1000003", 1, "payment", 120.50, "paypal_1000003"),
    ("#W1000004", 1, "payment", 30.00, "credit_card_1000001"),
    ("#W1000005", 1, "payment", 40.00, "credit_card_1000001"),
    ("#W1000005", 2, "refund", 40.00, "credit_card_1000001"),
    ("#W1000006", 1, "payment", 18.25, "credit_card_1000001"),
    ("#W2000001", 1, "payment", 18.25, "credit_card_2000002"),
    ("#W2000002", 1, "payment", 50.00, "credit_card_2000002"),
    ("#W2000003", 1, "payment", 20.00, "credit_card_2000002"),  # placed as 2000000001, then modified
    ("#W2000003", 2, "payment", 5.50, "credit_card_2000002"),
    ("#W2000004", 1, "payment", 40.00, "gift_card_2000001"),
    ("#W3000001", 1, "payment", 45.50, "paypal_3000001"),
    ("#W3000002", 1, "payment", 40.00, "paypal_3000001"),
]
TABLES = [("products", PRODUCTS), ("variants", VARIANTS), ("users", USERS), ("payment_methods", PAYMENT_METHODS),
          ("orders", ORDERS), ("order_items", ORDER_ITEMS), ("fulfillments", FULFILLMENTS),
          ("order_payments", ORDER_PAYMENTS)]


def write_fixture_snapshot(directory: Path) -> Snapshot:
    """The hand-written retail snapshot, written into `directory` (the `retail_snapshot` fixture)."""
    return fixture_snapshot(new_database(), directory, domain="retail", clock_start=CLOCK_START, tables=TABLES)


# What tests/servers/test_every_domain.py checks of this domain.
TOOL_COUNT = 16
NATIVE_CLOCK_START = "2025-06-16T10:00:00"
"""The native snapshot's episode clock start."""
STDIO_CALLS = (("get_order_details", {"order_id": "#W1000003"}, ("status", "delivered")),
               ("get_order_details", {"order_id": 1000003}))
"""(a call that succeeds, (output field, value)), (a call with a wrongly typed argument)."""
ISOLATION = IsolationProbe(
    ("cancel_pending_order", {"order_id": "#W1000001", "reason": "no longer needed"}),
    ("get_order_details", {"order_id": "#W1000001"}),
    lambda res: res["status"], "pending", "cancelled")


retail_snapshot, shop = domain_fixtures("retail", "shop")


# What tests elsewhere exercise on the native snapshot (tests/interop, containers, metrics, bench/run.py):
NATIVE_DETAIL_LOOKUP = ("get_order_details", "orders", "order_id")
"""A real database-backed lookup, and the table and column its argument comes from."""
NATIVE_MISSING_LOOKUP = ("get_user_details", {"user_id": "nobody_missing_0"})
"""A lookup of an id no snapshot holds: a tool-level not_found."""
NATIVE_INVISIBLE_WRITES = [("modify_user_address", {"user_id": "aaliyah_anderson_9606", "address1": "{}",
                                                    "address2": "", "city": "Austin", "state": "TX",
                                                    "country": "USA", "zip": "78701"})]
"""Writes on the native snapshot, "{}" where an invisible value goes."""
INTEROP_CASES = {
    "ok": ("get_order_details", {"order_id": "#W1037640"}, ("user_id", "mei_fischer_5360")),
    "rejected": ("get_order_details", {"order_id": 1037640}),
    "missing": ("get_order_details", {"order_id": "#W0000000"}),
}
"""A call that succeeds on the native snapshot (with a field its result carries), one with an argument of the wrong
JSON type, one naming an id the snapshot does not have."""


# Written out by hand from _missions.py: the goals whose builder or variants make an MMTB chat or clarify mission
# (tests/client/tasks/test_generate_types.py: four of each let every four-type sequence go to distinct goals).
MMTB_CHAT_GOALS = ['exchange', 'item_modification', 'product_inquiry', 'returns']
MMTB_CLARIFY_GOALS = ['address_change', 'exchange', 'order_cancellation', 'order_tracking']
