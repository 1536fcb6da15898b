"""The retail schema and the facts every retail snapshot shares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from shiftbox_servers.kit import DomainSchema

SCHEMA_VERSION = 1
SNAPSHOT_VERSION = "v1"
CLOCK_START = datetime(2025, 6, 16, 10, 0, 0)
"""'Now' at the start of every episode on a retail snapshot (times are US Eastern, as in tau2)."""

SCHEMA_SQL = (Path(__file__).with_name("schema.sql")).read_text()
SCHEMA = DomainSchema("retail", SCHEMA_SQL, SCHEMA_VERSION, CLOCK_START)
"""What every retail snapshot shares; builders and importers write through it."""
new_database = SCHEMA.new_database
