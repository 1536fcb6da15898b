"""Build the native retail snapshot: a synthetic store at tau2 retail scale.

50 product types with about 600 variant items, 500 users with credit cards, gift cards and PayPal,
1,000 orders in every status (with the payments, refunds, fulfillments, cancellations, item
modifications, exchanges and returns those statuses imply). Everything comes from one
random.Random(seed) and fixed lists (no wall clock, no uuid), so a seed always gives the same
snapshot, byte for byte.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from random import Random
from typing import Any

from shiftbox_servers.kit import SnapshotManifest

from ._schema import SCHEMA, SNAPSHOT_VERSION, new_database

Row = dict[str, Any]

TABLES = ("products", "variants", "users", "payment_methods", "orders", "order_items", "fulfillments",
          "order_payments")
"""The data tables, in an order where every reference points to an earlier table."""

N_USERS = 500
STATUS_COUNTS = {  # 1,000 orders
    "pending": 300, "processed": 110, "delivered": 330, "cancelled": 100,
    "pending (item modified)": 50, "exchange requested": 50, "return requested": 60,
}
SHIPPED = frozenset({"processed", "delivered", "exchange requested", "return requested"})
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
AVAILABLE_SHARE = 0.65

CATALOGUE: tuple[tuple[str, float, dict[str, tuple[str, ...]]], ...] = (
    # (product name, typical price, option -> values)
    ("T-Shirt", 24, {"color": ("white", "black", "navy", "heather grey", "red"),
                     "size": ("XS", "S", "M", "L", "XL", "XXL"), "fit": ("regular", "slim")}),
    ("Hoodie", 55, {"color": ("black", "grey", "forest green", "maroon"), "size": ("S", "M", "L", "XL"),
                    "material": ("cotton", "fleece")}),
    ("Jeans", 65, {"waist": ("28", "30", "32", "34", "36"), "length": ("30", "32", "34"),
                   "fit": ("slim", "straight", "relaxed")}),
    ("Rain Jacket", 120, {"color": ("yellow", "navy", "olive"), "size": ("S", "M", "L", "XL"),
                          "hood": ("detachable", "fixed")}),
    ("Running Shoes", 110, {"size": ("7", "8", "9", "10", "11", "12"), "color": ("black", "white", "blue"),
                            "width": ("regular", "wide")}),
    ("Hiking Socks", 18, {"size": ("S", "M", "L"), "material": ("merino", "synthetic"),
                          "pack": ("2-pack", "4-pack")}),
    ("Winter Gloves", 35, {"size": ("S", "M", "L"), "material": ("leather", "wool", "synthetic"),
                           "touchscreen": ("yes", "no")}),
    ("Baseball Cap", 22, {"color": ("black", "navy", "khaki", "red"), "closure": ("snapback", "strapback")}),
    ("Laptop", 1200, {"screen size": ("13-inch", "14-inch", "16-inch"), "processor": ("i5", "i7", "Ryzen 7"),
                      "ram": ("8GB", "16GB", "32GB"), "storage": ("256GB SSD", "512GB SSD", "1TB SSD")}),
    ("Tablet", 450, {"screen size": ("8-inch", "10-inch", "12-inch"), "storage": ("64GB", "128GB", "256GB"),
                     "connectivity": ("Wi-Fi", "Wi-Fi + Cellular")}),
    ("Smartphone", 800, {"color": ("black", "silver", "blue"), "storage": ("128GB", "256GB", "512GB"),
                         "screen size": ("6.1-inch", "6.7-inch")}),
    ("Wireless Headphones", 180, {"type": ("over-ear", "on-ear"), "color": ("black", "white", "navy"),
                                  "noise cancelling": ("yes", "no")}),
    ("Earbuds", 90, {"color": ("black", "white", "mint"), "battery life": ("5 hours", "8 hours"),
                     "water resistance": ("IPX4", "IPX7")}),
    ("Smartwatch", 250, {"case size": ("40mm", "44mm"), "color": ("black", "silver", "rose gold"),
                         "band": ("silicone", "leather", "metal")}),
    ("Bluetooth Speaker", 80, {"color": ("black", "blue", "red", "green"), "size": ("mini", "standard", "large"),
                               "waterproof": ("yes", "no")}),
    ("Power Bank", 40, {"capacity": ("10000mAh", "20000mAh"), "output": ("USB-C", "USB-A", "wireless"),
                        "color": ("black", "white")}),
    ("Computer Monitor", 280, {"size": ("24-inch", "27-inch", "32-inch"), "resolution": ("1080p", "1440p", "4K"),
                               "panel": ("IPS", "VA")}),
    ("Keyboard", 90, {"layout": ("full size", "tenkeyless", "65%"), "switch": ("linear", "tactile", "clicky"),
                      "backlight": ("none", "white", "RGB")}),
    ("Wireless Mouse", 45, {"color": ("black", "grey", "white"), "grip": ("palm", "claw"),
                            "connectivity": ("Bluetooth", "USB receiver")}),
    ("Webcam", 70, {"resolution": ("720p", "1080p", "4K"), "microphone": ("mono", "stereo"),
                    "mount": ("clip", "tripod")}),
    ("Printer", 180, {"type": ("inkjet", "laser"), "color printing": ("yes", "no"),
                      "connectivity": ("USB", "Wi-Fi", "Ethernet")}),
    ("E-Reader", 130, {"screen size": ("6-inch", "7-inch"), "storage": ("8GB", "16GB", "32GB"),
                       "ads": ("with ads", "ad-free")}),
    ("Digital Camera", 900, {"resolution": ("24MP", "33MP", "45MP"), "kit lens": ("body only", "18-55mm", "24-105mm"),
                             "color": ("black", "silver")}),
    ("Drone", 600, {"camera": ("2.7K", "4K", "5.4K"), "flight time": ("25 minutes", "35 minutes"),
                    "bundle": ("standard", "fly more")}),
    ("Coffee Maker", 90, {"type": ("drip", "pour-over", "single serve"), "capacity": ("4 cups", "8 cups", "12 cups"),
                          "color": ("black", "stainless steel", "white")}),
    ("Espresso Machine", 450, {"type": ("manual", "semi-automatic", "automatic"), "grinder": ("built-in", "none"),
                               "color": ("black", "silver")}),
    ("Blender", 85, {"capacity": ("48 oz", "64 oz", "72 oz"), "power": ("700W", "1000W", "1500W"),
                     "color": ("black", "red", "white")}),
    ("Toaster", 45, {"slots": ("2-slice", "4-slice"), "color": ("black", "white", "red", "stainless steel"),
                     "type": ("pop-up", "toaster oven")}),
    ("Air Fryer", 110, {"capacity": ("4 quart", "6 quart", "8 quart"), "color": ("black", "white", "grey"),
                        "controls": ("digital", "dial")}),
    ("Cookware Set", 200, {"material": ("stainless steel", "nonstick", "cast iron"),
                           "pieces": ("5-piece", "10-piece", "12-piece")}),
    ("Knife Set", 120, {"steel": ("German", "Japanese"), "pieces": ("6-piece", "8-piece", "14-piece"),
                        "block": ("wood", "acrylic")}),
    ("Electric Kettle", 50, {"capacity": ("1L", "1.7L"), "material": ("glass", "stainless steel", "plastic"),
                             "color": ("black", "white", "silver")}),
    ("Water Bottle", 28, {"capacity": ("500ml", "750ml", "1000ml"), "material": ("stainless steel", "glass", "plastic"),
                          "color": ("black", "blue", "green", "pink")}),
    ("Vacuum Cleaner", 300, {"type": ("upright", "stick", "robotic"), "power": ("corded", "cordless"),
                             "filter": ("HEPA", "standard")}),
    ("Air Purifier", 220, {"room size": ("small", "medium", "large"), "filter": ("HEPA", "HEPA + carbon"),
                           "smart": ("yes", "no")}),
    ("Desk Lamp", 45, {"color": ("black", "white", "brass"), "brightness": ("adjustable", "fixed"),
                       "power source": ("USB", "AC adapter")}),
    ("Office Chair", 320, {"material": ("mesh", "fabric", "leather"), "color": ("black", "grey", "blue"),
                           "armrests": ("fixed", "adjustable"), "headrest": ("yes", "no")}),
    ("Standing Desk", 500, {"width": ("48 inch", "55 inch", "60 inch"), "top": ("oak", "walnut", "white", "black"),
                            "motor": ("single", "dual")}),
    ("Bookshelf", 180, {"material": ("oak", "pine", "metal"), "height": ("3 ft", "5 ft", "6 ft"),
                        "color": ("natural", "black", "white")}),
    ("Bed Sheets", 80, {"size": ("twin", "full", "queen", "king"), "material": ("cotton", "linen", "bamboo"),
                        "color": ("white", "grey", "sage", "navy")}),
    ("Pillow", 40, {"fill": ("memory foam", "down", "down alternative"), "firmness": ("soft", "medium", "firm"),
                    "size": ("standard", "king")}),
    ("Yoga Mat", 35, {"thickness": ("4mm", "6mm", "8mm"), "material": ("TPE", "PVC", "natural rubber"),
                      "color": ("purple", "blue", "black")}),
    ("Dumbbell Set", 250, {"weight range": ("5-25 lbs", "10-50 lbs", "5-52.5 lbs"), "type": ("fixed", "adjustable"),
                           "material": ("iron", "rubber")}),
    ("Bicycle", 750, {"type": ("road", "mountain", "hybrid"), "frame size": ("S", "M", "L"),
                      "color": ("black", "red", "blue")}),
    ("Bike Helmet", 65, {"size": ("S", "M", "L"), "color": ("black", "white", "red", "blue"), "visor": ("yes", "no")}),
    ("Tent", 250, {"capacity": ("2-person", "4-person", "6-person"), "season": ("3-season", "4-season"),
                   "color": ("green", "orange")}),
    ("Sleeping Bag", 110, {"temperature rating": ("20F", "30F", "40F"), "fill": ("down", "synthetic"),
                           "length": ("regular", "long")}),
    ("Backpack", 90, {"capacity": ("20L", "30L", "40L"), "color": ("black", "grey", "navy", "green"),
                      "laptop sleeve": ("yes", "no")}),
    ("Suitcase", 180, {"size": ("carry-on", "medium", "large"), "shell": ("hardside", "softside"),
                       "color": ("black", "silver", "blue")}),
    ("Sunglasses", 130, {"frame": ("black", "tortoise", "gold"), "lens": ("grey", "brown", "green"),
                         "polarized": ("yes", "no")}),
)

FIRST_NAMES = (
    "Aaliyah", "Aarav", "Amelia", "Andre", "Anya", "Ava", "Benjamin", "Camila", "Chen", "Daiki",
    "Daniel", "Elena", "Emma", "Ethan", "Fatima", "Gabriel", "Hana", "Harper", "Ivan", "Isabella",
    "James", "Jamal", "Kai", "Leila", "Liam", "Lucas", "Maya", "Mei", "Mohamed", "Nadia",
    "Noah", "Olivia", "Omar", "Priya", "Rafael", "Raj", "Sofia", "Sophia", "Tariq", "Theo",
    "Valentina", "Wei", "Xavier", "Yara", "Yusuf", "Zain", "Zoe", "Lena", "Mateo", "Nora",
)
LAST_NAMES = (
    "Ahmed", "Anderson", "Brown", "Castillo", "Chen", "Cohen", "Davis", "Dubois", "Fischer", "Garcia",
    "Gonzalez", "Hernandez", "Ito", "Jackson", "Johnson", "Kim", "Kovacs", "Lee", "Lopez", "Martin",
    "Moore", "Muller", "Nguyen", "Okafor", "Patel", "Petrov", "Ramirez", "Rossi", "Santos", "Sanchez",
    "Schmidt", "Silva", "Singh", "Smith", "Suzuki", "Taylor", "Thomas", "Wilson", "Wright", "Young",
)
STREETS = ("Oak", "Maple", "Cedar", "Pine", "Elm", "Birch", "Willow", "Lake", "Hill", "Park",
           "Main", "Broadway", "Highland", "Sunset", "River", "Spring", "Church", "Washington", "Lincoln", "Market")
STREET_SUFFIXES = ("Street", "Avenue", "Drive", "Lane", "Court", "Road", "Boulevard", "Way", "Place")
CITIES = (  # (city, state, first three digits of its zip codes)
    ("New York", "NY", "100"), ("Philadelphia", "PA", "191"), ("Boston", "MA", "021"),
    ("Chicago", "IL", "606"), ("Houston", "TX", "770"), ("Austin", "TX", "787"),
    ("Denver", "CO", "802"), ("Phoenix", "AZ", "850"), ("Seattle", "WA", "981"),
    ("Portland", "OR", "972"), ("San Francisco", "CA", "941"), ("San Diego", "CA", "921"),
    ("Los Angeles", "CA", "900"), ("Atlanta", "GA", "303"), ("Miami", "FL", "331"),
    ("Charlotte", "NC", "282"), ("Nashville", "TN", "372"), ("Columbus", "OH", "432"),
    ("Minneapolis", "MN", "554"), ("Pittsburgh", "PA", "152"),
)
CARD_BRANDS = ("visa", "mastercard", "amex", "discover")


def build_native(directory: Path, seed: int = 7) -> SnapshotManifest:
    """Generate the native retail database from `seed` and write it as a snapshot into `directory`."""
    store = _NativeStore(Random(seed))
    store.generate()
    check_payments_balance(store.rows)
    db = new_database()
    for table in TABLES:
        db[table].insert_all(store.rows[table])
    return SCHEMA.write_snapshot(db, directory, snapshot_version=SNAPSHOT_VERSION, source=f"native seed={seed}")



def check_payments_balance(rows: Mapping[str, list[Row]]) -> None:
    """Raise ValueError unless every order's net payment equals what it holds: the sum of its line prices,
    or nothing once cancelled (the invariant the refund arithmetic of the tools relies on)."""
    lines: dict[str, float] = {}
    for line in rows["order_items"]:
        lines[line["order_id"]] = lines.get(line["order_id"], 0.0) + line["price"]
    net: dict[str, float] = {}
    for p in rows["order_payments"]:
        sign = 1 if p["transaction_type"] == "payment" else -1
        net[p["order_id"]] = net.get(p["order_id"], 0.0) + sign * p["amount"]
    for order in rows["orders"]:
        oid = order["order_id"]
        expected = 0.0 if order["status"] == "cancelled" else lines.get(oid, 0.0)
        if round(net.get(oid, 0.0) - expected, 2) != 0:
            raise ValueError(f"orders {oid}: payments net {net.get(oid, 0.0):.2f} but the order holds "
                             f"{expected:.2f} ({order['status']})")


def _money(x: float) -> float:
    return round(x + 0.0, 2)


class _NativeStore:
    """The generator: one RNG and the rows made so far, per table."""

    def __init__(self, rng: Random):
        self.rng = rng
        self.rows: dict[str, list[Row]] = {table: [] for table in TABLES}
        self.variants_of: dict[str, list[Row]] = {}
        self.product_of: dict[str, str] = {}
        """item id -> its product's id"""
        self.methods_of: dict[str, list[Row]] = {}

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def generate(self) -> None:
        rng = self.rng
        # product ids and item ids come from one pool, so the two are never confused
        digit_ids = iter(rng.sample(range(1_000_000_000, 10_000_000_000), 2000))
        for name, price, options in CATALOGUE:
            self.product(next(digit_ids), name, price, options, digit_ids)
        names = rng.sample(list(itertools.product(FIRST_NAMES, LAST_NAMES)), N_USERS)
        method_numbers = iter(rng.sample(range(1_000_000, 10_000_000), 4 * N_USERS))
        user_numbers = rng.sample(range(1000, 10_000), N_USERS)
        for (first, last), number in zip(names, user_numbers, strict=True):
            self.user(first, last, number, method_numbers)
        statuses = [s for s, n in STATUS_COUNTS.items() for _ in range(n)]
        rng.shuffle(statuses)
        order_numbers = rng.sample(range(1_000_000, 10_000_000), len(statuses))
        tracking = iter(rng.sample(range(100_000_000_000, 1_000_000_000_000), 2 * len(statuses)))
        for status, number in zip(statuses, order_numbers, strict=True):
            self.order(f"#W{number}", status, tracking)
        self.rows["orders"].sort(key=lambda o: o["order_id"])

    # -- catalogue ------------------------------------------------------------------------------

    def product(self, number: int, name: str, price: float, options: dict[str, tuple[str, ...]],
                digit_ids: Iterator[int]) -> None:
        rng = self.rng
        product_id = str(number)
        self.rows["products"].append({"product_id": product_id, "name": name})
        # each option value moves the price a little; a variant's price is the product of its moves
        moves = {(k, v): rng.uniform(0.92, 1.12) for k, values in options.items() for v in values}
        combos = list(itertools.product(*options.values()))
        chosen = rng.sample(combos, min(len(combos), rng.randint(7, 19)))
        variants = []
        for combo in chosen:
            factor = 1.0
            for key, value in zip(options, combo, strict=True):
                factor *= moves[(key, value)]
            variants.append({
                "item_id": str(next(digit_ids)),
                "product_id": product_id,
                "options": json.dumps(dict(zip(options, combo, strict=True))),
                "available": int(self.chance(AVAILABLE_SHARE)),
                "price": _money(price * factor * rng.uniform(0.97, 1.03)),
            })
        for v in rng.sample(variants, 2):  # at least two available: every product can be exchanged
            v["available"] = 1
        self.rows["variants"] += variants
        self.variants_of[product_id] = variants
        self.product_of.update((v["item_id"], product_id) for v in variants)

    # -- users ----------------------------------------------------------------------------------

    def address(self) -> Row:
        rng = self.rng
        city, state, zip3 = rng.choice(CITIES)
        second = rng.random()
        return {
            "address1": f"{rng.randint(10, 9999)} {rng.choice(STREETS)} {rng.choice(STREET_SUFFIXES)}",
            "address2": f"Suite {rng.randint(100, 999)}" if second < 0.5 else
                        f"Apt {rng.randint(1, 40)}" if second < 0.8 else "",
            "city": city, "state": state, "country": "USA", "zip": f"{zip3}{rng.randrange(100):02d}",
        }

    def user(self, first: str, last: str, number: int, method_numbers: Iterator[int]) -> None:
        rng = self.rng
        user_id = f"{first}_{last}_{number}".lower()
        user = {"user_id": user_id, "first_name": first, "last_name": last,
                "email": f"{first}.{last}{rng.randint(1000, 9999)}@example.com".lower(), **self.address()}
        self.rows["users"].append(user)
        sources = [s for s, p in (("credit_card", 0.7), ("gift_card", 0.45), ("paypal", 0.45)) if self.chance(p)]
        if not sources:
            sources = [rng.choice(("credit_card", "gift_card", "paypal"))]
        if "credit_card" in sources and self.chance(0.2):
            sources.append("credit_card")
        methods = []
        for source in sources:
            methods.append({
                "payment_method_id": f"{source}_{next(method_numbers)}",
                "user_id": user_id,
                "source": source,
                "brand": rng.choice(CARD_BRANDS) if source == "credit_card" else None,
                "last_four": f"{rng.randrange(10_000):04d}" if source == "credit_card" else None,
                "balance": rng.randint(0, 30_000) / 100 if source == "gift_card" else None,
            })
        self.rows["payment_methods"] += methods
        self.methods_of[user_id] = methods

    # -- orders ---------------------------------------------------------------------------------

    def other_variant(self, line: Row, *, available: bool) -> Row:
        """Another variant of the line's product (an available one when asked)."""
        candidates = [v for v in self.variants_of[self.product_of[line["item_id"]]]
                      if v["item_id"] != line["item_id"] and (v["available"] or not available)]
        return self.rng.choice(candidates)

    def order(self, order_id: str, status: str, tracking: Iterator[int]) -> None:
        rng = self.rng
        user = rng.choice(self.rows["users"])
        user_id = user["user_id"]
        methods = self.methods_of[user_id]
        address = {k: user[k] for k in ("address1", "address2", "city", "state", "country", "zip")}
        if self.chance(0.15):
            address = self.address()
        order = {"order_id": order_id, "user_id": user_id, "status": status, **address,
                 "cancel_reason": None, "exchange_payment_method_id": None, "exchange_price_difference": None,
                 "return_payment_method_id": None}
        self.rows["orders"].append(order)
        lines = []
        for line_no in range(1, rng.choices((1, 2, 3, 4, 5), (25, 25, 20, 15, 15))[0] + 1):
            product = rng.choice(self.rows["products"])
            variant = rng.choice(self.variants_of[product["product_id"]])
            lines.append({"order_id": order_id, "line_no": line_no, "item_id": variant["item_id"],
                          "price": variant["price"],
                          "return_requested": 0, "exchange_item_id": None})
        self.rows["order_items"] += lines
        method = rng.choice(methods)
        payments: list[tuple[str, float, str]] = []
        if status == "pending (item modified)":
            # the order was placed with other options of some items, then modified (paid/refunded the difference)
            changed = rng.sample(lines, rng.randint(1, min(2, len(lines))))
            originals = {id(line): self.other_variant(line, available=False)["price"] for line in changed}
            placed = sum(originals.get(id(line), line["price"]) for line in lines)
            payments.append(("payment", _money(placed), method["payment_method_id"]))
            difference = _money(sum(line["price"] - originals[id(line)] for line in changed))
            if difference:
                kind = "payment" if difference > 0 else "refund"
                payments.append((kind, abs(difference), rng.choice(methods)["payment_method_id"]))
        else:
            payments.append(("payment", _money(sum(line["price"] for line in lines)), method["payment_method_id"]))
        if status == "cancelled":
            order["cancel_reason"] = rng.choice(CANCEL_REASONS)
            payments.append(("refund", payments[0][1], method["payment_method_id"]))
        if status in SHIPPED:
            self.fulfillments(order_id, lines, tracking)
        if status == "exchange requested":
            self.exchange(order, lines, method)
        if status == "return requested":
            returned = rng.sample(lines, rng.randint(1, len(lines)))
            for line in returned:
                line["return_requested"] = 1
            gift_cards = [m for m in methods if m["source"] == "gift_card"]
            refund_to = rng.choice(gift_cards) if gift_cards and self.chance(0.3) else method
            order["return_payment_method_id"] = refund_to["payment_method_id"]
        for seq, (kind, amount, pm_id) in enumerate(payments, start=1):
            self.rows["order_payments"].append({"order_id": order_id, "seq": seq, "transaction_type": kind,
                                                "amount": amount, "payment_method_id": pm_id})

    def fulfillments(self, order_id: str, lines: list[Row], tracking: Iterator[int]) -> None:
        item_ids = [line["item_id"] for line in lines]
        groups = [item_ids]
        if len(item_ids) > 1 and self.chance(0.15):  # a split shipment
            cut = self.rng.randint(1, len(item_ids) - 1)
            groups = [item_ids[:cut], item_ids[cut:]]
        for n, group in enumerate(groups, start=1):
            self.rows["fulfillments"].append({
                "order_id": order_id, "fulfillment_no": n,
                "tracking_ids": json.dumps([str(next(tracking))]), "item_ids": json.dumps(group),
            })

    def exchange(self, order: Row, lines: list[Row], method: Row) -> None:
        rng = self.rng
        exchanged = rng.sample(lines, rng.randint(1, min(2, len(lines))))
        difference = 0.0
        for line in exchanged:
            new = self.other_variant(line, available=True)
            line["exchange_item_id"] = new["item_id"]
            difference += new["price"] - line["price"]
        difference = _money(difference)
        methods = self.methods_of[order["user_id"]]
        usable = [m for m in methods if m["source"] != "gift_card" or m["balance"] >= difference]
        if not usable:  # only gift cards, none large enough: the customer had topped one up
            usable = [max(methods, key=lambda m: m["balance"])]
            usable[0]["balance"] = _money(difference + rng.randint(0, 5000) / 100)
        chosen = method if method in usable and self.chance(0.7) else rng.choice(usable)
        order["exchange_payment_method_id"] = chosen["payment_method_id"]
        order["exchange_price_difference"] = difference
