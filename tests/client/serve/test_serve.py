"""`shiftbox serve`: the recording gateway for any MCP client; sessions become trajectories metrics score."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import score_run
from shiftbox.trajectory import read_trajectories
from shiftbox_servers.kit import result_error
from tests.client.harness import HANDWRITTEN

SHIFTBOX = [sys.executable, "-m", "shiftbox.cli"]
TASK = "hw_banking_003"  # gold: get_customer_by_phone, make_payment(req_00002), get_accounts(cust_0004)
PHONE = {"phone_number": "+15558562432"}
PAY = {"request_id": "req_00002"}


def serve_http(out: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([*SHIFTBOX, "serve", "--domain", "banking", "--port", "0", "--out", str(out), *extra],
                            stderr=subprocess.PIPE, text=True)
    lines = []
    for _ in range(5):  # the URL line (after a note on sessions rebuilt, if any)
        lines.append(proc.stderr.readline())
        found = re.search(r"http://127\.0\.0\.1:\d+", lines[-1])
        if found:
            return proc, found.group(0)
    proc.kill()
    raise AssertionError(f"serve did not start: {''.join(lines)}{proc.stderr.read()}")


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    return proc.stderr.read()


@pytest.mark.anyio
async def test_http_sessions_get_fresh_databases_and_are_scored_as_trajectories(tmp_path):
    out = tmp_path / "desk"
    proc, base = serve_http(out, "--tasks", str(HANDWRITTEN), "--task-id", TASK)
    try:
        async with Client(f"{base}/episodes/alice/mcp") as alice, Client(f"{base}/episodes/bob/mcp") as bob:
            assert not (await alice.call_tool("get_customer_by_phone", PHONE)).is_error
            first = await alice.call_tool("make_payment", PAY)
            assert not first.is_error and first.structured_content["status"] == "Settled"
            again = await alice.call_tool("make_payment", PAY)  # same episode: already settled
            assert again.is_error and result_error(again)["kind"] != "internal"
            other = await bob.call_tool("make_payment", PAY)  # bob's database never saw alice's payment
            assert not other.is_error and other.structured_content["status"] == "Settled"
            bad = await bob.call_tool("get_accounts", {"customer_id": 4})
            assert bad.is_error and result_error(bad)["kind"] == "invalid_arguments"
            tools = {t.name for t in (await bob.list_tools()).tools}
            assert "make_payment" in tools
        calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
        assert sum("record" in c for c in calls) == 5  # written as they happened, before any session ended
        # this SDK speaks the sessionless protocol (no Mcp-Session-Id, nothing to close): the episode stays
        # open until DELETE /episodes/<name> or shutdown
        assert read_trajectories(out) == []
        request = urllib.request.Request(f"{base}/episodes/alice", method="DELETE")
        assert json.loads(urllib.request.urlopen(request, timeout=10).read()) == {"ended": True}
        assert len(read_trajectories(out)) == 1
    finally:
        message = stop(proc)
    assert "holds 2 sessions" in message
    by_episode = {t.source_data["gateway_episode"]: t for t in read_trajectories(out)}
    alice, bob = by_episode["alice"], by_episode["bob"]
    assert [c.name for c in alice.tool_calls] == ["get_customer_by_phone", "make_payment", "make_payment"]
    assert [(c.name, c.is_error) for c in bob.tool_calls] == [("make_payment", False), ("get_accounts", True)]
    assert alice.termination.reason == "session_closed"
    # each made the same one successful write (the payment) on its own database; alice's lookup and
    # refused second payment, and bob's malformed call, changed nothing: equal states
    assert alice.final_state["banking"] == bob.final_state["banking"]
    run, sims = score_run(out)
    scores = {s.simulation_id: s for s in sims}
    # by hand: alice satisfied 2 of the 3 gold actions, bob 1 (his get_accounts failed)
    assert scores[alice.simulation_id].tsr.action == pytest.approx(2 / 3)
    assert scores[bob.simulation_id].tsr.action == pytest.approx(1 / 3)
    assert run.tue.calls == 5


def test_stdio_session_is_one_episode_written_when_the_client_leaves(tmp_path):
    out = tmp_path / "stdio"

    async def use() -> None:
        params = StdioServerParameters(command=SHIFTBOX[0], args=[*SHIFTBOX[1:], "serve", "--domain", "banking",
                                                                 "--transport", "stdio", "--out", str(out)])
        async with Client(stdio_client(params)) as client:  # mcp 2.0 takes no parameters
            assert "gateway" in client.server_info.name
            policy = await client.get_prompt("policy")
            assert "banking" in policy.messages[0].content.text.lower()
            assert not (await client.call_tool("get_customer_by_phone", PHONE)).is_error

    anyio.run(use)
    [t] = read_trajectories(out)
    assert t.task_id == "open-session" and [c.name for c in t.tool_calls] == ["get_customer_by_phone"]
    run, _ = score_run(out)
    assert run.tue.calls == 1


def test_serve_usage_errors_exit_2(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["serve", "--domain", "banking", "--task-id", TASK, "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--tasks" in res.output
    res = runner.invoke(app, ["serve", "--domain", "nowhere", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2 and "unknown domain" in res.output
    res = runner.invoke(app, ["serve", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--task-id", "nope",
                              "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "hw_banking_001" in res.output


# -- issue 15 item 3: the documented desktop configuration starts every time ----------------------------

def stdio_serve(out: Path) -> subprocess.Popen:
    """`shiftbox serve --transport stdio` exactly as docs/agents.md configures it (no --resume)."""
    return subprocess.Popen([*SHIFTBOX, "serve", "--domain", "banking", "--transport", "stdio", "--out", str(out)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def rpc(proc: subprocess.Popen, message: dict) -> dict | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    line = proc.stdout.readline()
    assert line, proc.stderr.read().decode() if proc.stderr else "no answer"
    return json.loads(line)


def stdio_call(proc: subprocess.Popen, name: str, arguments: dict) -> dict:
    """Initialize (once) and make one tools/call over raw JSON-RPC; returns the call's result."""
    rpc(proc, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}})
    assert answer is not None
    return answer["result"]


