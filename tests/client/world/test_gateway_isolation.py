"""The recording gateway keeps its clients apart: a run's episode URLs are unguessable tokens bound to one
simulation, `_meta` never selects an episode, the custom routes refuse foreign pages (DNS rebinding),
and an ended `shiftbox serve` session is not silently reopened."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp_types import CallToolResult

from shiftbox.trajectory import read_trajectories
from shiftbox.world import open_run_gateway, open_world
from shiftbox_servers.kit import ErrorKind, error_result, result_error
from tests.servers.helpers import assert_custom_routes_refuse_foreign_pages, http_request

SHIFTBOX = [sys.executable, "-m", "shiftbox.cli"]
PHONE = {"phone_number": "+15558562432"}


@pytest.mark.anyio
async def test_run_gateway_urls_are_unguessable_and_bound_to_their_episode():
    reached: list[tuple[str, str]] = []

    def route(owner: str):
        async def call(name: str, arguments: dict) -> CallToolResult:
            reached.append((owner, name))
            return error_result(ErrorKind.NOT_FOUND, "test route")
        return call

    async with open_world("banking") as world, open_run_gateway(world) as gateway:
        links = {episode: gateway.link(episode) for episode in ("rtag.task.0", "rtag.task.1")}
        for episode, link in links.items():
            link.attach(route(episode))
            token = link.url.removeprefix(gateway.base_url + "/episodes/").removesuffix("/mcp")
            assert episode not in link.url and len(token) >= 32, link.url
        mine, other = links["rtag.task.0"].url, links["rtag.task.1"].url
        async with Client(mine) as client:
            await client.call_tool("get_customer_by_phone", PHONE)
            refused = await client.call_tool("get_customer_by_phone", PHONE,
                                             meta={"shiftbox/episode": "rtag.task.1"})
            assert refused.is_error and "shiftbox/episode" in result_error(refused)["message"]
        for guess in ("rtag.task.1", other.rsplit("/", 2)[-2][:-1] + "A"):
            async with Client(f"{gateway.base_url}/episodes/{guess}/mcp") as client:
                missed = await client.call_tool("get_customer_by_phone", PHONE)
                assert missed.is_error and result_error(missed)["kind"] == "not_found"
        async with Client(f"{gateway.base_url}/mcp") as client:
            missed = await client.call_tool("get_customer_by_phone", PHONE, meta={"shiftbox/episode": "rtag.task.1"})
            assert missed.is_error
        assert gateway.link("rtag.task.0").url != mine  # a fresh token per link; the old URL is dead
        async with Client(mine) as client:
            assert (await client.call_tool("get_customer_by_phone", PHONE)).is_error
    assert reached == [("rtag.task.0", "get_customer_by_phone")]


def serve_http(out: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([*SHIFTBOX, "serve", "--domain", "banking", "--port", "0", "--out", str(out)],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    if not found:
        proc.kill()
        raise AssertionError(f"serve did not start: {line}{proc.stderr.read()}")
    return proc, found.group(0)


@pytest.mark.anyio
async def test_serve_gateway_refuses_foreign_pages_and_never_reopens_an_ended_session(tmp_path):
    out = tmp_path / "desk"
    proc, base = serve_http(out)
    try:
        async with Client(f"{base}/episodes/alice/mcp") as alice:
            assert not (await alice.call_tool("get_customer_by_phone", PHONE)).is_error
            refused = await alice.call_tool("get_customer_by_phone", PHONE, meta={"shiftbox/episode": "bob"})
            assert refused.is_error
            assert_custom_routes_refuse_foreign_pages(base, "/episodes/alice")
            assert read_trajectories(out) == []  # alice's session is still open
            status, body = http_request(f"{base}/episodes/alice", "DELETE")
            assert (status, json.loads(body)) == (200, {"ended": True})
            again = await alice.call_tool("get_customer_by_phone", PHONE)
            assert again.is_error and "'alice'" in result_error(again)["message"]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    [alice] = read_trajectories(out)
    assert [c.name for c in alice.tool_calls] == ["get_customer_by_phone"]
