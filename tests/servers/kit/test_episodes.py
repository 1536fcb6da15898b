"""Episodes: isolation, determinism, the clock, capacity, drop and the state resources."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer, EpisodeStore, get_domain
from tests.servers.helpers import call, digest, fails, ok

pytestmark = pytest.mark.anyio


@pytest.fixture
async def echo(echo_snapshot):
    server = DomainServer(get_domain("echo"), echo_snapshot, max_episodes=3)
    async with Client(server.mcp) as client:
        yield server, client


async def test_episodes_never_see_each_others_writes(echo):
    _, client = echo
    a = await ok(client, "put_marker", {"value": "only-in-a"}, episode="a")
    await fails(client, "get_marker", {"marker_id": a["marker_id"]}, "not_found", episode="b")
    assert (await ok(client, "get_marker", {"marker_id": a["marker_id"]}, episode="a"))["value"] == "only-in-a"


async def test_same_calls_in_same_order_give_identical_results(echo):
    _, client = echo
    seq = [("put_marker", {"value": "x"}), ("put_marker", {"value": "y"}), ("get_marker", {"marker_id": "mark_000002"})]
    runs = []
    for episode in ("d1", "d2"):
        runs.append([(await call(client, t, a, episode)).model_dump_json() for t, a in seq])
        runs[-1].append(await digest(client, episode))
    assert runs[0] == runs[1]


async def test_clock_starts_at_manifest_and_advances_per_write(echo):
    server, client = echo
    start = server.snapshot.manifest.clock_start
    first = await ok(client, "put_marker", {"value": "1"}, episode="clk")
    await ok(client, "echo", {"text": "tick"}, episode="clk")      # a read: the clock stays
    second = await ok(client, "put_marker", {"value": "2"}, episode="clk")
    assert first["written_at"] == start.replace(minute=start.minute + 1).isoformat()
    assert second["written_at"] == start.replace(minute=start.minute + 2).isoformat()


async def test_state_digest_and_diff_resources(echo):
    _, client = echo
    fresh = await digest(client, "r")
    await ok(client, "put_marker", {"value": "m"}, episode="r")
    assert await digest(client, "r") != fresh
    res = await client.read_resource("shiftbox://episode/diff", meta={"shiftbox/episode": "r"})
    diff = json.loads(res.contents[0].text)
    assert diff == {"markers": {"added": [{"marker_id": "mark_000001", "value": "m",
                                            "written_at": "2025-01-01T00:01:00"}],
                                "changed": [], "removed": []}}


async def test_episode_capacity_is_a_clear_kinded_error(echo):
    server, client = echo
    for name in ("c1", "c2", "c3"):
        await ok(client, "echo", {"text": "hi"}, episode=name)
    err = await fails(client, "echo", {"text": "hi"}, "capacity", episode="c4")
    assert "3 episodes" in err["message"] and "--max-episodes" in err["message"]
    assert server.episodes.drop("c1")
    await ok(client, "echo", {"text": "hi"}, episode="c4")


async def test_dropped_episode_is_never_silently_reopened(echo):
    server, client = echo
    await ok(client, "put_marker", {"value": "gone"}, episode="z")
    server.episodes.drop("z")
    err = await fails(client, "echo", {"text": "hi"}, "not_found", episode="z")
    assert "episode 'z' is closed" in err["message"]
    await fails(client, "get_marker", {"marker_id": "mark_000001"}, "not_found", episode="z2")  # a new id starts fresh


async def test_invalid_episode_id_is_rejected(echo):
    _, client = echo
    await fails(client, "echo", {"text": "hi"}, "invalid_arguments", episode="../etc/passwd")


def test_idle_episodes_are_evicted(echo_snapshot):
    store = EpisodeStore(echo_snapshot, max_episodes=10, idle_timeout_s=0.0)
    store.get("old")
    store.get("new")  # creating one sweeps every episode idle longer than the timeout
    assert "old" not in store and "new" in store


async def test_snapshot_file_is_never_written(echo, echo_snapshot):
    import hashlib

    _, client = echo
    await ok(client, "put_marker", {"value": "w"}, episode="w")
    data = (echo_snapshot.directory / "db.sqlite").read_bytes()
    assert hashlib.sha256(data).hexdigest() == echo_snapshot.manifest.sha256


def test_generated_ids_continue_after_existing_ones():
    """Regression: ids were found by probing one candidate at a time (~15k queries on the native snapshot)."""
    import sqlite3

    from shiftbox_servers.kit._clock import IdCounters

    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY)")
    db.executemany("INSERT INTO t VALUES (?)", [("tx_000009",), ("tx_000123",), ("tx_abc",), ("tx_12x",),
                                                ("other_999999",)])
    ids = IdCounters()
    assert ids.next_id(db, "t", "id", "tx") == "tx_000124"
    assert ids.next_id(db, "t", "id", "tx") == "tx_000125"
    assert ids.next_id(db, "t", "id", "disp") == "disp_000001"


async def test_final_digest_read_with_close_flag_drops_the_episode(echo):
    server, client = echo
    await ok(client, "put_marker", {"value": "m"}, episode="fin")
    assert "fin" in server.episodes
    res = await client.read_resource("shiftbox://episode/digest",
                                     meta={"shiftbox/episode": "fin", "shiftbox/close": True})
    assert json.loads(res.contents[0].text)["tool_calls"] == 1
    assert "fin" not in server.episodes


def test_serving_an_episode_never_imports_sqlite_utils():
    """sqlite-utils builds and inspects snapshots; importing it costs seconds (it imports pandas and numpy
    when installed), so a server's start, tool calls and diffs must not load it."""
    import subprocess
    import sys

    code = (
        "import sys, asyncio\n"
        "from mcp import Client\n"
        "from shiftbox_servers.kit import DomainServer, Snapshot, get_domain\n"
        "domain = get_domain('echo')\n"
        "server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))\n"
        "async def main():\n"
        "    async with Client(server.mcp) as client:\n"
        "        await client.call_tool('put_marker', {'value': 'x'})\n"
        "        await client.read_resource('shiftbox://episode/diff')\n"
        "        await client.read_resource('shiftbox://episode/digest')\n"
        "asyncio.run(main())\n"
        "print('sqlite_utils' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_heap_is_trimmed_once_per_open_episodes_worth_of_drops(echo_snapshot, monkeypatch):
    """Regression: every drop trimmed the heap (`malloc_trim` walks all of it, so its cost grows with the episodes
    open): 256 simulations in flight paid 0.7 ms per drop against 0.13 ms at 8. Now a trim follows as many drops as
    episodes stay open (at least one), so trimming costs the same per drop whatever the number open, and the drop
    that empties the store still gives the memory back."""
    from shiftbox_servers.kit import _episode

    trims = []
    monkeypatch.setattr(_episode, "trim_heap", lambda: trims.append(len(store)))
    opened = 64
    store = EpisodeStore(echo_snapshot, max_episodes=100)
    for i in range(opened):
        store.get(f"e{i}")
    for i in range(640):  # steady state: one dropped, one opened; 63 stay open at each drop
        store.drop(f"e{i}")
        store.get(f"e{i + opened}")
    assert len(trims) == 640 // 63
    trims.clear()
    store = EpisodeStore(echo_snapshot, max_episodes=100)
    for i in range(opened):
        store.get(f"e{i}")
    for i in range(opened):  # the store empties: a trim at 32, 16, 8, 4, 2, 1 and 0 left open
        store.drop(f"e{i}")
    assert trims == [32, 16, 8, 4, 2, 1, 0]


class StepClock:
    """A stand-in for `time` in the episode module: `monotonic()` reads `now`, which the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    from shiftbox_servers.kit import _episode

    steps = StepClock()
    monkeypatch.setattr(_episode, "time", steps)
    return steps


def test_which_idle_episodes_are_evicted_and_when(echo_snapshot, clock):
    """Eviction runs when an episode is created (and on the server's timer, `evict_idle`): it drops every episode,
    the default one excepted, last used strictly more than `idle_timeout_s` before, in the order they were opened;
    using an episode (a `get`) restarts its idle time; a `get` of an open, invalid or closed id evicts nothing."""
    idle = "evicted after more than 10 s idle"
    store = EpisodeStore(echo_snapshot, max_episodes=100, idle_timeout_s=10.0)
    for name in ("default", "a", "b", "c", "d"):  # opened at 1000, 1001, 1002, 1003, 1004
        store.get(name)
        clock.now += 1
    clock.now = 1008.0
    store.get("b")  # b used again at 1008 (opened before c and d, now used after them)
    clock.now = 1020.0
    store.get("a")  # an open episode: no sweep, though a, b, c and d have been idle more than 10 s
    store.get("default")
    assert set(store._episodes) == {"default", "a", "b", "c", "d"}
    with pytest.raises(Exception, match="invalid episode id"):
        store.get("../x")  # refused before any sweep
    assert len(store) == 5
    clock.now = 1023.0  # cutoff 1013: c (1003) and d (1004) idle; b (1008) idle too; a and default used at 1020
    store.get("e")
    assert list(store.closed_ids.items()) == [("b", idle), ("c", idle), ("d", idle)]  # in the order they opened
    assert set(store._episodes) == {"default", "a", "e"}
    clock.now = 1030.0  # cutoff exactly a's last use (1020): not idle "for longer than" the timeout
    store.get("f")
    assert set(store._episodes) == {"default", "a", "e", "f"}
    clock.now = 1031.0
    assert store.evict_idle() == 1  # the timer's sweep: a (1020) only
    assert list(store.closed_ids) == ["b", "c", "d", "a"]
    clock.now = 5000.0  # everything idle: all but the default episode go, in the order they opened
    store.get("g")
    assert list(store.closed_ids) == ["b", "c", "d", "a", "e", "f"]
    assert set(store._episodes) == {"default", "g"}
    with pytest.raises(Exception, match="'e' is closed"):
        store.get("e")


def test_a_sweep_frees_room_before_the_capacity_check(echo_snapshot, clock):
    store = EpisodeStore(echo_snapshot, max_episodes=2, idle_timeout_s=10.0)
    store.get("a")
    clock.now += 5
    store.get("b")
    with pytest.raises(Exception, match="already holds 2 episodes"):
        store.get("c")  # nothing idle yet
    clock.now += 6  # a idle 11 s, b 6 s
    store.get("c")
    assert set(store._episodes) == {"b", "c"} and list(store.closed_ids) == ["a"]



def test_creating_an_episode_looks_at_the_idle_ones_only(echo_snapshot, clock, monkeypatch):
    """Regression: each creation walked every open episode for idle ones (about 20 ms at 256 simulations in flight
    for 520 simulations). Now it looks at the episodes it evicts and at most two more (the first one in use, and an
    idle default episode, which is never evicted)."""
    from shiftbox_servers.kit import _episode

    class Counted(_episode.Episode):
        looked = 0

        @property
        def last_used(self) -> float:
            Counted.looked += 1
            return self._last_used

        @last_used.setter
        def last_used(self, value: float) -> None:
            self._last_used = value

    monkeypatch.setattr(_episode, "Episode", Counted)
    store = EpisodeStore(echo_snapshot, max_episodes=1000, idle_timeout_s=10.0)
    store.get("default")
    for i in range(256):
        store.get(f"e{i}")
    Counted.looked = 0
    for i in range(256, 356):  # the harness's steady state: one simulation ends, another starts
        store.drop(f"e{i - 256}")
        store.get(f"e{i}")
    assert Counted.looked <= 2 * 100
    clock.now += 11  # all idle now: the next creation evicts 256 (the default episode stays)
    Counted.looked = 0
    store.get("late")
    assert len(store) == 2 and Counted.looked <= 256 + 2
