"""The episode clock moves only with writes that took effect: reads, rejected calls (tool-level and
schema-level), crashed calls and calls that change nothing leave time, and so the state digest, alone."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from mcp import Client
from pydantic import BaseModel

from shiftbox_servers.kit import (
    Conflict,
    Domain,
    DomainServer,
    Episode,
    Snapshot,
    ToolSet,
    get_domain,
    text,
)
from shiftbox_servers.kit.echo import build_snapshot
from tests.servers.helpers import digest, fails, ok

pytestmark = pytest.mark.anyio

MINUTE = timedelta(minutes=1)

tools = ToolSet()


class Stamped(BaseModel):
    marker_id: str
    written_at: str


class Now(BaseModel):
    now: str


class Done(BaseModel):
    ok: bool


@tools.tool(read_only=False)
def stamp(ep: Episode, value: text("marker value", max_length=200)) -> Stamped:
    """Store a marker stamped with the episode's time."""
    marker_id = ep.next_id("markers", "marker_id", "mark")
    ep.execute("INSERT INTO markers VALUES (?, ?, ?)", (marker_id, value, ep.now_iso()))
    return Stamped(marker_id=marker_id, written_at=ep.now_iso())


@tools.tool(read_only=True)
def look(ep: Episode) -> Now:
    """Read the episode's time (and nothing else)."""
    return Now(now=ep.now_iso())


@tools.tool(read_only=False)
def stamp_then_refuse(ep: Episode) -> Done:
    """Write a row, then fail: the write is rolled back."""
    ep.execute("INSERT INTO markers VALUES ('mark_doomed', 'doomed', ?)", (ep.now_iso(),))
    raise Conflict("refused after writing")


@tools.tool(read_only=False)
def stamp_then_crash(ep: Episode) -> Done:
    """Write a row, then crash (an internal error): the write is rolled back."""
    ep.execute("INSERT INTO markers VALUES ('mark_crash', 'crash', ?)", (ep.now_iso(),))
    raise RuntimeError("bug")


@tools.tool(read_only=False, idempotent=True)
def touch_nothing(ep: Episode, marker_id: text("a marker id", max_length=50)) -> Done:
    """A write tool whose UPDATE matches no row: a successful call that changes nothing."""
    ep.execute("UPDATE markers SET value = value WHERE marker_id = ?", (marker_id,))
    return Done(ok=True)


DOMAIN = Domain(name="clocktest", tools=tools, policy="Test domain for the episode clock.",
                goal_tools={"stamps": ("stamp",)}, snapshot_version="v1", build_snapshot=build_snapshot)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory) -> Snapshot:
    directory = tmp_path_factory.mktemp("clocktest")
    build_snapshot(directory)
    return Snapshot.load(directory)


@pytest.fixture
async def server_and_client(snapshot):
    server = DomainServer(DOMAIN, snapshot)
    async with Client(server.mcp) as client:
        yield server, client


async def harmless(client: Client, episode: str) -> None:
    """Every kind of call that must leave the state alone."""
    await ok(client, "look", {}, episode=episode)                                        # a read
    await fails(client, "stamp_then_refuse", {}, "conflict", episode=episode)            # tool-level rejection
    await fails(client, "stamp", {"value": "x", "extra": 1}, "invalid_arguments", episode=episode)  # schema
    await fails(client, "stamp", {"value": 5}, "invalid_arguments", episode=episode)     # schema: wrong type
    await fails(client, "no_such_tool", {}, "unknown_tool", episode=episode)
    await fails(client, "stamp_then_crash", {}, "internal", episode=episode)
    await ok(client, "touch_nothing", {"marker_id": "mark_missing"}, episode=episode)    # a write of nothing


async def test_harmless_calls_between_the_same_writes_give_the_same_digest(server_and_client):
    _, client = server_and_client
    writes = [{"value": "first"}, {"value": "second"}, {"value": "third"}]
    for value in writes:
        await ok(client, "stamp", value, episode="plain")
    await harmless(client, "noisy")
    for value in writes:
        await harmless(client, "noisy")
        await ok(client, "stamp", value, episode="noisy")
        await harmless(client, "noisy")
    assert await digest(client, "noisy") == await digest(client, "plain")


async def test_a_write_is_stamped_with_start_plus_its_position_among_the_writes(server_and_client):
    server, client = server_and_client
    start = server.snapshot.manifest.clock_start
    for n in range(1, 4):
        await harmless(client, "t")
        assert (await ok(client, "look", {}, episode="t"))["now"] == (start + n * MINUTE).isoformat()
        written = await ok(client, "stamp", {"value": f"v{n}"}, episode="t")
        assert written["written_at"] == (start + n * MINUTE).isoformat()
    res = await client.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "t"})
    added = json.loads(res.contents[0].text)["markers"]["added"]
    assert [row["written_at"] for row in added] == [(start + n * MINUTE).isoformat() for n in (1, 2, 3)]


async def test_a_rejected_call_leaves_no_row_and_no_time_behind(server_and_client):
    _, client = server_and_client
    fresh = await digest(client, "r")
    await harmless(client, "r")
    assert await digest(client, "r") == fresh
    res = await client.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "r"})
    assert json.loads(res.contents[0].text) == {}


async def test_echo_domain_reads_and_failed_lookups_do_not_move_time(tmp_path):
    """The same property on a registered domain's own tools (echo: put_marker / get_marker / echo)."""
    domain = get_domain("echo")
    domain.build_snapshot(tmp_path)
    server = DomainServer(domain, Snapshot.load(tmp_path))
    start = server.snapshot.manifest.clock_start
    async with Client(server.mcp) as client:
        first = await ok(client, "put_marker", {"value": "1"}, episode="e")
        await ok(client, "echo", {"text": "tick"}, episode="e")
        await ok(client, "get_marker", {"marker_id": first["marker_id"]}, episode="e")
        await fails(client, "get_marker", {"marker_id": "mark_999999"}, "not_found", episode="e")
        await fails(client, "put_marker", {"value": "2", "note": "urgent"}, "invalid_arguments", episode="e")
        second = await ok(client, "put_marker", {"value": "2"}, episode="e")
    assert first["written_at"] == (start + MINUTE).isoformat()
    assert second["written_at"] == (start + 2 * MINUTE).isoformat()
