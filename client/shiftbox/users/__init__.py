"""User simulators: the protocol, personas, and the built-in simulators."""

from ._personas import Persona, get_persona, load_personas
from ._protocol import UserContext, UserReply, UserSimulator
from ._scripted import ScriptedUser

__all__ = ["Persona", "ScriptedUser", "UserContext", "UserReply", "UserSimulator", "get_persona", "simulator_identity",
           "load_personas"]


def simulator_identity(user: object):
    """The `UserSimulatorInfo` of a user simulator: its own `identity()` if it has one, else what its
    name (`kind:model`) says, with the persona catalog's version and digest."""
    from ..trajectory import UserSimulatorInfo
    from ._personas import catalog_identity

    own = getattr(user, "identity", None)
    if callable(own):
        return own()
    name = str(getattr(user, "name", type(user).__name__))
    kind, _, model = name.partition(":")
    version, digest = catalog_identity()
    return UserSimulatorInfo(kind=kind, model=model or None, personas_version=version, personas_sha256=digest)
