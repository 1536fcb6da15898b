"""Contract: `tools/list` of the airline server equals the committed golden schema (golden_tools.json).

A deliberate change of the public contract is recorded with:
    SHIFTBOX_UPDATE_GOLDEN=1 uv run pytest tests/servers/airline/test_contract.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.servers.helpers import assert_tools_list_matches_golden

pytestmark = pytest.mark.anyio


async def test_tools_list_matches_golden(air):
    await assert_tools_list_matches_golden(air, Path(__file__).with_name("golden_tools.json"))
