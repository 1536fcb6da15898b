"""What crosses the LLM boundary: a request and where to send it (the usage a response accounts for is `.._usage`)."""

from __future__ import annotations

import functools
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

    @classmethod
    def of_role(cls, role: Role, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                params: dict[str, Any]) -> LLMRequest:
        """A request a role of shiftbox's built from JSON values of its own, taken as they are: not validated (and so
        not copied) again on every completion. Its messages and tools are the role's own objects, sent again on later
        calls, which the boundary never changes (the body's templates know a tools list sent before by identity)."""
        return cls.model_construct(role=role, model=model, messages=messages, tools=tools, params=params)


class LLMConnection(BaseModel):
    """Where and how to call: never recorded."""

    model_config = ConfigDict(extra="forbid")

    api_base: str | None = None
    api_key: str | None = None
    api_key_env: str | None = Field(None, description="the variable `api_key` was read from, named in errors")
    timeout_s: float = 120.0
    fast_path: bool = Field(True, description="OpenAI-compatible endpoints (openai/, hosted_vllm/ with an "
                                              "api_base) skip the openai SDK and litellm's logging")


@functools.lru_cache(maxsize=64)
def connection_for(api_base: str | None, api_key: str | None, api_key_env: str | None, timeout_s: float,
                   fast_path: bool) -> LLMConnection:
    """The connection of these values, made once rather than for every completion of the settings that name them
    (it holds the key: `forget_api_keys` drops it). Never changed by its users: one object serves every call."""
    return LLMConnection(api_base=api_base, api_key=api_key, api_key_env=api_key_env, timeout_s=timeout_s,
                         fast_path=fast_path)


def first_message(response: dict[str, Any]) -> dict[str, Any]:
    """`choices[0].message` of a response, or {} when it has no choices."""
    choices = response.get("choices") or []
    if not choices:
        return {}
    return choices[0].get("message") or {}