def test_every_stdio_launch_of_the_desktop_configuration_is_a_new_named_session(tmp_path):
    out = tmp_path / "desktop"
    for _ in range(3):
        proc = stdio_serve(out)
        assert not stdio_call(proc, "get_customer_by_phone", PHONE)["isError"]
        proc.stdin.close()  # the client leaves
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
    ids = [t.simulation_id for t in read_trajectories(out)]
    assert ids == ["open-session#0", "open-session#1", "open-session#2"]
    assert [t.trial for t in read_trajectories(out)] == [0, 1, 2]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_a_stdio_session_cleanly_and_writes_its_trajectory(tmp_path, sig):
    out = tmp_path / "desktop"
    proc = stdio_serve(out)
    assert not stdio_call(proc, "get_customer_by_phone", PHONE)["isError"]
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
    assert "Traceback" not in proc.stderr.read().decode()
    [t] = read_trajectories(out)
    assert t.termination.reason == "session_closed" and [c.name for c in t.tool_calls] == ["get_customer_by_phone"]
    assert t.final_state["banking"]


def mcp_post(url: str, body: dict, session: str | None = None) -> tuple[dict, str | None]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}
    if session:
        headers["Mcp-Session-Id"] = session
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
        return (json.loads(text) if text else {}), response.headers.get("mcp-session-id")


def raw_http_session(url: str) -> str:
    """An MCP session on `url` by hand (initialize, initialized, one call); returns its Mcp-Session-Id."""
    _, session = mcp_post(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    assert session
    mcp_post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    answer, _ = mcp_post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "get_customer_by_phone", "arguments": PHONE}}, session)
    assert not answer["result"]["isError"]
    return session


def mcp_delete(url: str, session: str) -> int:
    request = urllib.request.Request(url, headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"},
                                     method="DELETE")
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


@pytest.mark.parametrize("path", ["/episodes/carol/mcp", "/mcp"], ids=["episode-path", "plain-mcp"])
def test_the_standard_mcp_session_close_ends_the_gateway_session(tmp_path, path):
    out = tmp_path / "http"
    proc, base = serve_http(out)
    try:
        session = raw_http_session(base + path)
        assert read_trajectories(out) == []
        assert mcp_delete(base + path, session) in (200, 204)
        deadline = time.monotonic() + 10
        while not read_trajectories(out) and time.monotonic() < deadline:
            time.sleep(0.05)
        [t] = read_trajectories(out)  # written when the client closed its session, not at shutdown
        assert t.termination.reason == "session_closed" and len(t.tool_calls) == 1
    finally:
        stop(proc)
    assert len(read_trajectories(out)) == 1


