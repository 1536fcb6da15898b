"""The banking schema and the facts every banking snapshot shares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from shiftbox_servers.kit import DomainSchema

SCHEMA_VERSION = 1
SNAPSHOT_VERSION = "v1"
CLOCK_START = datetime(2025, 7, 1, 9, 0, 0)
"""'Now' at the start of every episode on the native snapshot (transactions are dated before it)."""

SCHEMA_SQL = (Path(__file__).with_name("schema.sql")).read_text()
SCHEMA = DomainSchema("banking", SCHEMA_SQL, SCHEMA_VERSION, CLOCK_START)
"""What every banking snapshot shares; builders and importers write through it."""
new_database = SCHEMA.new_database
