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
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._contract import ToolContract
from ._shared_pages import SharedPages

if TYPE_CHECKING:
    from sqlite_utils import Database

DB_FILENAME = "db.sqlite"
MANIFEST_FILENAME = "manifest.json"
INTERNAL_TABLE_PREFIXES = ("sqlite_", "_shiftbox")
CHANGE_LOG = "_shiftbox_changes"
"""Internal table the change-log triggers fill with (table, primary key) of every written row."""


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
    tool_contracts: dict[str, ToolContract] = Field(
        default_factory=dict,
        description="tool set name -> the contract its server publishes (stamped by `shiftbox snapshots build`)")

    @property
    def snapshot_id(self) -> str:
        return f"{self.domain}/{self.snapshot_version}"

    @classmethod
    def read(cls, directory: Path) -> SnapshotManifest:
        """The manifest of the snapshot in `directory`, or a SnapshotError saying it is none (its files missing, or
        a manifest that does not parse): what `Snapshot.load` checks first, without reading the database."""
        manifest_path, db_path = directory / MANIFEST_FILENAME, directory / DB_FILENAME
        if not manifest_path.is_file() or not db_path.is_file():
            raise SnapshotError(
                f"{directory} is not a snapshot: it needs {MANIFEST_FILENAME} and {DB_FILENAME}. "
                "Build one with `shiftbox snapshots build DOMAIN` (or `make snapshots`)."
            )
        try:
            return cls.model_validate_json(manifest_path.read_bytes())
        except ValidationError as exc:
            problem = " ".join(str(exc).split("\n")[1:3])
            raise SnapshotError(f"{manifest_path} does not parse as a snapshot manifest ({problem}); rebuild the "
                                "snapshot (`shiftbox snapshots build` or `shiftbox snapshots import …`)") from None


class SnapshotError(Exception):
    """A snapshot directory is missing, incomplete or does not match its manifest."""


def sqlite_utils_database(db: sqlite3.Connection | Database) -> Database:
    """sqlite-utils' view of a connection, leaving the connection as it was: no `recursive_triggers`
    pragma and no plugin hooks.

    Imported here, not at the top: sqlite-utils imports pandas and numpy when they are installed (about
    2 s of CPU), which only building, importing and verifying snapshots may pay, never a server start."""
    from sqlite_utils import Database

    if isinstance(db, Database):
        return db
    return Database(db, recursive_triggers=False, execute_plugins=False)


def user_tables(db: sqlite3.Connection | Database) -> list[str]:
    """Domain tables in name order (SQLite's and shiftbox's bookkeeping tables left out)."""
    return sorted(t for t in sqlite_utils_database(db).table_names() if not t.startswith(INTERNAL_TABLE_PREFIXES))


def primary_key(db: sqlite3.Connection, table: str) -> list[str]:
    """The table's primary key columns in declaration order; every column for a table without one.

    Read with one PRAGMA rather than sqlite-utils' `Table.pks`: `state_diff` needs it inside a running
    server, where importing sqlite-utils would cost seconds (see `sqlite_utils_database`)."""
    cols = db.execute(f'PRAGMA table_info("{table}")').fetchall()
    pk = [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5] > 0]
    return pk or [c[1] for c in cols]


def content_hash(db: sqlite3.Connection | Database) -> str:
    """sha256 over the schema and every domain table's rows in primary-key order."""
    h = hashlib.sha256()
    db = sqlite_utils_database(db)
    for name in user_tables(db):
        table = db.table(name)
        h.update(table.schema.encode())
        h.update(f"\x00{name}\x00".encode())
        order = ", ".join(f'"{c}"' for c in primary_key(db.conn, name))
        for row in table.rows_where(order_by=order):
            h.update(json.dumps(list(row.values()), separators=(",", ":")).encode())
            h.update(b"\n")
    return h.hexdigest()


def row_counts(db: sqlite3.Connection | Database) -> dict[str, int]:
    db = sqlite_utils_database(db)
    return {t: db.table(t).count for t in user_tables(db)}