@pytest.mark.anyio
async def test_clients_without_an_mcp_session_on_plain_mcp_share_one_episode(tmp_path):
    """What docs/agents.md says of plain /mcp: sessionless clients (no Mcp-Session-Id) share the episode
    "default": one database, one recorded session."""
    out = tmp_path / "plain"
    proc, base = serve_http(out)
    try:
        async with Client(f"{base}/mcp") as first, Client(f"{base}/mcp") as second:
            assert not (await first.call_tool("make_payment", PAY)).is_error
            again = await second.call_tool("make_payment", PAY)
            assert again.is_error  # the same database: already settled
    finally:
        stop(proc)
    [t] = read_trajectories(out)
    assert t.source_data["gateway_episode"] == "default" and len(t.tool_calls) == 2


def test_launches_that_overlap_share_the_directory_without_touching_each_others_sessions(tmp_path):
    out = tmp_path / "desktop"
    first = stdio_serve(out)
    assert not stdio_call(first, "get_customer_by_phone", PHONE)["isError"]
    second = stdio_serve(out)  # starts while the first one's session is open: not a crash leftover
    assert not stdio_call(second, "get_customer_by_phone", PHONE)["isError"]
    for proc in (second, first):
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
    trajectories = read_trajectories(out)
    assert sorted(t.simulation_id for t in trajectories) == ["open-session#0", "open-session#1"]
    assert all(t.termination.detail.startswith("gateway episode") for t in trajectories)  # none rebuilt
    assert not list((out / ".serve" / "owners").iterdir())  # each process removed its own mark


# -- issue 29 item 9: who called, and how it went ------------------------------------------------------------

def call_lines(stderr: str) -> list[str]:
    """The lines `shiftbox serve` prints for tool calls (one per call)."""
    return [line for line in stderr.splitlines() if line.startswith("call ")]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["envelope", "initialize"])
async def test_each_session_records_its_clients_name_and_version_and_every_call_is_printed(tmp_path, mode):
    """The mcp SDK's client, with its own clientInfo: in its default mode it names itself in each request's
    envelope, in legacy mode in the `initialize` request; either way the session records it."""
    from mcp_types import Implementation

    out = tmp_path / "desk"
    proc, base = serve_http(out)
    desk, other = Implementation(name="desk-client", version="1.2.3"), Implementation(name="other", version="0.9")
    try:
        async with Client(f"{base}/episodes/alice/mcp", client_info=desk, mode=mode) as alice, \
                Client(f"{base}/episodes/bob/mcp", client_info=other, mode=mode) as bob:
            assert not (await alice.call_tool("get_customer_by_phone", PHONE)).is_error
            assert (await bob.call_tool("get_accounts", {"customer_id": 4})).is_error
            assert (await bob.call_tool("no_such_tool", {})).is_error
    finally:
        printed = stop(proc)
    by_episode = {t.source_data["gateway_episode"]: t for t in read_trajectories(out)}
    assert by_episode["alice"].agent == "mcp-client:desk-client@1.2.3"
    assert by_episode["bob"].agent == "mcp-client:other@0.9"
    assert by_episode["alice"].source_data["client"] == {"name": "desk-client", "version": "1.2.3"}
    assert call_lines(printed) == [
        "call desk-client 1.2.3 · open-session#0 · get_customer_by_phone · ok",
        "call other 0.9 · open-session#1 · get_accounts · error invalid_arguments",
        "call other 0.9 · open-session#1 · no_such_tool · error unknown_tool",
    ]


def test_a_stdio_session_records_the_client_of_its_initialize_request(tmp_path):
    out = tmp_path / "stdio"
    proc = stdio_serve(out)
    assert not stdio_call(proc, "get_customer_by_phone", PHONE)["isError"]  # clientInfo {"name": "t", "version": "0"}
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    [t] = read_trajectories(out)
    assert t.agent == "mcp-client:t@0" and t.source_data["client"] == {"name": "t", "version": "0"}
    assert call_lines(proc.stderr.read().decode()) == ["call t 0 · open-session#0 · get_customer_by_phone · ok"]


def test_a_session_rebuilt_after_a_crash_keeps_its_client(tmp_path):
    out = tmp_path / "desk"
    proc = stdio_serve(out)
    assert not stdio_call(proc, "get_customer_by_phone", PHONE)["isError"]
    proc.kill()
    proc.wait(timeout=30)
    again = stdio_serve(out)
    again.stdin.close()
    assert again.wait(timeout=30) == 0
    [t] = [t for t in read_trajectories(out) if t.tool_calls]
    assert t.source_data["rebuilt_from"] == "calls.jsonl" and t.agent == "mcp-client:t@0"
