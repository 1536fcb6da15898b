"""User simulators: the base class, personas, and the built-in simulators."""

from ._llm import (
           OPENING,
           LLMUser,
           next_goal_index,
           persona_text,
           simulator_view,
           strip_control_tokens,
)
from ._personas import Persona, get_persona, load_personas
from ._protocol import UserContext, UserReply, UserSimulator
from ._scripted import FACT_LABELS, ScriptedUser, parse_known_info, usable_requests

__all__ = ["FACT_LABELS", "OPENING", "LLMUser", "Persona", "ScriptedUser", "UserContext", "UserReply", "UserSimulator",
           "get_persona", "load_personas", "next_goal_index", "parse_known_info", "persona_text", "simulator_view",
           "strip_control_tokens", "usable_requests"]
