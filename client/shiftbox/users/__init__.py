"""User simulators: the protocol, personas, and the built-in simulators."""

from ._protocol import UserContext, UserReply, UserSimulator

__all__ = ["UserContext", "UserReply", "UserSimulator"]
