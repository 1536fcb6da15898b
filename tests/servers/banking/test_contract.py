"""Contract of banking's AgentChangeBench-parity tool set (golden_tools_agentchangebench.json; every
domain's default set: tests/servers/test_every_domain.py).

A deliberate change of the public contract is recorded with:
    SHIFTBOX_UPDATE_GOLDEN=1 uv run pytest tests/servers/banking/test_contract.py tests/servers/test_every_domain.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.helpers import assert_tools_list_matches_golden

pytestmark = pytest.mark.anyio


async def test_agentchangebench_tools_list_matches_golden(banking_snapshot):
    """The AgentChangeBench tool set: the reference's 21 tools (golden_tools_agentchangebench.json)."""
    from mcp import Client

    from shiftbox_servers.banking import DOMAIN
    from shiftbox_servers.kit import DomainServer

    async with Client(DomainServer(DOMAIN, banking_snapshot, toolset="agentchangebench").mcp) as client:
        await assert_tools_list_matches_golden(client, Path(__file__).with_name("golden_tools_agentchangebench.json"))