def new_database(schema_sql: str) -> Database:
    """An empty in-memory database with a domain's schema: what every snapshot builder starts from
    (rows go in with sqlite-utils: `db[table].insert_all(rows)`)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA page_size = 4096")
    conn.executescript(schema_sql)
    return sqlite_utils_database(conn)


def select_rows(db: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of a query as dicts keyed by column (what builders and missions read a database with)."""
    cur = db.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def install_change_log(db: sqlite3.Connection) -> None:
    """Triggers that log the primary key of every row written, so a diff costs O(changes), not O(rows).

    They live in the snapshot file itself, so every episode copy has them at no extra cost.
    """
    db.execute(f'CREATE TABLE IF NOT EXISTS "{CHANGE_LOG}" (tbl TEXT NOT NULL, pk TEXT NOT NULL)')
    for table in user_tables(db):
        columns = primary_key(db, table)
        for event, refs in (("INSERT", ("NEW",)), ("UPDATE", ("OLD", "NEW")), ("DELETE", ("OLD",))):
            logs = ""
            for ref in refs:
                key = ", ".join(f'{ref}."{c}"' for c in columns)
                logs += f"INSERT INTO \"{CHANGE_LOG}\" VALUES ('{table}', json_array({key})); "
            name = f"_shiftbox_{event.lower()}_{table}"
            db.execute(f'CREATE TRIGGER IF NOT EXISTS "{name}" AFTER {event} ON "{table}" BEGIN {logs}END')


def _row(db: sqlite3.Connection, table: str, pk: list[str], key: list[Any]) -> dict[str, Any] | None:
    cur = db.execute(f'SELECT * FROM "{table}" WHERE ' + " AND ".join(f'"{c}" = ?' for c in pk), key)
    row = cur.fetchone()
    return None if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))


def state_diff(base: sqlite3.Connection, current: sqlite3.Connection) -> dict[str, Any]:
    """Rows added, removed and changed per table, read from the change log (net effect only)."""
    logged = current.execute(f'SELECT DISTINCT tbl, pk FROM "{CHANGE_LOG}" ORDER BY tbl, pk').fetchall()
    diff: dict[str, Any] = {}
    keys: dict[str, list[str]] = {}
    for table, key_json in logged:
        pk, key = keys.get(table) or keys.setdefault(table, primary_key(current, table)), json.loads(key_json)
        before, after = _row(base, table, pk, key), _row(current, table, pk, key)
        if before == after:
            continue
        entry = diff.setdefault(table, {"added": [], "removed": [], "changed": []})
        if before is None:
            entry["added"].append(after)
        elif after is None:
            entry["removed"].append(before)
        else:
            fields = {c: [before[c], after[c]] for c in after if after[c] != before[c]}
            entry["changed"].append({"key": key, "fields": fields})
    return diff


def state_digest(snapshot_content_sha256: str, diff: dict[str, Any]) -> str:
    """Equal digests mean equal state: the snapshot's content hash plus the canonical net diff."""
    h = hashlib.sha256(snapshot_content_sha256.encode())
    h.update(json.dumps(diff, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


class Snapshot:
    """A loaded snapshot: manifest plus the file's bytes, from which every episode is deserialized."""

    def __init__(self, directory: Path, manifest: SnapshotManifest, data: bytes):
        self.directory = directory
        self.manifest = manifest
        self.data = data
        self._base: sqlite3.Connection | None = None
        self._pages: SharedPages | None = None

    @classmethod
    def load(cls, directory: str | Path) -> Snapshot:
        directory = Path(directory)
        manifest = SnapshotManifest.read(directory)
        db_path = directory / DB_FILENAME
        data = db_path.read_bytes()
        if CHANGE_LOG.encode() not in data:
            raise SnapshotError(f"{db_path} was built without shiftbox's change log; rebuild it "
                                "(`shiftbox snapshots build` or `shiftbox snapshots import …`)")
        actual = hashlib.sha256(data).hexdigest()
        if actual != manifest.sha256:
            raise SnapshotError(
                f"{db_path} has sha256 {actual[:12]}… but its manifest says {manifest.sha256[:12]}…; "
                "the file was changed after it was built. Rebuild it with `shiftbox snapshots build`."
            )
        return cls(directory, manifest, data)

    def open_copy(self) -> sqlite3.Connection:
        """A private in-memory copy of the snapshot (what one episode works on).

        Copy-on-write over pages every episode shares (`_shared_pages.py`) where the platform allows,
        else a full copy; either way writes stay private to the connection."""
        if self._pages is None:
            self._pages = SharedPages(self.data)
        db = self._pages.open()
        if db is None:
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
    db: sqlite3.Connection | Database,
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
    db = sqlite_utils_database(db)
    install_change_log(db.conn)
    db.conn.commit()
    db.conn.execute("VACUUM")
    data = db.conn.serialize()
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
