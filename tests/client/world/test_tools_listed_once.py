"""An in-process world lists its server's tools once when it connects: the session checking the results' output
schemas and the world's identity check read the same listing."""

from __future__ import annotations

import pytest

from shiftbox.world import open_world
from shiftbox_servers.kit import DomainServer


@pytest.mark.anyio
async def test_an_in_process_world_lists_its_tools_once(monkeypatch):
    listings = []
    wire_tools = DomainServer.wire_tools

    def counted(self):
        listings.append(self)
        return wire_tools(self)

    monkeypatch.setattr(DomainServer, "wire_tools", counted)
    async with open_world("banking") as world:
        assert len(listings) == 1
        assert [t["name"] for t in world.tools] == [spec.name for spec in listings[0].tools]
        await world.episode("e").call("get_account", {"account_id": "acc_00001"}, call_id="c0", message_index=0,
                                      agent_turn=0)
        assert len(listings) == 1
