"""The retail schema and the facts every retail snapshot shares."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

from shiftbox_servers.kit import new_database as kit_new_database

SCHEMA_VERSION = 1
SNAPSHOT_VERSION = "v1"
CLOCK_START = datetime(2025, 6, 16, 10, 0, 0)
"""'Now' at the start of every episode on a retail snapshot (times are US Eastern, as in tau2)."""

SCHEMA_SQL = (Path(__file__).with_name("schema.sql")).read_text()



def new_database() -> sqlite3.Connection:
    """An empty in-memory database with the retail schema (builders fill it, then write_snapshot)."""
    return kit_new_database(SCHEMA_SQL)
