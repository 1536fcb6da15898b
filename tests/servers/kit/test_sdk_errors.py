"""The kit's one translation of its refusals into the SDK's errors (`as_sdk_errors`), used by the SDK binding, the
middleware and the in-process session alike."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from shiftbox_servers.kit._requests import RequestRefused, as_sdk_errors


def test_a_refusal_in_the_block_leaves_it_as_the_sdks_error_with_its_code_message_and_data():
    with pytest.raises(MCPError) as raised, as_sdk_errors():
        raise RequestRefused(-32602, "unknown prompt 'x'", {"name": "x"})
    error = raised.value.error
    assert (error.code, error.message, error.data) == (-32602, "unknown prompt 'x'", {"name": "x"})
    assert raised.value.__suppress_context__  # raised from None: the kit's own exception is not shown


@pytest.mark.anyio
async def test_other_exceptions_and_values_pass_through_unchanged():
    with pytest.raises(KeyError), as_sdk_errors():
        raise KeyError("k")

    async def read() -> str:
        with as_sdk_errors():
            return "text"

    assert await read() == "text"
