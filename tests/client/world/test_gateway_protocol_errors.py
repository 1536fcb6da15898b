"""The recording gateway (`shiftbox serve`, a run's agent URLs) answers invalid requests as the domain servers
do: a request whose id is no string or integer is Invalid Request (-32600) and never reaches a route, over
HTTP and stdio; an unknown prompt or resource and a `_meta` episode that is no string are Invalid params (-32602)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from mcp_types import CallToolResult

from shiftbox.world import open_run_gateway, open_world
from shiftbox_servers.kit import ErrorKind, error_result

INVALID_REQUEST, INVALID_PARAMS = -32600, -32602
BAD_IDS = ["1.5", "2.0", "1e3", "true", "null", "{}"]
PAYEE = {"name": "add_payee", "arguments": {"customer_id": "cust_0001", "name": "Injected Payee"}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def call_with_id(raw_id: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + raw_id.encode() + b',"method":"tools/call","params":' + json.dumps(
        PAYEE).encode() + b"}"


@pytest.mark.anyio
async def test_gateway_over_http_refuses_invalid_ids_unknown_prompts_and_non_string_meta_episodes():
    reached: list[str] = []

    async def route(name: str, arguments: dict) -> CallToolResult:
        reached.append(name)
        return error_result(ErrorKind.NOT_FOUND, "test route")

    async with open_world("banking") as world, open_run_gateway(world) as gateway, httpx.AsyncClient() as client:
        link = gateway.link("ep.0")
        link.attach(route)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        opened = await client.post(link.url, content=json.dumps(init), headers=HEADERS)
        headers = HEADERS | {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        await client.post(link.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers)
        for raw_id in BAD_IDS:
            answer = await client.post(link.url, content=call_with_id(raw_id), headers=headers)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == INVALID_REQUEST, (raw_id, answer.text)
        assert reached == []
        prompt = await client.post(link.url, headers=headers, content=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "nope"}}))
        assert prompt.json()["error"]["code"] == INVALID_PARAMS and "nope" in prompt.json()["error"]["message"]
        resource = await client.post(link.url, headers=headers, content=json.dumps(
            {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "shiftbox://episode/digest"}}))
        error = resource.json()["error"]
        assert error["code"] == INVALID_PARAMS and "shiftbox://episode/digest" in error["message"], error
        meta = await client.post(link.url, headers=headers, content=json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": PAYEE | {"_meta": {"shiftbox/episode": 5}}}))
        error = meta.json()["error"]
        assert error["code"] == INVALID_PARAMS and "shiftbox/episode" in error["message"], error
        assert reached == []
        ok = await client.post(link.url, content=call_with_id('"w"'), headers=headers)
        assert "result" in ok.json() and reached == ["add_payee"]


@pytest.mark.timeout(120)
def test_gateway_over_stdio_refuses_invalid_ids_and_records_no_call(tmp_path):
    out = tmp_path / "serve"
    proc = subprocess.Popen([sys.executable, "-m", "shiftbox.cli", "serve", "--domain", "banking", "--transport",
                             "stdio", "--out", str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    lines = [json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).encode(),
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
             *(call_with_id(raw_id) for raw_id in BAD_IDS),
             b'{"jsonrpc":"2.0","id":"end","method":"ping"}']
    # A client closes stdin once it has its answers (the server may drop a request still in flight at EOF).
    proc.stdin.write(b"\n".join(lines) + b"\n")
    proc.stdin.flush()
    answers: list[dict] = []
    while not any(a.get("id") == "end" for a in answers) or len(answers) < len(BAD_IDS) + 2:
        line = proc.stdout.readline()
        assert line, (answers, proc.stderr.read().decode() if proc.poll() is not None else "")
        answers.append(json.loads(line))
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    # answered in any order (JSON-RPC does not order answers; the refusals may come after the ping's)
    ids = [a.get("id") for a in answers]
    assert ids[0] == "init" and ids.count("end") == 1, answers
    refusals = [a for a in answers if a.get("id") not in ("init", "end")]
    assert len(refusals) == len(BAD_IDS), answers
    assert all(a["error"]["code"] == INVALID_REQUEST for a in refusals), refusals
    recorded = "".join(p.read_text() for p in out.glob("*.jsonl"))
    assert "add_payee" not in recorded and "Injected Payee" not in recorded
