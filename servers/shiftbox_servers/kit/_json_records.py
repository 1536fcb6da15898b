"""Checks for reading a reference benchmark's JSON database (tau2 / AgentChangeBench db.json) record by
record: every failure names the table, the record and the field, so an importer's error says what to fix."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._input_files import check_not_empty, load_json_file

if TYPE_CHECKING:
    from sqlite_utils import Database



class RecordError(ValueError):
    """A value that doesn't fit (raised with the table, record and field)."""


def record_error(table: str, record: str, field: str, problem: str) -> RecordError:
    return RecordError(f"{table} {record}: field {field!r} {problem}")


def text_field(table: str, record: str, field: str, value: Any, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty_ok):
        raise record_error(table, record, field, f"must be a{'' if empty_ok else ' non-empty'} string, not {value!r}")
    return value


def checked_keys(table: str, record: str, data: Any, allowed: set[str], required: set[str], field: str = "") -> dict:
    where = f"{field}." if field else ""
    if not isinstance(data, dict):
        raise record_error(table, record, field or "(record)", f"must be an object, not {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise record_error(table, record, where + unknown[0], "is not part of the schema")
    missing = sorted(required - set(data))
    if missing:
        raise record_error(table, record, where + missing[0], "is missing")
    return data


def keyed_records(data: dict, table: str) -> list[tuple[str, Any]]:
    value = data[table]
    if not isinstance(value, dict):
        raise record_error("db.json", table, table, "must be an object keyed by id")
    return list(value.items())


def check_same_id(table: str, record: str, field: str, value: Any, key: str | None = None) -> None:
    key = record if key is None else key
    if value != key:
        raise record_error(table, record, field, f"is {value!r} but the record is stored under {key!r}")


def load_db_json(db_json: Path, convert: Callable[[Any], dict[str, list[dict]]],
                 new_database: Callable[[], Database], tables: Iterable[str]) -> Database:
    """A new database holding a db.json's records as `convert` turns them into rows (errors name the file)."""
    data = load_json_file(db_json)
    check_not_empty(db_json, data)
    try:
        rows = convert(data)
    except RecordError as exc:
        raise ValueError(f"{db_json}: {exc}") from None
    db = new_database()
    for table in tables:
        try:
            db[table].insert_all(rows[table])
        except sqlite3.IntegrityError as exc:  # pragma: no cover - convert() checks what the schema checks
            raise ValueError(f"{db_json}: {table}: {exc}") from None
    return db
