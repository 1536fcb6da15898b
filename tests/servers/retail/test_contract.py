"""Contract of retail's reference tool sets (golden_tools_tau2.json, golden_tools_agentchangebench.json; the
default set: tests/servers/test_every_domain.py).

A deliberate change of the public contract is recorded with:
    SHIFTBOX_UPDATE_GOLDEN=1 uv run pytest tests/servers/retail/test_contract.py tests/servers/test_every_domain.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from shiftbox_servers.kit import DomainServer
from shiftbox_servers.retail import DOMAIN
from tests.servers.helpers import assert_tools_list_matches_golden

pytestmark = pytest.mark.anyio

TAU2_TOOLS = ["calculate", "cancel_pending_order", "exchange_delivered_order_items", "find_user_id_by_name_zip",
              "find_user_id_by_email", "get_order_details", "get_product_details", "get_item_details",
              "get_user_details", "list_all_product_types", "modify_pending_order_address",
              "modify_pending_order_items", "modify_pending_order_payment", "modify_user_address",
              "return_delivered_order_items", "transfer_to_human_agents"]
"""tau2-bench's retail tools, in its source's order."""


@pytest.mark.parametrize("toolset", ["tau2", "agentchangebench"])
async def test_reference_tools_list_matches_golden(retail_snapshot, toolset):
    async with Client(DomainServer(DOMAIN, retail_snapshot, toolset=toolset).mcp) as client:
        await assert_tools_list_matches_golden(client, Path(__file__).with_name(f"golden_tools_{toolset}.json"))
        listed = (await client.list_tools()).tools
    expected = [t for t in TAU2_TOOLS if toolset == "tau2" or t != "get_item_details"]
    assert [t.name for t in listed] == expected
    for tool in listed:  # tau2's plain argument types: strings and lists of strings, every one required
        properties = tool.input_schema["properties"]
        assert tool.input_schema.get("required", []) == list(properties), tool.name
        assert {p["type"] for p in properties.values()} <= {"string", "array"}, tool.name
    # a tool that answers text in tau2 (an id, a number, "Transfer successful") has no structured output
    unstructured = {t.name for t in listed if t.output_schema is None}
    assert unstructured == {"calculate", "find_user_id_by_name_zip", "find_user_id_by_email", "transfer_to_human_agents"}
