"""A server's tool listing (`wire_tools`) is made once: later listings are copies of it, never made again."""

from __future__ import annotations

from shiftbox_servers.kit import DomainServer, Snapshot, get_domain


def test_a_servers_tools_are_listed_once_and_handed_out_as_copies(monkeypatch):
    domain = get_domain("banking")
    server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))
    first = server.wire_tools()

    def made_again(spec):
        raise AssertionError(f"the listing of {spec.name} was made again")

    monkeypatch.setattr(server, "input_schema", made_again)
    monkeypatch.setattr(server, "tool_description", made_again)
    again = server.wire_tools()
    assert again == first and again is not first
    again[0]["inputSchema"]["properties"].clear()  # each caller's own copy, to its depth
    assert server.wire_tools() == first
