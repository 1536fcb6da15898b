"""docs/servers.md's sqlite-utils commands for inspecting a snapshot, run as written from the checkout
(`uv run sqlite-utils` is the project environment's sqlite-utils), each output checked against what
SQLite itself reads from the snapshot and the manifest's row counts, and the snapshots left as their
manifests say."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from shiftbox_servers.kit import Snapshot
from tests.conftest import REPO

PAGE = REPO / "docs" / "servers.md"
SECTION = "### Inspecting a snapshot with sqlite-utils"


def documented_commands() -> list[list[str]]:
    section = PAGE.read_text().split(SECTION, 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def run_as_written(args: list[str]) -> str:
    """The command's output. The `sqlite-utils` script installed beside this interpreter runs
    `sqlite_utils.cli:cli`; it is called here in-process, as the script would, because each start of the
    script costs seconds of imports (pandas, when installed)."""
    from click.testing import CliRunner
    from sqlite_utils.cli import cli

    assert args[:3] == ["uv", "run", "sqlite-utils"], args
    assert Path(sys.executable).with_name("sqlite-utils").is_file()
    with contextlib.chdir(REPO):  # the page's paths are relative to the checkout
        result = CliRunner().invoke(cli, args[3:], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def read(path: str, sql: str) -> list[dict]:
    """Rows of `sql` read straight from the file, opened read-only."""
    with sqlite3.connect(f"file:{REPO / path}?mode=ro", uri=True) as db:
        cur = db.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]


def options(args: list[str]) -> dict[str, str | bool]:
    """`--name value` pairs and `--flag`s of a command line (every option the page uses takes at most one value)."""
    found: dict[str, str | bool] = {}
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else True
            found[arg[2:]] = value
    return found


def expected_tables(path: str, opts: dict) -> list[dict]:
    assert opts == {"counts": True}
    names = [r["name"] for r in read(path, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    counts = {n: read(path, f'SELECT COUNT(*) AS n FROM "{n}"')[0]["n"] for n in names}
    return [{"table": n, "count": counts[n]} for n in names]


def expected_rows(path: str, table: str, opts: dict) -> list[dict]:
    assert set(opts) <= {"where", "order", "limit", "json-cols"}
    sql = f'SELECT * FROM "{table}"'
    sql += f" WHERE {opts['where']}" if "where" in opts else ""
    sql += f" ORDER BY {opts['order']}" if "order" in opts else ""
    sql += f" LIMIT {int(opts['limit'])}" if "limit" in opts else ""
    rows = read(path, sql)
    if "json-cols" in opts:
        rows = [{k: _json_or_text(v) for k, v in row.items()} for row in rows]
    return rows


def _json_or_text(value):
    if isinstance(value, str) and value[:1] in "[{":
        return json.loads(value)
    return value


@pytest.fixture(scope="module")
def outputs() -> list[tuple[list[str], str]]:
    """Each documented command line and what it printed (run once: each start of the CLI costs seconds)."""
    found = documented_commands()
    assert {args[3] for args in found} == {"tables", "schema", "rows", "query"}
    return [(args, run_as_written(args)) for args in found]


def test_the_documented_commands_print_what_the_snapshot_holds(outputs):
    for args, out in outputs:
        command, path, rest = args[3], args[4], args[5:]
        if command == "tables":
            got = json.loads(out)
            assert got == expected_tables(path, options(rest))
            counts = {r["table"]: r["count"] for r in got}
            assert counts.pop("_shiftbox_changes") == 0  # the change log, empty in a snapshot
            assert counts == Snapshot.load((REPO / path).parent).manifest.row_counts
        elif command == "schema":
            (table,) = rest
            sql = read(path, f"SELECT sql FROM sqlite_master WHERE name = '{table}'")[0]["sql"]
            assert out.strip() == sql.strip()
        elif command == "rows":
            got = json.loads(out)
            assert got == expected_rows(path, rest[0], options(rest[1:])) and got, args
        else:
            (sql,) = rest
            got = json.loads(out)
            assert got == read(path, sql) and got, args


def test_the_commands_leave_the_snapshots_as_their_manifests_say(outputs):
    for directory in {(REPO / args[4]).parent for args, _ in outputs}:
        Snapshot.load(directory)  # raises SnapshotError if the file's sha256 no longer matches its manifest
