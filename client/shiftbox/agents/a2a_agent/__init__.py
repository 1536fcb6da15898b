"""`--agent a2a:URL`: a remote agent served over the A2A protocol, its tools through the run's recording gateway.

The a2a-sdk is an optional extra (`pip install 'shiftbox[a2a]'`): it is imported only when a live run talks
to the agent, never by `import shiftbox` or in replay (a replay plays the recorded replies back).
"""

from ._agent import A2AAgent
from ._handover import (
           DOMAIN_KEY,
           HANDOVERS,
           MCP_URL_KEY,
           POLICY_KEY,
           SEED_KEY,
           TOOLS_LINE,
           USER_LINE,
)
from ._install import INSTALL_A2A, a2a_installed, require_a2a
from ._limits import MAX_JSON_DEPTH, A2AReplyRefused, capped_client

__all__ = ["DOMAIN_KEY", "HANDOVERS", "INSTALL_A2A", "MAX_JSON_DEPTH", "MCP_URL_KEY", "POLICY_KEY", "SEED_KEY",
           "TOOLS_LINE", "USER_LINE", "A2AAgent", "A2AReplyRefused", "a2a_installed", "capped_client", "require_a2a"]
