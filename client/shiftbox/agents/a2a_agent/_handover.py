"""What each A2A message carries besides the user's words: where this simulation's tools are.

Every message's `metadata` holds `shiftbox/mcp_url`, `shiftbox/domain` and `shiftbox/seed`; the first
message of a conversation also holds `shiftbox/policy` (the domain policy, empty under `--policy none`).
Two ways to put it in the message itself (`--agent-arg handover=`): `metadata` (the default) adds the same
object as a data part after the first message's text, for agents whose framework passes on parts but not
metadata; `text` writes it into the message's one text part (`handover_text`), for agents written to read
nothing but text (off-the-shelf A2A agents, AgentBeats participants): docs/a2a.md's plain-text convention.
"""

from __future__ import annotations

import uuid
from typing import Any

MCP_URL_KEY = "shiftbox/mcp_url"
DOMAIN_KEY = "shiftbox/domain"
SEED_KEY = "shiftbox/seed"
POLICY_KEY = "shiftbox/policy"
HANDOVERS = ("metadata", "text")
"""`--agent-arg handover=` values: the handover as metadata and a data part, or also written into the text."""
TOOLS_LINE = "MCP tools: "
"""The line of every text-handover message that gives the tools' URL (`TOOLS_LINE` + the URL)."""
USER_LINE = "Customer: "
"""The line after which a text-handover message holds the user's words, as the user wrote them."""


def handover(mcp_url: str, domain: str, seed: int, policy: str | None) -> dict[str, Any]:
    """The metadata of one message (`policy` only on a conversation's first message)."""
    meta: dict[str, Any] = {MCP_URL_KEY: mcp_url, DOMAIN_KEY: domain, SEED_KEY: seed}
    if policy is not None:
        meta[POLICY_KEY] = policy
    return meta


def handover_text(texts: list[str], meta: dict[str, Any]) -> str:
    """The user's words with the handover written before them: on a conversation's first message (the one with
    the policy) what the agent is for, the tools' URL and the policy; on every later one the tools' URL again, so
    an agent that keeps nothing between messages still finds its tools."""
    head = []
    if POLICY_KEY in meta:
        head.append(f"You are the {meta[DOMAIN_KEY]} customer-service agent in this conversation. Act only through "
                    "the tools of the MCP server below (streamable HTTP: list its tools, then call them), follow the "
                    "policy, and answer the customer in plain text.")
        head.append(f"Domain: {meta[DOMAIN_KEY]}")
    head.append(f"{TOOLS_LINE}{meta[MCP_URL_KEY]}")
    if meta.get(POLICY_KEY):
        head.append(f"Policy:\n<policy>\n{meta[POLICY_KEY]}\n</policy>")
    words = "\n".join(texts)
    return "\n".join(head) + f"\n\n{USER_LINE}{words}"


def user_message(texts: list[str], meta: dict[str, Any], *, context_id: str, task_id: str | None,
                 first: bool, how: str = "metadata") -> Any:
    """The A2A message (a2a-sdk's `Message`) that hands the user's words to the agent, the handover as `how` says
    (one of `HANDOVERS`); the metadata is always there."""
    from a2a.helpers import new_data_part, new_text_part
    from a2a.types import Message, Role

    if how == "text":
        parts = [new_text_part(handover_text(texts, meta))]
    else:
        parts = [new_text_part(text) for text in texts]
        if first:
            parts.append(new_data_part(meta))
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), context_id=context_id,
                   task_id=task_id or "", parts=parts, metadata=meta)
