"""Connecting to domain servers (in-process, stdio, HTTP) and recording every tool call."""

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

__all__ = ["SERVER_MODES", "CallOutcome", "Episode", "InfrastructureError", "ServerMode", "World",
           "episode_id_for", "open_world"]
