"""The facts every snapshot of one domain shares (name, schema, clock), declared once per domain."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

from ._snapshot import SnapshotManifest, new_database, write_snapshot

if TYPE_CHECKING:
    from sqlite_utils import Database


@dataclass(frozen=True)
class DomainSchema:
    """A domain's schema and snapshot facts: builders and importers start from `new_database()` and end
    with `write_snapshot(...)`, which records the rest (schema version, server version, clock start)."""

    domain: str
    schema_sql: str
    schema_version: int
    clock_start: datetime
    """'Now' at the start of every episode on this domain's snapshots."""

    def new_database(self) -> Database:
        """An empty in-memory database with the domain's schema, as a sqlite-utils `Database`
        (`db[table].insert_all(rows)` fills it)."""
        return new_database(self.schema_sql)

    def write_snapshot(self, db: sqlite3.Connection | Database, directory: Path, *, snapshot_version: str,
                       source: str) -> SnapshotManifest:
        """Write the built `db` as snapshot `snapshot_version` into `directory`; `source` says how it was made."""
        return write_snapshot(
            db, directory, domain=self.domain, snapshot_version=snapshot_version,
            schema_version=self.schema_version, server_version=version("shiftbox-servers"), source=source,
            clock_start=self.clock_start,
        )
