"""What every domain server promises, checked for each domain: its published contract (golden_tools.json),
closed schemas, strict arguments, a native snapshot that rebuilds to the byte, the stdio transport, and
episodes isolated over streamable HTTP."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from shiftbox_servers.kit import SnapshotManifest, get_domain, http_server_process, task_domains
from tests.servers.conftest import domain_test_data
from tests.servers.helpers import assert_tools_list_matches_golden, digest, fails, ok

HERE = Path(__file__).parent


def rejected_cases() -> list[tuple]:
    """(domain, case, tool, arguments, the field the error must name): calls the SDK alone would accept, from each
    domain's tests/servers/<domain>/test_strict_arguments.py `CASES`."""
    cases = []
    for domain in task_domains():
        if importlib.util.find_spec(f"tests.servers.{domain}") is None:
            continue
        if importlib.util.find_spec(f"tests.servers.{domain}.test_strict_arguments") is not None:
            module = importlib.import_module(f"tests.servers.{domain}.test_strict_arguments")
            cases += [(domain, *case) for case in module.CASES]
    return cases


REJECTED = rejected_cases()


@pytest.mark.anyio
async def test_tools_list_matches_golden(every_domain, domain_client):
    """Record a deliberate contract change with SHIFTBOX_UPDATE_GOLDEN=1 (tests/servers/<domain>/golden_tools.json)."""
    await assert_tools_list_matches_golden(domain_client, HERE / every_domain / "golden_tools.json")


@pytest.mark.anyio
async def test_published_schemas_are_closed_including_nested_objects(every_domain, domain_client):
    listed = await domain_client.list_tools()
    assert len(listed.tools) == domain_test_data(every_domain).TOOL_COUNT
    for tool in listed.tools:
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        for name, definition in (tool.input_schema.get("$defs") or {}).items():
            assert definition.get("additionalProperties") is False, f"{tool.name}: {name}"
        assert tool.output_schema is not None, f"{tool.name} has no typed structured output"
        assert tool.description and len(tool.description) > 30, tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None, tool.name


@pytest.mark.anyio
@pytest.mark.parametrize(("every_domain", "case", "tool", "arguments", "field"), REJECTED,
                         ids=[f"{c[0]}-{c[1]}" for c in REJECTED])
async def test_rejected_with_field_named_and_state_unchanged(domain_client, every_domain, case, tool, arguments,
                                                             field):
    before = await digest(domain_client)
    error = await fails(domain_client, tool, arguments, "invalid_arguments")
    assert field in error["message"] and field in error["fields"]
    assert await digest(domain_client) == before


@pytest.mark.parametrize("domain", task_domains())
def test_rebuild_reproduces_committed_manifest(domain, tmp_path):
    dom = get_domain(domain)
    committed = SnapshotManifest.model_validate_json((dom.default_snapshot_dir() / "manifest.json").read_text())
    rebuilt = dom.build_snapshot(tmp_path)
    assert rebuilt.content_sha256 == committed.content_sha256
    assert rebuilt.row_counts == committed.row_counts
    assert (rebuilt.snapshot_version, rebuilt.source, rebuilt.clock_start) == ("v1", "native seed=7",
                                                                               committed.clock_start)
    assert rebuilt.clock_start.isoformat() == domain_test_data(domain).NATIVE_CLOCK_START


@pytest.mark.parametrize("domain", task_domains())
def test_rebuilds_are_byte_identical_and_seeded(domain, tmp_path):
    from importlib import import_module

    build_native = import_module(f"shiftbox_servers.{domain}._builder").build_native
    first, second = build_native(tmp_path / "a"), build_native(tmp_path / "b")
    assert first.sha256 == second.sha256
    assert (tmp_path / "a" / "db.sqlite").read_bytes() == (tmp_path / "b" / "db.sqlite").read_bytes()
    assert build_native(tmp_path / "c", seed=8).content_sha256 != first.content_sha256


@pytest.mark.anyio
async def test_stdio_subprocess_reports_version_and_snapshot(every_domain, domain_snapshot):
    (tool, arguments, (key, value)), (bad_tool, bad_arguments) = domain_test_data(every_domain).STDIO_CALLS
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "shiftbox_servers", every_domain, "--snapshot", str(domain_snapshot.directory)])
    async with Client(stdio_client(params)) as client:  # mcp 2.0 takes no parameters
        info = client.server_info
        assert info.name == f"shiftbox-{every_domain}" and info.version
        assert domain_snapshot.manifest.sha256 in (info.description or "")
        assert (await ok(client, tool, arguments))[key] == value
        await fails(client, bad_tool, bad_arguments, "invalid_arguments")
        policy = await client.read_resource("shiftbox://policy")
        assert f"{every_domain} agent policy" in policy.contents[0].text


@pytest.mark.anyio
async def test_http_concurrent_episodes_are_isolated(every_domain, domain_snapshot):
    probe = domain_test_data(every_domain).ISOLATION
    async with http_server_process(every_domain, domain_snapshot.directory) as base:
        async with Client(f"{base}/episodes/one/mcp") as one, Client(f"{base}/episodes/two/mcp") as two:
            results = {}

            async def write_in_one():
                results["written"] = await ok(one, *probe.write)

            async def read_in_two():
                results["two_before"] = await ok(two, *probe.read)

            async with anyio.create_task_group() as tg:
                tg.start_soon(write_in_one)
                tg.start_soon(read_in_two)
            two_after = await ok(two, *probe.read)
            one_after = await ok(one, *probe.read)
            assert probe.seen(one_after) == probe.after
            assert probe.seen(two_after) == probe.before and probe.seen(results["two_before"]) == probe.before
            if probe.hidden:
                tool, key = probe.hidden
                await fails(two, tool, {key: results["written"][key]}, "not_found")

        health = json.loads(urllib.request.urlopen(base + "/healthz").read())
        assert health["episodes"] == 2 and health["sha256"] == domain_snapshot.manifest.sha256
        assert health["rss_bytes"] > 10_000_000   # the resident memory of a Python server process
        req = urllib.request.Request(base + "/episodes/one", method="DELETE")
        assert json.loads(urllib.request.urlopen(req).read()) == {"dropped": True}




@pytest.mark.parametrize("domain", task_domains())
def test_a_domain_loads_its_other_tool_sets_only_when_asked_for(domain):
    """Loading a domain (every run does) leaves the modules defining its other tool sets unimported; asking for one
    imports its module and gives that module's own tool set, the same one each time."""
    import subprocess

    program = f"""
import json, sys
from shiftbox_servers.kit import get_domain
found = get_domain({domain!r})
loaded = set(sys.modules)
definers = {{}}
for name in found.toolset_names()[1:]:
    toolset = found.toolset(name)
    assert found.toolset(name) is toolset and toolset is not found.tools and len(toolset) > 0
    definers[name] = sorted(m for m in set(sys.modules) - loaded
                            if any(value is toolset for value in list(vars(sys.modules[m]).values())))
print(json.dumps(definers))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    for name, modules in json.loads(done.stdout).items():
        assert modules, f"{domain}'s tool set {name!r} is defined by a module the domain loads with it"
