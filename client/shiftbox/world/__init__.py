"""Connecting to domain servers (in-process, stdio, HTTP, container), recording every tool call, and the gateway.

Its errors live in `shiftbox.errors` and are re-exported here. The gateway (an MCP server) loads with its names on
first use (`shiftbox._lazy`): the in-process world never imports the MCP SDK.
"""

from .._lazy import lazy_exports
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
from ._open import open_world
from ._output_schemas import CompiledOutputSchemas, compile_output_schemas
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
    result_texts,
    tool_message_content,
)

_GATEWAY = ("CallRoute", "Gateway", "GatewayLink", "McpClientInfo", "RunGateway", "open_run_gateway", "serve_http")
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_GATEWAY, "._gateway"))

__all__ = [
    "CallRoute", "CrossEpisode", "CrossWorld", "namespaced_tool", "snapshot_dirs", "RUN_FLAGS", "SERVER_MODES", "CallOutcome",
    "CompiledOutputSchemas", "DockerError", "EpisodeClient", "Gateway", "GatewayLink", "Image",
    "InfrastructureError", "McpClientInfo", "RunGateway", "ServerMode", "ToolContractError", "ToolSession", "World",
    "apply_initial_state", "check_server", "client_result", "compile_output_schemas", "docker_command", "episode_id_for", "find_image",
    "image_ref", "inspect_image", "open_run_gateway", "open_world", "result_texts",
    "serve_http", "tool_message_content",
]
