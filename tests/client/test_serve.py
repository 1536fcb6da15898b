"""`shiftbox serve`: the recording gateway for any MCP client; sessions become trajectories metrics score."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from shiftbox._metrics_cli import score_run
from shiftbox._run import read_trajectories
from shiftbox.cli import app
from shiftbox_servers.kit import result_error
from tests.client.harness import HANDWRITTEN

SHIFTBOX = [sys.executable, "-m", "shiftbox.cli"]
TASK = "hw_banking_003"  # gold: get_customer_by_phone, make_payment(req_00002), get_accounts(cust_0004)
PHONE = {"phone_number": "+15558562432"}
PAY = {"request_id": "req_00002"}


def serve_http(out: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([*SHIFTBOX, "serve", "--domain", "banking", "--port", "0", "--out", str(out), *extra],
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:\d+", line)
    if not found:
        proc.kill()
        raise AssertionError(f"serve did not start: {line}{proc.stderr.read()}")
    return proc, found.group(0)


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
        calls = (out / "calls.jsonl").read_text().splitlines()
        assert len(calls) == 5  # written as they happened, before any session ended
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
        async with Client(params) as client:
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
