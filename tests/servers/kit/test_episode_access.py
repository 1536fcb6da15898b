"""Who may reach which episode: episode URLs are bound to their episode, the custom HTTP routes refuse
foreign pages (DNS rebinding), closed episodes stay closed, idle ones are evicted on a timer."""

from __future__ import annotations

import gc
import json
import weakref

import anyio
import pytest
from mcp import Client

from shiftbox_servers.kit import (
    DomainServer,
    EpisodeStore,
    get_domain,
    http_server_process,
)
from tests.servers.helpers import (
    assert_custom_routes_refuse_foreign_pages,
    call,
    fails,
    http_request,
    ok,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def echo_http():
    async with http_server_process("echo", get_domain("echo").default_snapshot_dir()) as base:
        yield base


async def test_an_episode_url_never_reaches_another_episode_through_meta(echo_http):
    base = echo_http
    async with Client(f"{base}/episodes/mine/mcp") as mine:
        err = await fails(mine, "put_marker", {"value": "intruder"}, "invalid_arguments", episode="victim")
        assert "mine" in err["message"] and "victim" in err["message"]
        with pytest.raises(Exception, match="victim"):
            await mine.read_resource("shiftbox://episode/digest", meta={"shiftbox/episode": "victim"})
        await ok(mine, "put_marker", {"value": "own"}, episode="mine")  # naming its own episode is fine
    async with Client(f"{base}/episodes/victim/mcp") as victim:
        await fails(victim, "get_marker", {"marker_id": "mark_000001"}, "not_found")  # nothing landed here
    async with Client(f"{base}/mcp") as harness:  # the plain endpoint: _meta selects (shiftbox's own client)
        assert (await ok(harness, "get_marker", {"marker_id": "mark_000001"}, episode="mine"))["value"] == "own"


async def test_custom_routes_refuse_foreign_hosts_and_origins(echo_http):
    base = echo_http
    async with Client(f"{base}/episodes/kept/mcp") as client:
        await ok(client, "put_marker", {"value": "still here"})
        assert_custom_routes_refuse_foreign_pages(base, "/episodes/kept")
        assert (await ok(client, "get_marker", {"marker_id": "mark_000001"}))["value"] == "still here"
    status, body = http_request(base + "/healthz")
    assert status == 200 and json.loads(body)["episodes"] == 1


async def test_a_deleted_episode_is_not_recreated_by_its_next_call(echo_http):
    base = echo_http
    async with Client(f"{base}/episodes/gone/mcp") as client:
        await ok(client, "put_marker", {"value": "lost"})
        status, body = http_request(f"{base}/episodes/gone", "DELETE")
        assert (status, json.loads(body)) == (200, {"dropped": True})
        err = await fails(client, "get_marker", {"marker_id": "mark_000001"}, "not_found")
        assert "'gone'" in err["message"] and "closed" in err["message"]
        with pytest.raises(Exception, match="'gone'"):
            await client.read_resource("shiftbox://episode/digest")
        status, body = http_request(f"{base}/episodes/gone", "DELETE")
        assert status == 404  # already closed
    status, body = http_request(base + "/healthz")
    assert json.loads(body)["episodes"] == 0


async def test_the_final_digest_read_closes_the_episode_for_good(echo_snapshot):
    server = DomainServer(get_domain("echo"), echo_snapshot)
    async with Client(server.mcp) as client:
        await ok(client, "put_marker", {"value": "m"}, episode="fin")
        await client.read_resource("shiftbox://episode/digest", meta={"shiftbox/episode": "fin", "shiftbox/close": True})
        err = await fails(client, "echo", {"text": "again"}, "not_found", episode="fin")
        assert "'fin'" in err["message"]


async def test_idle_episodes_are_evicted_on_a_timer_and_stay_closed(echo_snapshot):
    server = DomainServer(get_domain("echo"), echo_snapshot, idle_timeout_s=0.3)
    async with Client(server.mcp) as client:
        await ok(client, "put_marker", {"value": "idle"}, episode="sleepy")
        await ok(client, "echo", {"text": "hi"})  # the default episode lives as long as the process
        with anyio.fail_after(10):
            while "sleepy" in server.episodes:  # no new episode is created meanwhile: the timer evicts it
                await anyio.sleep(0.05)
        err = await fails(client, "get_marker", {"marker_id": "mark_000001"}, "not_found", episode="sleepy")
        assert "'sleepy'" in err["message"] and "idle" in err["message"]
        assert "default" in server.episodes
        assert not (await call(client, "echo", {"text": "still here"})).is_error


def test_closed_ids_are_remembered_within_a_bound(echo_snapshot):
    store = EpisodeStore(echo_snapshot, max_episodes=10, closed_ids_kept=3)
    for i in range(5):
        store.get(f"e{i}")
        assert store.drop(f"e{i}")
    assert len(store.closed_ids) == 3
    for i in (2, 3, 4):
        with pytest.raises(Exception, match=f"'e{i}'"):
            store.get(f"e{i}")


def test_dropping_an_episode_frees_it_and_its_database(echo_snapshot):
    store = EpisodeStore(echo_snapshot)
    episode = store.get("freed")
    db = episode.db
    ref = weakref.ref(episode)
    del episode
    assert store.drop("freed")
    gc.collect()
    assert ref() is None
    with pytest.raises(Exception, match="closed"):
        db.execute("SELECT 1")
