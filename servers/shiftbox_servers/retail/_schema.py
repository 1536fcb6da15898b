"""The retail schema and the facts every retail snapshot shares."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

SCHEMA_VERSION = 1
SNAPSHOT_VERSION = "v1"
CLOCK_START = datetime(2025, 6, 16, 10, 0, 0)
"""'Now' at the start of every episode on a retail snapshot (times are US Eastern, as in tau2)."""

SCHEMA_SQL = (Path(__file__).with_name("schema.sql")).read_text()


def create_schema(db: sqlite3.Connection) -> None:
    db.executescript(SCHEMA_SQL)


def new_database() -> sqlite3.Connection:
    """An empty in-memory database with the retail schema (builders fill it, then write_snapshot)."""
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA page_size = 4096")
    create_schema(db)
    return db
