"""Graph refusals (VitaBench): the share of the agent's tool calls that the dependency graph refused because a
tool they depend on had not succeeded earlier in the episode. A figure beside TUE (those calls also count as
failed there), measured only for simulations whose server enforced the graph (`ServerInfo.dependency_graph`).

A refusal is a `precondition_failed` error carrying `missing_steps` (`shiftbox_servers.kit.is_graph_refusal`);
a domain's own precondition failures (a card already locked) are not counted.
"""

from __future__ import annotations

from shiftbox_servers.kit import is_graph_refusal

from ..trajectory import Trajectory
from ._model import GraphRefusalAggregate, GraphRefusalScore


def graph_refusal_score(trajectory: Trajectory) -> GraphRefusalScore | None:
    """The simulation's calls and how many the graph refused; None when no server of it enforced a graph."""
    if not any(info.dependency_graph for info in trajectory.servers.values()):
        return None
    calls = trajectory.tool_calls
    refused = sum(c.is_error and is_graph_refusal(c.result) for c in calls)
    return GraphRefusalScore(calls=len(calls), refused=refused, share=refused / len(calls) if calls else None)


def aggregate_graph_refusals(scores: list[GraphRefusalScore | None]) -> GraphRefusalAggregate | None:
    """Pooled over the calls of the simulations in graph mode; None when none was."""
    present = [s for s in scores if s is not None]
    if not present:
        return None
    calls, refused = sum(s.calls for s in present), sum(s.refused for s in present)
    return GraphRefusalAggregate(simulations=len(present), calls=calls, refused=refused,
                                 share=refused / calls if calls else None)
