"""Contract: `tools/list` of the retail server equals the committed golden schema (golden_tools.json).

A deliberate change of the public contract is recorded with:
    SHIFTBOX_UPDATE_GOLDEN=1 uv run pytest tests/servers/retail/test_contract.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.helpers import assert_tools_list_matches_golden

pytestmark = pytest.mark.anyio


async def test_tools_list_matches_golden(shop):
    await assert_tools_list_matches_golden(shop, Path(__file__).with_name("golden_tools.json"))
