"""Episode databases over shared copy-on-write snapshot pages (memory figures: `make bench`, not here)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from shiftbox_servers.kit import EpisodeStore, Snapshot, get_domain
from shiftbox_servers.kit._shared_pages import MEMORY_ENV, MappedDatabase


def banking() -> Snapshot:
    return Snapshot.load(get_domain("banking").default_snapshot_dir())


def snapshot_mappings() -> int:
    return sum("shiftbox-snapshot" in line for line in Path("/proc/self/maps").read_text().splitlines())


@pytest.fixture
def shared() -> Snapshot:
    snapshot = banking()
    snapshot.open_copy().close()
    if snapshot._pages is None or snapshot._pages.problem:
        pytest.skip(f"shared snapshot pages unavailable here: {snapshot._pages and snapshot._pages.problem}")
    return snapshot


def test_episodes_map_the_shared_pages_and_unmap_them_when_dropped(shared):
    store = EpisodeStore(shared)
    before = snapshot_mappings()
    episodes = [store.get(f"e{i}") for i in range(3)]
    assert all(isinstance(e.db, MappedDatabase) for e in episodes)
    assert snapshot_mappings() == before + 3
    for e in episodes:
        store.drop(e.id)
    assert snapshot_mappings() == before


def test_writes_stay_private_and_a_database_grows_past_the_snapshot(shared):
    a, b = shared.open_copy(), shared.open_copy()
    count = "SELECT COUNT(*) FROM accounts"
    total = a.execute(count).fetchone()[0]
    a.execute("PRAGMA foreign_keys = OFF")
    a.execute("DELETE FROM transactions")
    a.execute("DELETE FROM accounts WHERE account_id NOT IN (SELECT account_id FROM cards)")
    a.execute("CREATE TABLE ballast (x BLOB)")
    a.executemany("INSERT INTO ballast VALUES (?)", [(b"x" * 4096,)] * 2500)  # ~10 MB beyond the snapshot
    assert a.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert b.execute(count).fetchone()[0] == total
    assert b.execute("SELECT COUNT(*) FROM transactions").fetchone()[0] > 0
    a.close()
    assert shared.open_copy().execute(count).fetchone()[0] == total
    with pytest.raises(sqlite3.ProgrammingError):
        a.execute(count)


def test_a_rolled_back_write_leaves_the_shared_pages_as_they_were(shared):
    db = shared.open_copy()
    account = db.execute("SELECT account_id, current_balance FROM accounts LIMIT 1").fetchone()
    db.execute("SAVEPOINT s")
    db.execute("UPDATE accounts SET current_balance = -1 WHERE account_id = ?", (account[0],))
    db.execute("ROLLBACK TO s")
    db.execute("RELEASE s")
    assert db.execute("SELECT current_balance FROM accounts WHERE account_id = ?", (account[0],)).fetchone()[0] \
        == account[1]
    db.execute("SAVEPOINT s")
    db.execute("UPDATE accounts SET current_balance = -1")
    db.close()  # closed mid-transaction: rolled back before its pages are unmapped
    assert shared.open_copy().execute("SELECT MIN(current_balance) FROM accounts").fetchone()[0] != -1


def test_copy_mode_gives_each_episode_a_private_copy(monkeypatch):
    monkeypatch.setenv(MEMORY_ENV, "copy")
    snapshot = banking()
    db = snapshot.open_copy()
    assert not isinstance(db, MappedDatabase) and snapshot._pages.problem == f"{MEMORY_ENV}=copy"
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute("DELETE FROM accounts")
    assert snapshot.open_copy().execute("SELECT COUNT(*) FROM accounts").fetchone()[0] > 0
