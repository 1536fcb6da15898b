"""The world reads one shape of a tools/call result whatever the transport: the session `_connect` picks (the kit's
in process, the SDK's client over stdio) hands it the result's wire dict, and the records and the MCP result rebuilt
from them (`client_result`) are the same on both."""

from __future__ import annotations

import pytest

from shiftbox.world import open_world
from shiftbox.world._world import client_result

CALLS = [("get_account", {"account_id": "acc_00001"}), ("get_account", {"account_id": "acc_99999"}),
         ("get_account", {"account_id": 5}), ("no_such_tool", {})]


async def recorded(mode: str) -> list[tuple]:
    async with open_world("banking", servers=mode) as world:
        episode = world.episode(f"shape-{mode}")
        records = [await episode.call(name, arguments, call_id=f"c{i}", message_index=i, agent_turn=i)
                   for i, (name, arguments) in enumerate(CALLS)]
        digest = await episode.close()
    assert all(isinstance(r._client_result, dict) for r in records), mode  # one shape: the wire dict
    return [(r.result, r.is_error, r.error_kind,
             client_result(r).model_dump(mode="json", by_alias=True, exclude_none=True)) for r in records] + [digest]


@pytest.mark.anyio
async def test_in_process_and_over_stdio_the_world_records_the_same_from_the_same_shape():
    in_process, over_stdio = await recorded("inproc"), await recorded("stdio")
    assert [r[1:3] for r in in_process[:-1]] == [(False, None), (True, "not_found"), (True, "invalid_arguments"),
                                                 (True, "unknown_tool")]
    assert in_process == over_stdio
