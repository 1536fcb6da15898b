"""The kit without the MCP SDK: its core (every domain's server, its tools, episodes and resources) loads and runs
without importing `mcp`, which only the transports that speak MCP load (`_binding`, stdio, HTTP); and its in-process
session (`DirectSession`) answers exactly what the SDK's client gets from the same server over MCP, for every domain,
tool set and dependency-graph mode, on a corpus of real and refused calls."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from shiftbox_servers.kit import (
    CLOSE_META_KEY,
    EPISODE_META_KEY,
    STATE_DIGEST_URI,
    DirectSession,
    DomainServer,
    Snapshot,
    get_domain,
    not_unicode_error,
    registered_domains,
)
from tests.servers.banking.conftest import write_fixture_snapshot

SDK_FREE = """
import json, sys
from shiftbox_servers.kit import DomainServer, Snapshot, get_domain, registered_domains
for name in sorted(registered_domains()):
    domain = get_domain(name)
    server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))
    assert server.tools and server.resources and server.listed_tools()
print(json.dumps(sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "starlette", "uvicorn")))))
"""


def test_the_kits_core_loads_and_builds_servers_without_the_mcp_sdk():
    done = subprocess.run([sys.executable, "-c", SDK_FREE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []


# -- the in-process session answers what the SDK's client gets over MCP ---------------------------------------

REPO = Path(__file__).resolve().parents[3]
DOMAINS = sorted(registered_domains())
MODES = [(False, False), (True, False), (True, True)]  # plain, dependency-graph, dependency-graph + graph-refusal
MODE_IDS = ["plain", "dependency-graph", "graph-refusal"]
CASES = [pytest.param(domain, graph, refusal, id=f"{domain}-{mode}") for domain in DOMAINS
         for (graph, refusal), mode in zip(MODES, MODE_IDS, strict=True)
         if not graph or get_domain(domain).dependency_graph.declared]
"""Each domain in each mode it serves: the graph modes only where the domain declares a graph (mmtb declares none,
and its server refuses them: test_dependency_graph.py)."""


def dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


async def answer(request: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A request's answer, or the exception it raised (its type and message), for comparison."""
    try:
        return dump(await request(*args, **kwargs))
    except Exception as exc:
        return {"raised": type(exc).__name__, "message": str(exc)}


def servers(domain: str, toolset: str, graph: bool, refusal: bool) -> tuple[DomainServer, DomainServer]:
    """Two servers of the same domain, snapshot and modes: one behind the SDK, one called in process."""
    d = get_domain(domain)
    snapshot = Snapshot.load(d.default_snapshot_dir())
    return tuple(DomainServer(d, snapshot, toolset=toolset, dependency_graph=graph, graph_refusal=refusal)
                 for _ in range(2))  # type: ignore[return-value]


def toolsets(domain: str) -> list[str]:
    return ["default", *get_domain(domain).toolsets]


@pytest.mark.anyio
@pytest.mark.parametrize("domain,graph,refusal", CASES)
async def test_the_direct_sessions_identity_tools_and_digest_are_the_sdk_clients(domain, graph, refusal):
    for toolset in toolsets(domain):
        over_mcp, in_process = servers(domain, toolset, graph, refusal)
        async with Client(over_mcp.mcp) as client, DirectSession(in_process) as direct:
            assert dump(direct.server_info) == dump(client.server_info)
            sdk_tools = [dump(t) for t in (await client.list_tools()).tools]
            assert [dump(t) for t in (await direct.list_tools()).tools] == sdk_tools, toolset
            assert any("outputSchema" in t for t in sdk_tools)  # the derived output schemas are compared too
            for meta in ({EPISODE_META_KEY: "e"}, {EPISODE_META_KEY: "e", CLOSE_META_KEY: True},
                         {EPISODE_META_KEY: "bad/id"}, {EPISODE_META_KEY: 5}, None):
                sdk = await answer(client.read_resource, STATE_DIGEST_URI, meta=meta)
                assert await answer(direct.read_resource, STATE_DIGEST_URI, meta=meta) == sdk, meta
            for uri in sorted(in_process.resources) + ["shiftbox://nowhere"]:
                sdk = await answer(client.read_resource, uri)
                assert await answer(direct.read_resource, uri) == sdk, uri


def recorded_calls(domain: str) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """The committed fixture run's tool set and calls (episode, tool, arguments: its setup calls, then the agent's)."""
    path = REPO / "fixtures" / f"{domain}-litellm" / "trajectories.jsonl"
    calls, toolset = [], "default"
    for i, line in enumerate(path.read_text().splitlines() if path.exists() else ()):
        trajectory = json.loads(line)
        toolset = trajectory["servers"][domain].get("toolset") or toolset
        for record in trajectory.get("setup_calls", []) + trajectory["tool_calls"]:
            calls.append((f"traj-{i}", record["name"], record["arguments"]))
    return toolset, calls


