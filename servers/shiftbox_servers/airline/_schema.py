"""The airline schema and the facts every airline snapshot shares."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

from shiftbox_servers.kit import DomainSchema

SCHEMA_VERSION = 1
SNAPSHOT_VERSION = "v1"
CLOCK_START = datetime(2024, 5, 15, 15, 0, 0)
"""'Now' at the start of every episode (tau2's airline clock: 2024-05-15 15:00 EST)."""

FIRST_DATE = date(2024, 5, 1)
LAST_DATE = date(2024, 5, 30)
DATES: tuple[str, ...] = tuple(
    (FIRST_DATE + timedelta(days=i)).isoformat() for i in range((LAST_DATE - FIRST_DATE).days + 1)
)
"""Every date a flight is scheduled on (30 days around the clock start, as in tau2)."""

CABINS = ("basic_economy", "economy", "business")
FREE_BAGS = {  # membership -> cabin -> free checked bags per passenger (the policy's table)
    "regular": {"basic_economy": 0, "economy": 1, "business": 2},
    "silver": {"basic_economy": 1, "economy": 2, "business": 3},
    "gold": {"basic_economy": 2, "economy": 3, "business": 4},
}
BAG_FEE = 50.0
INSURANCE_FEE = 30.0

SCHEMA_SQL = (Path(__file__).with_name("schema.sql")).read_text()
SCHEMA = DomainSchema("airline", SCHEMA_SQL, SCHEMA_VERSION, CLOCK_START)
"""What every airline snapshot shares; builders and importers write through it."""
new_database = SCHEMA.new_database
