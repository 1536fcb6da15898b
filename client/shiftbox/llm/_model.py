"""What crosses the LLM boundary: a request and where to send it (the usage a response accounts for is `.._usage`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["agent", "user", "judge"]
"""Who asks: the agent, the user simulator, or the LLM judge scoring a run."""


class LLMRequest(BaseModel):
    """What decides a completion. Connection details (api_base, api_key) are deliberately not here."""

    role: Role
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    params: dict[str, Any] = Field(default_factory=dict, description="temperature, seed, tool_choice, …")


class LLMConnection(BaseModel):
    """Where and how to call: never recorded."""

    model_config = ConfigDict(extra="forbid")

    api_base: str | None = None
    api_key: str | None = None
    api_key_env: str | None = Field(None, description="the variable `api_key` was read from, named in errors")
    timeout_s: float = 120.0
    fast_path: bool = Field(True, description="OpenAI-compatible endpoints (openai/, hosted_vllm/ with an "
                                              "api_base) skip the openai SDK and litellm's logging")


def first_message(response: dict[str, Any]) -> dict[str, Any]:
    """`choices[0].message` of a response, or {} when it has no choices."""
    choices = response.get("choices") or []
    if not choices:
        return {}
    return choices[0].get("message") or {}
