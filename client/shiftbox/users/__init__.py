"""User simulators: the base class, personas, and the built-in simulators."""

from ._llm import (
           OPENING,
           LLMUser,
           next_goal_index,
           persona_text,
           prompt_sha256,
           simulator_view,
           stacked_goal_indices,
           strip_control_tokens,
           system_prompt,
)
from ._personas import GoalChange, Persona, get_persona, load_personas
from ._protocol import UserContext, UserReply, UserSimulator
from ._reference_texts import ReferenceTexts, load_reference_texts
from ._scripted import FACT_LABELS, PROTOCOLS, ScriptedUser, parse_known_info, usable_requests

__all__ = ["FACT_LABELS", "OPENING", "PROTOCOLS", "GoalChange", "LLMUser", "Persona", "ReferenceTexts", "ScriptedUser",
           "UserContext", "UserReply", "UserSimulator", "get_persona", "load_personas", "load_reference_texts",
           "next_goal_index", "parse_known_info", "persona_text", "prompt_sha256", "simulator_view",
           "stacked_goal_indices", "strip_control_tokens", "system_prompt", "usable_requests"]
