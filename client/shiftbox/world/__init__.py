"""Connecting to domain servers (in-process, stdio, HTTP, container) and recording every tool call."""

from ._docker import DockerError
from ._world import (
           SERVER_MODES,
           CallOutcome,
           Episode,
           InfrastructureError,
           ServerMode,
           World,
           episode_id_for,
           open_world,
)

__all__ = ["SERVER_MODES", "CallOutcome", "DockerError", "Episode", "InfrastructureError", "ServerMode", "World",
           "episode_id_for", "open_world"]
