"""A full disk under `shiftbox run` and `shiftbox serve` (issue 30 item 6): a record that cannot be written is a
named error, nothing is recorded that did not happen, and what did happen stays recorded and resumable."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.errors import RecordWriteError
from shiftbox.serve import open_session_task, serve_sessions
from shiftbox.trajectory import read_trajectories
from shiftbox_servers.kit import get_domain
from tests.client.full_disk import FullDisk
from tests.client.harness import HANDWRITTEN

runner = CliRunner()


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> FullDisk:
    return FullDisk(monkeypatch)


def run_cli(out, *extra: str):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                               "--concurrency", "1", *extra])


def canonical(run_dir) -> dict[str, str]:
    return {t.simulation_id: t.canonical_json() for t in read_trajectories(run_dir)}


def test_a_full_disk_stops_a_run_with_a_named_error_and_the_run_resumes(tmp_path, disk):
    out = tmp_path / "r"
    disk.fill(out / "trajectories.jsonl", after=2)  # two simulations are written, then the disk is full
    res = run_cli(out)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert "error:" in res.output and "No space left on device" in res.output
    assert "trajectories.jsonl" in res.output and "--resume" in res.output
    data = (out / "trajectories.jsonl").read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 2, "a line that failed to be written was kept"
    assert len(read_trajectories(out)) == 2
    disk.free()
    res = run_cli(out, "--resume")
    assert res.exit_code == 0, res.output
    assert run_cli(tmp_path / "whole").exit_code == 0
    assert canonical(out) == canonical(tmp_path / "whole")  # as if the disk had never filled


# -- shiftbox serve ----------------------------------------------------------------------------------------------

PHONE = {"phone_number": "+15558562432"}
PAY = {"request_id": "req_00002"}


@contextlib.asynccontextmanager
async def serving(out: Path) -> AsyncIterator[str]:
    """`shiftbox serve --domain banking --out OUT --port 0` in this process (so its disk can be filled); yields the
    base URL; leaving stops it with SIGINT (every open session written)."""
    out.mkdir()
    lines: list[str] = []
    snapshot = get_domain("banking").default_snapshot_dir()
    async with anyio.create_task_group() as tg:
        tg.start_soon(functools.partial(serve_sessions, "banking", "inproc", snapshot, open_session_task("banking"),
                                        out, "http", 0, lines.append))
        with anyio.fail_after(30):
            while not any("http://" in line for line in lines):
                await anyio.sleep(0.01)
        yield re.search(r"http://127\.0\.0\.1:\d+", next(x for x in lines if "http://" in x)).group(0)
        os.kill(os.getpid(), signal.SIGINT)  # to serve's own signal receiver, open while it serves


@pytest.mark.anyio
async def test_a_call_serve_cannot_record_is_refused_by_name_and_never_happened(tmp_path, disk):
    out = tmp_path / "desk"
    async with serving(out) as base:
        async with Client(f"{base}/episodes/alice/mcp") as alice, Client(f"{base}/episodes/bob/mcp") as bob:
            assert not (await alice.call_tool("get_customer_by_phone", PHONE)).is_error
            disk.fill(out / "calls.jsonl")
            with pytest.raises(MCPError) as refused:
                await alice.call_tool("make_payment", PAY)
            assert refused.value.code != INTERNAL_ERROR
            assert "No space left on device" in refused.value.message and "calls.jsonl" in refused.value.message
            assert "not recorded" in refused.value.message
            disk.free()
            paid = await alice.call_tool("make_payment", PAY)  # the refused payment did not happen: this one settles
            assert not paid.is_error and paid.structured_content["status"] == "Settled", paid
            for name, arguments in (("get_customer_by_phone", PHONE), ("make_payment", PAY)):
                assert not (await bob.call_tool(name, arguments)).is_error
        disk.fill(out / "trajectories.jsonl")
        async with httpx.AsyncClient() as http:
            ended = await http.delete(f"{base}/episodes/alice", timeout=10)
        assert ended.status_code == 507, ended.text  # Insufficient Storage, not a bare 500
        assert "No space left on device" in ended.json()["error"]
        assert read_trajectories(out) == []
        disk.free()
    trajectories = {t.source_data["gateway_episode"]: t for t in read_trajectories(out)}
    alice, bob = trajectories["alice"], trajectories["bob"]  # alice's written once the disk had room again
    assert [(c.name, c.is_error) for c in alice.tool_calls] == [("get_customer_by_phone", False),
                                                                ("make_payment", False)]
    logged: dict[str, list[dict]] = {}
    for line in (out / "calls.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "record" in entry:
            logged.setdefault(entry["episode"], []).append(entry["record"])
    assert [(r["name"], r["result"]) for r in logged["alice"]] == [(c.name, c.result) for c in alice.tool_calls]
    assert [r["name"] for r in logged["bob"]] == ["get_customer_by_phone", "make_payment"]
    assert (out / "calls.jsonl").read_bytes().endswith(b"\n"), "a torn line was left in calls.jsonl"
    # the same successful calls in the same order: the same final state (the refused payment left no trace)
    assert alice.final_state["banking"] == bob.final_state["banking"]


async def mcp_post(http: httpx.AsyncClient, url: str, body: dict, session: str | None = None) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if session:
        headers["Mcp-Session-Id"] = session
    return await http.post(url, json=body, headers=headers, timeout=10)


@pytest.mark.anyio
async def test_a_session_serve_cannot_open_or_close_on_a_full_disk_is_a_named_error(tmp_path, disk):
    out = tmp_path / "desk"
    with pytest.raises(ExceptionGroup) as stopped:
        async with serving(out) as base, httpx.AsyncClient() as http:
            await open_and_close_on_a_full_disk(base, http, out, disk)
    # still full at shutdown: a named error (exit 2 from the command), and the session stays in calls.jsonl for
    # the next launch to rebuild
    assert stopped.group_contains(RecordWriteError, match="1 ended sessions are not written .*No space left")
    [opened_line, call_line] = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert opened_line["opened"] == "carol" and call_line["record"]["name"] == "get_customer_by_phone"
    assert (out / "trajectories.jsonl").read_bytes() == b""


async def open_and_close_on_a_full_disk(base: str, http: httpx.AsyncClient, out: Path, disk: FullDisk) -> None:
    url = f"{base}/episodes/carol/mcp"
    opened = await mcp_post(http, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    session = opened.headers["mcp-session-id"]
    await mcp_post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_customer_by_phone", "arguments": PHONE}}
    disk.fill(out / "calls.jsonl")  # the session's first line cannot be written: no session, no call
    refused = (await mcp_post(http, url, call, session)).json()
    assert refused["error"]["code"] not in (INTERNAL_ERROR, 0), refused
    assert "not recorded" in refused["error"]["message"] and "calls.jsonl" in refused["error"]["message"]
    assert (out / "calls.jsonl").read_bytes() == b""
    disk.free()
    assert not (await mcp_post(http, url, call, session)).json()["result"]["isError"]
    disk.fill(out / "trajectories.jsonl")
    closed = await http.delete(url, headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})
    assert closed.status_code == 507, closed.text  # the standard MCP session close: not a bare 500
    assert "trajectories.jsonl" in closed.json()["error"]
