"""An episode at its size limit, and the digest of a large episode (issue 30, low items).

An episode's database may grow only so far (`GROWTH_BYTES` beyond the snapshot; SQLite's own limit in copy mode):
a write past it is the `capacity` error kind, never `internal`, and changes nothing. Reading a large episode's
digest must not hold up the other episodes the server is serving.
"""

from __future__ import annotations

from shiftbox_servers.kit import DomainServer, ErrorKind, get_domain, result_error
from tests.servers.banking.conftest import write_fixture_snapshot


def test_a_write_past_the_episodes_size_limit_is_a_capacity_error_and_changes_nothing(tmp_path):
    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    episode = server.episodes.get("full")
    pages = episode.db.execute("PRAGMA page_count").fetchone()[0]
    episode.db.execute(f"PRAGMA max_page_count = {pages}")  # the episode's database may not grow by one page
    add_payee = server.tools.specs["add_payee"]
    failed = None
    for i in range(2000):  # the free space left in its last pages fills up within a few hundred payees
        before = episode.digest()
        result = server.run_tool(add_payee, "full", {"customer_id": "cust_a", "name": f"Payee {i}"})
        if getattr(result, "is_error", False):
            failed = result
            break
    assert failed is not None, "the episode never reached its size limit"
    error = result_error(failed)
    assert error["kind"] == ErrorKind.CAPACITY == "capacity", error
    assert "size limit" in error["message"]
    assert episode.digest() == before, "the failed call changed the episode"
    other = server.run_tool(server.tools.specs["get_customer_by_phone"], "full", {"phone_number": "+15550000000"})
    assert result_error(other) is None or result_error(other)["kind"] != "capacity"  # reads still work
