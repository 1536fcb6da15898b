"""What every domain server promises, checked for each domain: its published contract (golden_tools.json),
closed schemas, strict arguments, a native snapshot that rebuilds to the byte, and the stdio transport."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from shiftbox_servers.kit import SnapshotManifest, get_domain
from tests.servers.airline.test_strict_arguments import CASES as AIRLINE_CASES
from tests.servers.banking.test_strict_arguments import CASES as BANKING_CASES
from tests.servers.conftest import DOMAINS
from tests.servers.helpers import assert_tools_list_matches_golden, digest, fails, ok
from tests.servers.retail.test_strict_arguments import CASES as RETAIL_CASES

HERE = Path(__file__).parent
TOOL_COUNTS = {"banking": 20, "retail": 16, "airline": 14}
CLOCK_STARTS = {"banking": "2025-07-01T09:00:00", "retail": "2025-06-16T10:00:00", "airline": "2024-05-15T15:00:00"}
REJECTED = [(domain, *case) for domain, cases in (("banking", BANKING_CASES), ("retail", RETAIL_CASES),
                                                   ("airline", AIRLINE_CASES)) for case in cases]
"""(domain, case, tool, arguments, the field the error must name): calls the SDK alone would accept."""
STDIO_CALLS = {
    # domain: (a call that succeeds, (output field, value)), (a call with a wrongly typed argument)
    "banking": (("lock_card", {"card_id": "card_b1"}, ("status", "Locked")),
                ("get_statements", {"account_id": "acc_a1", "limit": "3"})),
    "retail": (("get_order_details", {"order_id": "#W1000003"}, ("status", "delivered")),
               ("get_order_details", {"order_id": 1000003})),
    "airline": (("get_reservation_details", {"reservation_id": "AAA111"}, ("user_id", "ana_lopez_1001")),
                ("update_reservation_baggages", {"reservation_id": "AAA111", "total_baggages": "2",
                                                 "nonfree_baggages": 0, "payment_id": "x"})),
}


@pytest.mark.anyio
async def test_tools_list_matches_golden(every_domain, domain_client):
    """Record a deliberate contract change with SHIFTBOX_UPDATE_GOLDEN=1 (tests/servers/<domain>/golden_tools.json)."""
    await assert_tools_list_matches_golden(domain_client, HERE / every_domain / "golden_tools.json")


@pytest.mark.anyio
async def test_published_schemas_are_closed_including_nested_objects(every_domain, domain_client):
    listed = await domain_client.list_tools()
    assert len(listed.tools) == TOOL_COUNTS[every_domain]
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


@pytest.mark.parametrize("domain", DOMAINS)
def test_rebuild_reproduces_committed_manifest(domain, tmp_path):
    dom = get_domain(domain)
    committed = SnapshotManifest.model_validate_json((dom.default_snapshot_dir() / "manifest.json").read_text())
    rebuilt = dom.build_snapshot(tmp_path)
    assert rebuilt.content_sha256 == committed.content_sha256
    assert rebuilt.row_counts == committed.row_counts
    assert (rebuilt.snapshot_version, rebuilt.source, rebuilt.clock_start) == ("v1", "native seed=7",
                                                                               committed.clock_start)
    assert rebuilt.clock_start.isoformat() == CLOCK_STARTS[domain]


@pytest.mark.parametrize("domain", DOMAINS)
def test_rebuilds_are_byte_identical_and_seeded(domain, tmp_path):
    from importlib import import_module

    build_native = import_module(f"shiftbox_servers.{domain}._builder").build_native
    first, second = build_native(tmp_path / "a"), build_native(tmp_path / "b")
    assert first.sha256 == second.sha256
    assert (tmp_path / "a" / "db.sqlite").read_bytes() == (tmp_path / "b" / "db.sqlite").read_bytes()
    assert build_native(tmp_path / "c", seed=8).content_sha256 != first.content_sha256


@pytest.mark.anyio
async def test_stdio_subprocess_reports_version_and_snapshot(every_domain, domain_snapshot):
    (tool, arguments, (key, value)), (bad_tool, bad_arguments) = STDIO_CALLS[every_domain]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "shiftbox_servers", every_domain, "--snapshot", str(domain_snapshot.directory)])
    async with Client(params) as client:
        info = client.server_info
        assert info.name == f"shiftbox-{every_domain}" and info.version
        assert domain_snapshot.manifest.sha256 in (info.description or "")
        assert (await ok(client, tool, arguments))[key] == value
        await fails(client, bad_tool, bad_arguments, "invalid_arguments")
        policy = await client.read_resource("shiftbox://policy")
        assert f"{every_domain} agent policy" in policy.contents[0].text
