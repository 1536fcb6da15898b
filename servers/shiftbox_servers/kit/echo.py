"""A minimal domain for transport tests and benchmarks: `echo` is MCP's own cost, `put_marker` the
smallest real write. Comparing a domain tool with `echo` on one transport measures the sandbox."""

from __future__ import annotations

from datetime import datetime
from importlib.metadata import version
from pathlib import Path

from pydantic import BaseModel

from ._domain import Domain
from ._episode import Episode
from ._errors import NotFound
from ._graph import conditions, dependency_graph
from ._snapshot import SnapshotManifest, new_database, write_snapshot
from ._tools import ToolSet
from ._types import identifier, text

tools = ToolSet()


class Echo(BaseModel):
    text: str


class Marker(BaseModel):
    marker_id: str
    value: str
    written_at: str


@tools.tool(read_only=True)
def echo(ep: Episode, text: text("any text", max_length=10_000)) -> Echo:
    """Return the text unchanged (touches no state)."""
    return Echo(text=text)


@tools.tool(read_only=False)
def put_marker(ep: Episode, value: text("marker value", max_length=200)) -> Marker:
    """Store a marker in this episode and return it with its generated id."""
    marker_id = ep.next_id("markers", "marker_id", "mark")
    ep.execute("INSERT INTO markers VALUES (?, ?, ?)", (marker_id, value, ep.now_iso()))
    return Marker(marker_id=marker_id, value=value, written_at=ep.now_iso())


@tools.tool(read_only=True)
def get_marker(ep: Episode, marker_id: identifier("id returned by put_marker")) -> Marker:
    """Read a marker of this episode."""
    row = ep.query_one("SELECT * FROM markers WHERE marker_id = ?", (marker_id,))
    if row is None:
        raise NotFound(f"no marker with id {marker_id!r}", field="marker_id")
    return Marker(**dict(row))


def build_snapshot(directory: Path) -> SnapshotManifest:
    db = new_database("CREATE TABLE markers (marker_id TEXT PRIMARY KEY, value TEXT NOT NULL, written_at TEXT NOT NULL)")
    db["markers"].insert({"marker_id": "mark_seed", "value": "seed", "written_at": "2025-01-01T00:00:00"})
    return write_snapshot(
        db, directory, domain="echo", snapshot_version="v1", schema_version=1,
        server_version=version("shiftbox-servers"), source="kit echo builder",
        clock_start=datetime(2025, 1, 1, 0, 0, 0),
    )


DOMAIN = Domain(
    name="echo",
    tools=tools,
    dependency_graph=dependency_graph({}, {
        "echo": conditions("the same text is returned; nothing changed"),
        "put_marker": conditions("a marker with the value exists in this episode; its id is returned"),
        "get_marker": conditions("the marker's value and time are known", pre="the marker id is known",
                                 after=["put_marker"]),
    }),
    policy="Test domain: echo text and store markers.",
    goal_tools={"echo": ("echo",), "markers": ("put_marker", "get_marker")},
    snapshot_version="v1",
    build_snapshot=build_snapshot,
)
