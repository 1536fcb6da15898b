"""The mmtb schema and the facts every mmtb snapshot shares."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from shiftbox_servers.kit import DomainSchema

SCHEMA_VERSION = 1
SNAPSHOT_VERSION = "v1"
CLOCK_START = datetime(2025, 1, 1, 9, 0, 0)
"""The episode clock's start (MMTB's tools keep no clock: each mission's date is in the user's known_info)."""

SCHEMA = DomainSchema("mmtb", (Path(__file__).with_name("schema.sql")).read_text(), SCHEMA_VERSION, CLOCK_START)
"""What every mmtb snapshot shares; the importer writes through it."""
