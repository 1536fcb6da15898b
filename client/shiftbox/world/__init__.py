"""Connecting to domain servers (in-process, stdio, HTTP, container), recording every tool call, and the gateway.

Its errors live in `shiftbox.errors` and are re-exported here.
"""

from ..errors import DockerError, InfrastructureError, ToolContractError
from ._cross import CrossEpisode, CrossWorld, namespaced_tool, snapshot_dirs
from ._docker import (
    RUN_FLAGS,
    Image,
    check_server,
    docker_command,
    find_image,
    image_ref,
    inspect_image,
)
from ._gateway import Gateway, GatewayLink, RunGateway, open_run_gateway, serve_http
from ._open import open_world
from ._output_schemas import CompiledOutputSchemas, compile_output_schemas
from ._serve import (
    OPEN_SESSION_TASK,
    ClientSessions,
    open_session_task,
    serve_sessions,
    stopped_message,
)
from ._sessions import CALLS_FILE, GATEWAY_AGENT, GATEWAY_USER, GatewaySessions, run_dir_lock
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
    tool_message_content,
)

__all__ = [
    "CALLS_FILE", "CrossEpisode", "CrossWorld", "namespaced_tool", "snapshot_dirs", "GATEWAY_AGENT", "GATEWAY_USER", "OPEN_SESSION_TASK", "RUN_FLAGS", "SERVER_MODES", "CallOutcome",
    "ClientSessions", "CompiledOutputSchemas", "DockerError", "EpisodeClient", "Gateway", "GatewayLink", "GatewaySessions", "Image",
    "InfrastructureError", "RunGateway", "ServerMode", "ToolContractError", "ToolSession", "World",
    "apply_initial_state", "check_server", "client_result", "compile_output_schemas", "docker_command", "episode_id_for", "find_image",
    "image_ref", "inspect_image", "open_run_gateway", "open_session_task", "open_world", "run_dir_lock",
    "serve_http", "serve_sessions", "stopped_message", "tool_message_content",
]
