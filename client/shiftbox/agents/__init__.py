"""Agents: the base class every agent derives from, and the built-in ones."""

from ._external import ExternalAgent, ExternalAgentError
from ._protocol import Agent, AgentContext, AgentReply

__all__ = ["Agent", "AgentContext", "AgentReply", "ExternalAgent", "ExternalAgentError"]
