"""User simulators: the base class, personas, and the built-in simulators."""

from ._personas import Persona, get_persona, load_personas
from ._protocol import UserContext, UserReply, UserSimulator
from ._scripted import ScriptedUser

__all__ = ["Persona", "ScriptedUser", "UserContext", "UserReply", "UserSimulator", "get_persona", "load_personas"]
