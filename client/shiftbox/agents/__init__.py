"""Agents: the base class every agent derives from, and the built-in ones."""

from ._external import MAX_LINE_BYTES, ExternalAgent, ExternalAgentError
from ._litellm import (
    INVALID_JSON_KEY,
    LiteLLMAgent,
    agent_system_prompt,
    parse_arguments,
    reply_from_message,
    to_openai_messages,
    tool_schema,
)
from ._protocol import Agent, AgentContext, AgentReply
from ._sandbox import sandbox_command, sandbox_prefix, sandbox_status
from ._scripted import SCRIPTED_AGENTS, OracleAgent, scripted_agent

__all__ = ["MAX_LINE_BYTES", "SCRIPTED_AGENTS", "tool_schema", "INVALID_JSON_KEY", "Agent", "AgentContext", "AgentReply", "ExternalAgent", "ExternalAgentError",
           "LiteLLMAgent", "OracleAgent", "agent_system_prompt", "parse_arguments", "reply_from_message",
           "sandbox_command", "sandbox_prefix", "sandbox_status", "scripted_agent", "to_openai_messages"]