def json_text_calls(server: DomainServer,
                    recorded: list[tuple[str, str, dict[str, Any]]]) -> list[tuple[str, str, dict[str, Any]]]:
    """Recorded calls with one argument (given or optional) as a JSON text instead, once per tool and argument: the
    SDK's lenient parse decodes one where the argument is not typed `str` (an optional text, a list)."""
    calls, seen = [], set()
    for episode, name, arguments in recorded:
        for key in server.tools.specs[name].arguments_model.model_fields if name in server.tools.specs else ():
            if (name, key) not in seen:
                seen.add((name, key))
                calls += [(episode, name, {**arguments, key: text}) for text in ('{"a": [1]}', "null", "[]")]
    return calls


def error_calls(server: DomainServer) -> list[tuple[Any, str, Any]]:
    """Calls each refused or answered on a path of its own: every tool with no arguments, with a JSON text in each
    argument (the SDK's lenient parse decodes one in an argument not typed `str`), a wrong type, an unknown key; an
    unknown tool; unknown, ill-formed and non-string episode ids. (Lone surrogates: `lone_surrogate_calls`.)"""
    calls: list[tuple[Any, str, Any]] = []
    for spec in server.tools:
        fields = list(spec.arguments_model.model_fields)
        calls.append(("errors", spec.name, {}))
        calls.append(("errors", spec.name, {"no_such_argument": 1}))
        for name in fields:
            calls.append(("errors", spec.name, {name: 12345}))
            calls.append(("errors", spec.name, {name: '{"a": [1]}'}))
            calls.append(("errors", spec.name, {name: "null"}))
    first = next(iter(server.tools)).name
    calls += [("errors", "no_such_tool", {}), ("bad/id", first, {}), ("x" * 200, first, {}), (5, first, {}),
              (None, first, {})]
    return calls


@pytest.mark.anyio
@pytest.mark.parametrize("domain,graph,refusal", CASES)
async def test_the_direct_sessions_tool_calls_are_the_sdk_clients(domain, graph, refusal, monkeypatch):
    by_sdk = []
    sdk_call = DirectSession._sdk_call
    monkeypatch.setattr(DirectSession, "_sdk_call", lambda self, *args: by_sdk.append(args) or sdk_call(self, *args))
    toolset, recorded = recorded_calls(domain)
    over_mcp, in_process = servers(domain, toolset, graph, refusal)
    corpus = recorded + json_text_calls(in_process, recorded) + error_calls(in_process)
    assert {name for _, name, _ in recorded} >= {"cancel_pending_order", "make_payment", "book_reservation"} & {
        spec.name for spec in in_process.tools}
    compared = stamped = 0
    async with Client(over_mcp.mcp) as client, DirectSession(in_process) as direct:
        for episode, name, arguments in corpus:
            meta = None if episode is None else {EPISODE_META_KEY: episode}
            sdk = await answer(client.call_tool, name, arguments, meta=meta)
            got = await answer(direct.call_tool, name, arguments, meta=meta)
            assert got == sdk, (episode, name, arguments)
            compared += 1
            stamped += "io.modelcontextprotocol/serverInfo" in (sdk.get("_meta") or {})
        for episode in sorted({e for e, _, _ in recorded}):
            meta = {EPISODE_META_KEY: episode, CLOSE_META_KEY: True}
            sdk = await answer(client.read_resource, STATE_DIGEST_URI, meta=meta)
            assert await answer(direct.read_resource, STATE_DIGEST_URI, meta=meta) == sdk
    assert compared == len(corpus) > 15
    assert stamped > compared / 2  # the latest protocol's serverInfo stamp in the results is compared too
    if recorded:  # the SDK's lenient parse answered a few (a JSON text), the kit the rest
        assert 0 < len(by_sdk) < compared / 4


@pytest.mark.anyio
async def test_a_lone_surrogate_in_process_is_the_kits_refusal():
    """The SDK's in-memory transport turns a lone surrogate into U+FFFD before the server sees it (harness calls never
    hold one: `EpisodeClient.call` refuses them first); in process the kit's own refusal answers, as a server that
    receives one (an escaped "\\ud83d" in JSON) does."""
    _, server = servers("banking", "default", False, False)
    async with DirectSession(server) as direct:
        for arguments in ({"customer_id": "\ud83d"}, {"\ud83d": 1}):
            got = await direct.call_tool("get_customer_by_id", arguments, meta={EPISODE_META_KEY: "e"})
            expected = server.wire_result(direct.version, not_unicode_error("get_customer_by_id", arguments))
            assert dump(got) == expected
            assert got.is_error and got.meta["shiftbox/error"]["kind"] == "invalid_arguments"


