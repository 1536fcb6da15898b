"""Contract of airline's reference tool sets (golden_tools_tau2.json, golden_tools_agentchangebench.json; the
default set: tests/servers/test_every_domain.py).

A deliberate change of the public contract is recorded with:
    SHIFTBOX_UPDATE_GOLDEN=1 uv run pytest tests/servers/airline/test_contract.py tests/servers/test_every_domain.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from shiftbox_servers.airline import DOMAIN
from shiftbox_servers.kit import DomainServer
from tests.servers.helpers import assert_tools_list_matches_golden

pytestmark = pytest.mark.anyio

TAU2_TOOLS = ["book_reservation", "calculate", "cancel_reservation", "get_reservation_details", "get_user_details",
              "list_all_airports", "search_direct_flight", "search_onestop_flight", "send_certificate",
              "transfer_to_human_agents", "update_reservation_baggages", "update_reservation_flights",
              "update_reservation_passengers", "get_flight_status"]
"""tau2-bench's airline tools, in its source's order (AgentChangeBench's fork has the same)."""


@pytest.mark.parametrize("toolset", ["tau2", "agentchangebench"])
async def test_reference_tools_list_matches_golden(airline_snapshot, toolset):
    async with Client(DomainServer(DOMAIN, airline_snapshot, toolset=toolset).mcp) as client:
        await assert_tools_list_matches_golden(client, Path(__file__).with_name(f"golden_tools_{toolset}.json"))
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == TAU2_TOOLS
    for tool in listed:  # tau2's arguments: every one required
        assert tool.input_schema.get("required", []) == list(tool.input_schema["properties"]), tool.name
    # a tool that answers text in tau2 (a number, a status, a message) has no structured output
    unstructured = {t.name for t in listed if t.output_schema is None}
    assert unstructured == {"calculate", "get_flight_status", "send_certificate", "transfer_to_human_agents"}
