"""Import AgentChangeBench's banking db.toml as a snapshot of the shiftbox schema (ids kept), so the
reference data runs on the same tools. Rows are checked against the schema before anything is written.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shiftbox_servers.kit import SnapshotManifest, check_not_empty, load_toml_file

from ._builder import TX_TYPES, check_one_awaiting_payment
from ._phone import normalize_phone
from ._schema import SCHEMA, new_database

if TYPE_CHECKING:
    from sqlite_utils import Database

TABLES = ("customers", "accounts", "cards", "statements", "transactions", "payees",
          "payment_requests", "disputes")
"""The tables db.toml holds, in an order where every reference points to an earlier table."""
ADDRESS_FIELDS = ("street", "city", "state", "postal_code")
OWNED_ID_LISTS = {"account_ids": "accounts", "card_ids": "cards", "statement_ids": "statements",
                  "payment_request_ids": "payment_requests", "dispute_ids": "disputes",
                  "payee_ids": "payees"}
"""Customer fields listing what the customer owns; checked against the foreign keys, not stored."""
DATE_COLUMNS = {"date_of_birth", "period_start", "period_end", "issue_date", "due_date"}
DATETIME_COLUMNS = {"created_at", "timestamp", "opened_at", "expires_at"}
EXTRA_ALLOWED = {("transactions", "type"): frozenset(TX_TYPES)}
"""Allowed values the schema states in a comment rather than a CHECK."""

Row = dict[str, Any]


class _Invalid(ValueError):
    """A field value that doesn't fit (the caller adds which table, row and field)."""


@dataclass(frozen=True)
class Column:
    name: str
    primary_key: bool
    sql_type: str
    required: bool
    default: Any
    allowed: frozenset[Any] | None
    references: str | None


def import_agentchangebench(db_toml: Path, directory: Path) -> SnapshotManifest:
    """Read AgentChangeBench's banking db.toml, validate every row and write it as snapshot acb-v1."""
    data = load_toml_file(db_toml)
    check_not_empty(db_toml, data)
    unknown = sorted(set(data) - set(TABLES))
    if unknown:
        raise ValueError(f"{db_toml}: unknown tables {unknown}; expected some of {list(TABLES)}")
    db = new_database()
    tables: dict[str, dict[str, Row]] = {}
    listed: dict[str, dict[str, list[str]]] = {}
    for table in TABLES:
        columns = table_columns(db, table)
        id_column = next(c.name for c in columns if c.primary_key)
        tables[table] = {}
        for n, raw in enumerate(_array_of_tables(data, table)):
            fields = dict(raw)
            row_id = str(fields.get(id_column, f"#{n + 1}"))
            if table == "customers":
                listed[row_id] = {f: fields.pop(f) for f in OWNED_ID_LISTS if f in fields}
                fields.update(_address(row_id, fields.pop("address", None)))
            if table == "accounts":
                fields.setdefault("is_business", "biz" in row_id)
            row = convert_row(table, row_id, fields, columns, tables)
            if row_id in tables[table]:
                raise ValueError(f"{table} {row_id}: field {id_column!r} repeats an id")
            tables[table][row_id] = row
    check_relations(tables)
    check_owned_lists(tables, listed)
    for table in TABLES:
        for row_id, row in tables[table].items():
            try:
                db[table].insert(row)
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"{table} {row_id}: {exc}") from None
    return SCHEMA.write_snapshot(db, directory, snapshot_version="acb-v1", source="agentchangebench db.toml")


