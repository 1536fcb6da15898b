"""Episode isolation under load: 200 concurrent episodes on one HTTP server (127.0.0.1), each writing
its own marker; no episode ever sees another's."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from shiftbox_servers.kit import get_domain, http_server_process

pytestmark = pytest.mark.anyio
EPISODES = 200


async def test_200_concurrent_episodes_never_see_each_others_markers():
    snapshot = get_domain("echo").default_snapshot_dir()
    seen: dict[int, dict] = {}
    async with http_server_process("echo", snapshot, "--max-episodes", str(EPISODES + 10)) as base:

        async def episode(i: int) -> None:
            async with Client(f"{base}/episodes/load-{i}/mcp") as client:
                written = (await client.call_tool("put_marker", {"value": f"marker-{i}"})).structured_content
                read = (await client.call_tool("get_marker", {"marker_id": written["marker_id"]})).structured_content
                diff = json.loads((await client.read_resource("shiftbox://episode/diff")).contents[0].text)
                seen[i] = {"written": written, "read": read, "diff": diff}

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(EPISODES):
                    tg.start_soon(episode, i)
    assert len(seen) == EPISODES
    for i, got in seen.items():
        # every episode has its own counter, so every one got the same id — and its own value behind it
        assert got["written"]["marker_id"] == "mark_000001"
        assert got["read"]["value"] == f"marker-{i}"
        added = got["diff"]["markers"]["added"]
        assert [m["value"] for m in added] == [f"marker-{i}"]