def fill(server: DomainServer, episode_id: str) -> None:
    """Grow episode `episode_id` to its size limit (as tests/servers/kit/test_episode_capacity.py does)."""
    episode = server.episodes.get(episode_id)
    episode.db.execute(f"PRAGMA max_page_count = {episode.db.execute('PRAGMA page_count').fetchone()[0]}")
    for i in range(100_000):
        try:
            episode.execute("INSERT INTO payees VALUES (?, 'cust_a', ?, 'electronic', 1)", (f"fill_{i}", f"Fill {i}"))
        except sqlite3.OperationalError:
            return


@pytest.mark.anyio
async def test_a_capacity_error_in_process_is_the_sdk_clients(tmp_path):
    snapshot = write_fixture_snapshot(tmp_path / "snap")
    over_mcp, in_process = (DomainServer(get_domain("banking"), snapshot) for _ in range(2))
    for server in (over_mcp, in_process):
        fill(server, "full")
    meta = {EPISODE_META_KEY: "full"}
    async with Client(over_mcp.mcp) as client, DirectSession(in_process) as direct:
        arguments = {"customer_id": "cust_a", "name": "One more"}
        sdk = await answer(client.call_tool, "add_payee", arguments, meta=meta)
        got = await answer(direct.call_tool, "add_payee", arguments, meta=meta)
    assert sdk["_meta"]["shiftbox/error"]["kind"] == "capacity"
    assert got == sdk


DIRECT_CALLS = """
import asyncio, json, sys
from shiftbox_servers.kit import EPISODE_META_KEY, STATE_DIGEST_URI, DirectSession, DomainServer, Snapshot, get_domain
calls = json.loads(sys.argv[1])

async def main():
    domain = get_domain("banking")
    async with DirectSession(DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))) as direct:
        answers = [await direct.call_tool(name, arguments, meta={EPISODE_META_KEY: "e"}) for name, arguments in calls]
        answers.append(await direct.read_resource(STATE_DIGEST_URI, meta={EPISODE_META_KEY: "e"}))
    return [a.model_dump(mode="json", by_alias=True, exclude_none=True) for a in answers]

answers = asyncio.run(main())
print(json.dumps({"methods": "mcp_types.methods" in sys.modules, "answers": answers}))
"""


def test_the_direct_sessions_answers_need_not_the_protocols_per_version_models():
    """In process on the latest protocol, a call's result (structured, refused, failed) and a resource read are the
    kit's own models' dumps with the version's stamp: the per-version request and result models (`mcp_types.methods`,
    about a quarter of a second to import) are never loaded in a run (the parity tests above check the answers)."""
    _, recorded = recorded_calls("banking")
    calls = [[name, arguments] for _, name, arguments in recorded[:6]] + [["no_such_tool", {}],
                                                                            ["get_customer_by_id", {"x": 1}]]
    done = subprocess.run([sys.executable, "-c", DIRECT_CALLS, json.dumps(calls)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert [a.get("isError", False) for a in out["answers"][-3:-1]] == [True, True]
    assert any("structuredContent" in a for a in out["answers"][:-3])
    assert out["methods"] is False


@pytest.mark.anyio
async def test_each_in_process_request_runs_in_its_episode_and_leaves_it(tmp_path):
    """A call and a read run in the episode their `_meta` names (the digest read of episode "a" counts the call made
    in it), and the request's episode is the caller's again after each, a refused read (a closed episode) included.
    Pins behaviour main already had (it passes there too): not a regression test."""
    from shiftbox_servers.kit._episode import current_episode_id

    server = DomainServer(get_domain("banking"), write_fixture_snapshot(tmp_path / "snap"))
    async with DirectSession(server) as direct:
        await direct.wire_call("get_customer_by_id", {"customer_id": "cust_a"}, meta={EPISODE_META_KEY: "a"})
        assert current_episode_id.get() == "default"
        read = await direct.wire_read(STATE_DIGEST_URI, meta={EPISODE_META_KEY: "a", CLOSE_META_KEY: True})
        assert json.loads(read["contents"][0]["text"])["tool_calls"] == 1
        assert current_episode_id.get() == "default"
        with pytest.raises(Exception, match="'a' is closed"):
            await direct.wire_read(STATE_DIGEST_URI, meta={EPISODE_META_KEY: "a"})
        assert current_episode_id.get() == "default"
