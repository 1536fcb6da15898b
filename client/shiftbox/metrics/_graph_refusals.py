"""Graph refusals (a shiftbox measure; VitaBench refuses nothing for order): the share of the agent's tool calls
that the graph-refusal option refused because a tool they require had not succeeded earlier in the episode. A
figure beside TUE (those calls also count as failed there), measured only for simulations whose server refused
out-of-order calls (`ServerInfo.graph_refusal`, `--graph-refusal`).

A refusal is a `precondition_failed` error carrying `missing_steps` (`shiftbox_servers.kit.is_graph_refusal`);
a domain's own precondition failures (a card already locked) are not counted.
"""

from __future__ import annotations

from shiftbox_servers.kit import is_graph_refusal

from ..trajectory import Trajectory
from ._model import GraphRefusalAggregate, GraphRefusalScore


def graph_refusal_score(trajectory: Trajectory) -> GraphRefusalScore | None:
    """The simulation's calls and how many the graph refused; None when no server of it refused out-of-order calls."""
    if not any(info.graph_refusal for info in trajectory.servers.values()):
        return None
    calls = trajectory.tool_calls
    refused = sum(c.is_error and is_graph_refusal(c.result) for c in calls)
    return GraphRefusalScore(calls=len(calls), refused=refused, share=refused / len(calls) if calls else None)


def aggregate_graph_refusals(scores: list[GraphRefusalScore | None]) -> GraphRefusalAggregate | None:
    """Pooled over the calls of the simulations with graph refusal; None when none had it."""
    present = [s for s in scores if s is not None]
    if not present:
        return None
    calls, refused = sum(s.calls for s in present), sum(s.refused for s in present)
    return GraphRefusalAggregate(simulations=len(present), calls=calls, refused=refused,
                                 share=refused / calls if calls else None)