def _array_of_tables(data: dict[str, Any], table: str) -> list[dict[str, Any]]:
    rows = data.get(table, [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{table}: expected an array of tables ([[{table}]])")
    return rows


def _address(customer_id: str, address: Any) -> dict[str, Any]:
    if not isinstance(address, dict):
        raise ValueError(f"customers {customer_id}: field 'address' must be a table of {list(ADDRESS_FIELDS)}")
    unknown = sorted(set(address) - set(ADDRESS_FIELDS))
    if unknown:
        raise ValueError(f"customers {customer_id}: field 'address.{unknown[0]}' is not part of the schema")
    return address


def table_columns(db: Database, table: str) -> list[Column]:
    """The table's columns as the schema declares them, with their allowed values and references."""
    found = db.table(table)
    allowed = {c.column: frozenset(c.options) for c in found.checks if c.column and c.options is not None}
    references = {fk.column: fk.other_table for fk in found.foreign_keys}
    defaults = found.default_values
    return [Column(
        name=c.name,
        primary_key=bool(c.is_pk),
        sql_type=c.type,
        required=bool(c.notnull or c.is_pk) and c.name not in defaults,
        default=defaults.get(c.name),
        allowed=EXTRA_ALLOWED.get((table, c.name), allowed.get(c.name)),
        references=references.get(c.name),
    ) for c in found.columns]


def convert_row(table: str, row_id: str, fields: Row, columns: list[Column],
                tables: dict[str, dict[str, Row]]) -> Row:
    """The row as stored, or ValueError naming the table, row and field that doesn't fit."""
    names = {c.name for c in columns}
    unknown = sorted(set(fields) - names)
    if unknown:
        raise ValueError(f"{table} {row_id}: field {unknown[0]!r} is not part of the schema")
    row = {}
    for column in columns:
        try:
            row[column.name] = convert_value(column, fields.get(column.name), tables)
        except _Invalid as exc:
            raise ValueError(f"{table} {row_id}: field {column.name!r} {exc}") from None
    return row


def convert_value(column: Column, value: Any, tables: dict[str, dict[str, Row]]) -> Any:
    if value is None:
        if column.required:
            raise _Invalid("is missing")
        return column.default
    if column.sql_type == "REAL":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"must be a number, not {value!r}")
        value = round(float(value), 2)
    elif column.sql_type == "INTEGER":
        if not isinstance(value, bool | int):
            raise _Invalid(f"must be true/false or an integer, not {value!r}")
        value = int(value)
    else:
        value = _text(column.name, value)
    if column.allowed is not None and value not in column.allowed:
        raise _Invalid(f"is {value!r}; allowed: {sorted(column.allowed, key=str)}")
    if column.references is not None and value not in tables[column.references]:
        raise _Invalid(f"refers to {value!r}, which is not in {column.references}")
    return value


def _text(name: str, value: Any) -> str:
    """A text column's value in its stored form: dates YYYY-MM-DD, datetimes ISO to the second; phone numbers
    as the reference stored them (its lookups matched that exact string; the default tools normalize both sides)."""
    if name in DATE_COLUMNS:
        return _date(value)
    if name in DATETIME_COLUMNS:
        return _datetime(value)
    if not isinstance(value, str):
        raise _Invalid(f"must be a string, not {value!r}")
    if name == "phone_number":
        if normalize_phone(value) is None:
            raise _Invalid(f"is {value!r}, not a US phone number")
        return value
    return value


def _date(value: Any) -> str:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise _Invalid(f"is {value!r}, not a date YYYY-MM-DD")


def _datetime(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise _Invalid(f"is {value!r}, not an ISO 8601 datetime") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        raise _Invalid(f"is {value!r}, not an ISO 8601 datetime")
    if value.tzinfo is not None:
        raise _Invalid(f"is {value.isoformat()}; shiftbox times are local, without a UTC offset")
    return value.isoformat(timespec="seconds")


def check_relations(tables: dict[str, dict[str, Row]]) -> None:
    """What column types can't say: a request is for a positive amount from the customer's own account
    to its own payee; a dispute names a transaction of the disputed account; a customer has at most
    one request awaiting payment."""
    for request_id, r in tables["payment_requests"].items():
        if r["amount"] <= 0:
            raise ValueError(f"payment_requests {request_id}: field 'amount' is {r['amount']}; it must be > 0")
        for field, owner in (("from_account_id", tables["accounts"]), ("to_payee_id", tables["payees"])):
            if owner[r[field]]["customer_id"] != r["customer_id"]:
                raise ValueError(f"payment_requests {request_id}: field {field!r} is {r[field]}, "
                                 f"which does not belong to customer {r['customer_id']}")
    check_one_awaiting_payment(tables["payment_requests"].values())
    for dispute_id, d in tables["disputes"].items():
        if tables["transactions"][d["tx_id"]]["account_id"] != d["account_id"]:
            raise ValueError(f"disputes {dispute_id}: field 'tx_id' is {d['tx_id']}, which is not a "
                             f"transaction of account {d['account_id']}")


def check_owned_lists(tables: dict[str, dict[str, Row]], listed: dict[str, dict[str, list[str]]]) -> None:
    """Each customer's id lists (account_ids, …) must agree with what the foreign keys say it owns."""
    account_owner = {aid: a["customer_id"] for aid, a in tables["accounts"].items()}

    def owner(row: Row) -> str:
        return row["customer_id"] if "customer_id" in row else account_owner[row["account_id"]]

    for customer_id, lists in listed.items():
        for field, ids in lists.items():
            table = OWNED_ID_LISTS[field]
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ValueError(f"customers {customer_id}: field {field!r} must be a list of ids")
            owned = sorted(i for i, row in tables[table].items() if owner(row) == customer_id)
            if sorted(ids) != owned:
                raise ValueError(f"customers {customer_id}: field {field!r} lists {sorted(ids)} but the "
                                 f"{table} rows owned by the customer are {owned}")
