"""Contract: `tools/list` of the airline server equals the committed golden schema.

A deliberate change of the public contract is recorded with:
    SHIFTBOX_UPDATE_GOLDEN=1 uv run pytest tests/servers/airline/test_contract.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio
GOLDEN = Path(__file__).with_name("golden_tools.json")


async def test_tools_list_matches_golden(air):
    listed = await air.list_tools()
    current = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    if os.environ.get("SHIFTBOX_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert GOLDEN.exists(), "golden file missing; create it with SHIFTBOX_UPDATE_GOLDEN=1"
    golden = json.loads(GOLDEN.read_text())
    assert [t["name"] for t in current] == [t["name"] for t in golden]
    for now, then in zip(current, golden, strict=True):
        assert now == then, f"tools/list entry for {now['name']} changed; see module docstring"
