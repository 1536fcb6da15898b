"""Snapshots: a frozen SQLite file plus manifest, read once and never written to.

The content hash is computed from the logical content (schema and sorted rows), so it is the same
whichever SQLite version wrote the file; the file's own sha256 is recorded beside it for pinning.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DB_FILENAME = "db.sqlite"
MANIFEST_FILENAME = "manifest.json"
INTERNAL_TABLE_PREFIXES = ("sqlite_", "_shiftbox")


class SnapshotManifest(BaseModel):
    """What a snapshot is: the facts a server reports and a run records for reproducibility."""

    model_config = ConfigDict(extra="forbid")

    domain: str
    snapshot_version: str
    schema_version: int
    server_version: str = Field(description="shiftbox-servers version the snapshot was built for")
    source: str = Field(description="how it was made, e.g. 'native seed=7' or 'agentchangebench db.toml'")
    clock_start: datetime
    sha256: str = Field(description="sha256 of the SQLite file's bytes")
    content_sha256: str = Field(description="sha256 of the schema and sorted rows (SQLite-version independent)")
    row_counts: dict[str, int]

    @property
    def snapshot_id(self) -> str:
        return f"{self.domain}/{self.snapshot_version}"


class SnapshotError(Exception):
    """A snapshot directory is missing, incomplete or does not match its manifest."""


def user_tables(db: sqlite3.Connection) -> list[str]:
    """Domain tables in name order (SQLite's and shiftbox's bookkeeping tables left out)."""
    rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    return [r[0] for r in rows if not r[0].startswith(INTERNAL_TABLE_PREFIXES)]


def primary_key(db: sqlite3.Connection, table: str) -> list[str]:
    cols = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    pk = [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5] > 0]
    return pk or [c[1] for c in cols]


def table_rows(db: sqlite3.Connection, table: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    """All rows of a table keyed by primary key."""
    cur = db.execute(f'SELECT * FROM "{table}"')
    names = [d[0] for d in cur.description]
    pk = primary_key(db, table)
    idx = [names.index(k) for k in pk]
    return {tuple(row[i] for i in idx): dict(zip(names, row, strict=True)) for row in cur}


def content_hash(db: sqlite3.Connection, *, include_schema: bool = True) -> str:
    """sha256 over (optionally) the schema and every domain table's rows in primary-key order."""
    h = hashlib.sha256()
    for table in user_tables(db):
        if include_schema:
            sql = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
            h.update(sql.encode())
        pk = ", ".join(f'"{c}"' for c in primary_key(db, table))
        h.update(f"\x00{table}\x00".encode())
        for row in db.execute(f'SELECT * FROM "{table}" ORDER BY {pk}'):
            h.update(json.dumps(row, separators=(",", ":")).encode())
            h.update(b"\n")
    return h.hexdigest()


def row_counts(db: sqlite3.Connection) -> dict[str, int]:
    return {t: db.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in user_tables(db)}


def state_diff(base: sqlite3.Connection, current: sqlite3.Connection) -> dict[str, Any]:
    """Rows added, removed and changed per table between two databases of the same schema."""
    diff: dict[str, Any] = {}
    for table in user_tables(current):
        before, after = table_rows(base, table), table_rows(current, table)
        added = [after[k] for k in sorted(after.keys() - before.keys(), key=repr)]
        removed = [before[k] for k in sorted(before.keys() - after.keys(), key=repr)]
        changed = []
        for k in sorted(after.keys() & before.keys(), key=repr):
            if after[k] != before[k]:
                fields = {c: [before[k][c], after[k][c]] for c in after[k] if after[k][c] != before[k][c]}
                changed.append({"key": list(k), "fields": fields})
        if added or removed or changed:
            diff[table] = {"added": added, "removed": removed, "changed": changed}
    return diff


class Snapshot:
    """A loaded snapshot: manifest plus the file's bytes, from which every episode is deserialized."""

    def __init__(self, directory: Path, manifest: SnapshotManifest, data: bytes):
        self.directory = directory
        self.manifest = manifest
        self.data = data
        self._base: sqlite3.Connection | None = None

    @classmethod
    def load(cls, directory: str | Path) -> Snapshot:
        directory = Path(directory)
        manifest_path, db_path = directory / MANIFEST_FILENAME, directory / DB_FILENAME
        if not manifest_path.is_file() or not db_path.is_file():
            raise SnapshotError(
                f"{directory} is not a snapshot: it needs {MANIFEST_FILENAME} and {DB_FILENAME}. "
                "Build one with `shiftbox snapshots build DOMAIN` (or `make snapshots`)."
            )
        manifest = SnapshotManifest.model_validate_json(manifest_path.read_text())
        data = db_path.read_bytes()
        actual = hashlib.sha256(data).hexdigest()
        if actual != manifest.sha256:
            raise SnapshotError(
                f"{db_path} has sha256 {actual[:12]}… but its manifest says {manifest.sha256[:12]}…; "
                "the file was changed after it was built. Rebuild it with `shiftbox snapshots build`."
            )
        return cls(directory, manifest, data)

    def open_copy(self) -> sqlite3.Connection:
        """A private in-memory copy of the snapshot (what one episode works on)."""
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        db.deserialize(self.data)
        db.execute("PRAGMA foreign_keys = ON")
        return db

    @property
    def base(self) -> sqlite3.Connection:
        """A read-only copy of the untouched snapshot, shared for diffs."""
        if self._base is None:
            self._base = self.open_copy()
            self._base.execute("PRAGMA query_only = ON")
        return self._base


def write_snapshot(
    db: sqlite3.Connection,
    directory: Path,
    *,
    domain: str,
    snapshot_version: str,
    schema_version: int,
    server_version: str,
    source: str,
    clock_start: datetime,
) -> SnapshotManifest:
    """Write a built database and its manifest into `directory` (replacing what was there)."""
    directory.mkdir(parents=True, exist_ok=True)
    db.commit()
    db.execute("VACUUM")
    data = db.serialize()
    db_path = directory / DB_FILENAME
    tmp = db_path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(db_path)
    manifest = SnapshotManifest(
        domain=domain,
        snapshot_version=snapshot_version,
        schema_version=schema_version,
        server_version=server_version,
        source=source,
        clock_start=clock_start,
        sha256=hashlib.sha256(data).hexdigest(),
        content_sha256=content_hash(db),
        row_counts=row_counts(db),
    )
    (directory / MANIFEST_FILENAME).write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest
