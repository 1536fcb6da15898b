"""The hand-off to a human agent that every customer-service domain offers (tau2's `transfer_to_human_agents`).

Declared here once; a domain adds it to its tool set with its own wording (`add_transfer_tool`) and keeps
a `transfers (transfer_id, summary, requested_at)` table for it.
"""

# No `from __future__ import annotations`: the tool's `summary` annotation is built per domain at
# declaration time, and the kit evaluates signatures in this module's globals.

import inspect

from pydantic import BaseModel

from ._episode import Episode
from ._graph import ToolConditions, conditions
from ._tools import ToolSet
from ._types import text

TRANSFER_TOOL = "transfer_to_human_agents"


def transfer_conditions(party: str = "customer") -> ToolConditions:
    """The hand-off's precondition and postcondition in dependency-graph mode (`party`: who the agent serves)."""
    return conditions("the conversation is handed to a human agent; end it",
                      pre=f"the {party} explicitly asked for a human, or the request is beyond what the tools can do")


class Transfer(BaseModel):  # what the tool returns; no docstring: it would enter the published output schema
    transfer_id: str
    summary: str
    requested_at: str
    message: str


def record_transfer(ep: Episode, summary: str) -> Transfer:
    """Store a hand-off in the episode's `transfers` table (it is part of the state, so metrics and replays
    see it) and return it."""
    transfer_id = ep.next_id("transfers", "transfer_id", "xfer")
    now = ep.now_iso()
    ep.execute("INSERT INTO transfers VALUES (?, ?, ?)", (transfer_id, summary, now))
    return Transfer(transfer_id=transfer_id, summary=summary, requested_at=now,
                    message="Transfer successful; a human agent will continue the conversation.")


def add_transfer_tool(tools: ToolSet, *, description: str, party: str = "customer") -> None:
    """Declare `transfer_to_human_agents` in `tools`: the agent reads `description` (the tool's docstring,
    in the domain's words of when to hand off) and `party` names who the summary is about."""
    summary_type = text(f"summary of the {party}'s issue for the human agent", max_length=2000)

    def transfer_to_human_agents(ep: Episode, summary: summary_type) -> Transfer:  # type: ignore[valid-type]
        return record_transfer(ep, summary)

    transfer_to_human_agents.__doc__ = inspect.cleandoc(description)
    tools.tool(read_only=False)(transfer_to_human_agents)
