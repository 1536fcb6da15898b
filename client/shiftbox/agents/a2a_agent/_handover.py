"""What each A2A message carries besides the user's words: where this simulation's tools are.

Every message's `metadata` holds `shiftbox/mcp_url`, `shiftbox/domain` and `shiftbox/seed`; the first
message of a conversation also holds `shiftbox/policy` (the domain policy, empty under `--policy none`),
and carries the same object as a data part after its text, for agents whose framework passes on parts
but not metadata.
"""

from __future__ import annotations

import uuid
from typing import Any

MCP_URL_KEY = "shiftbox/mcp_url"
DOMAIN_KEY = "shiftbox/domain"
SEED_KEY = "shiftbox/seed"
POLICY_KEY = "shiftbox/policy"


def handover(mcp_url: str, domain: str, seed: int, policy: str | None) -> dict[str, Any]:
    """The metadata of one message (`policy` only on a conversation's first message)."""
    meta: dict[str, Any] = {MCP_URL_KEY: mcp_url, DOMAIN_KEY: domain, SEED_KEY: seed}
    if policy is not None:
        meta[POLICY_KEY] = policy
    return meta


def user_message(texts: list[str], meta: dict[str, Any], *, context_id: str, task_id: str | None,
                 first: bool) -> Any:
    """The A2A message (a2a-sdk's `Message`) that hands the user's words to the agent."""
    from a2a.helpers import new_data_part, new_text_part
    from a2a.types import Message, Role

    parts = [new_text_part(text) for text in texts]
    if first:
        parts.append(new_data_part(meta))
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), context_id=context_id,
                   task_id=task_id or "", parts=parts, metadata=meta)
