"""`shiftbox serve`: a domain's tools for any MCP client through the recording gateway, each session a trajectory
in a run directory that `shiftbox metrics` scores (docs/agents.md).

`serve_gateway` is the command's library call; `serve_sessions` serves an already prepared run directory;
`GatewaySessions` records the sessions of one gateway. Its errors live in `shiftbox.errors`.
"""

from ._plan import TRANSPORTS, serve_gateway, session_task
from ._serve import OPEN_SESSION_TASK, open_session_task, serve_sessions, stopped_message
from ._sessions import CALLS_FILE, GATEWAY_AGENT, GATEWAY_USER, GatewaySessions

__all__ = [
    "CALLS_FILE", "GATEWAY_AGENT", "GATEWAY_USER", "OPEN_SESSION_TASK", "TRANSPORTS", "GatewaySessions",
    "open_session_task", "serve_gateway", "serve_sessions", "session_task", "stopped_message",
]
