"""Connecting to domain servers (in-process, stdio, HTTP, container), recording every tool call, and the gateway.

Its errors live in `shiftbox.errors` and are re-exported here.
"""

from ..errors import DockerError, InfrastructureError, ToolContractError
from ._gateway import Gateway, GatewayLink, RunGateway, open_run_gateway, serve_http
from ._world import (
    SERVER_MODES,
    CallOutcome,
    EpisodeClient,
    ServerMode,
    ToolSession,
    World,
    apply_initial_state,
    client_result,
    episode_id_for,
    open_world,
    tool_message_content,
)

__all__ = ["SERVER_MODES", "CallOutcome", "DockerError", "EpisodeClient", "Gateway", "GatewayLink", "InfrastructureError",
           "RunGateway", "ServerMode", "ToolContractError", "ToolSession", "World", "apply_initial_state", "client_result",
           "episode_id_for", "open_run_gateway", "open_world", "serve_http", "tool_message_content"]
