"""What crosses the LLM boundary: a request, where to send it, and the usage a response accounts for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

Role = Literal["agent", "user", "judge"]
"""Who asks: the agent, the user simulator, or the LLM judge scoring a run."""

COST_FIELD = "shiftbox_cost_usd"
"""Added to every response: its price from litellm's local price map (0.0 for models it does not price)."""


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


class Usage(BaseModel):
    """Tokens, cost and number of calls, summed over LLM calls (one role's, or the judge's).

    Counts are written as floats (`"calls": 2.0`), as trajectories and metrics.json always had them.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    @field_serializer("prompt_tokens", "completion_tokens", "calls")
    def _count_as_float(self, value: int) -> float:
        return float(value)

    @classmethod
    def of_response(cls, response: dict[str, Any]) -> Usage:
        """One call's usage. The cost was priced live by the boundary and travels in the response
        (`COST_FIELD`), so a replay counts the same without importing litellm."""
        usage = response.get("usage") or {}
        return cls(prompt_tokens=int(usage.get("prompt_tokens") or 0),
                   completion_tokens=int(usage.get("completion_tokens") or 0),
                   cost_usd=float(response.get(COST_FIELD) or 0.0), calls=1)

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens,
                     cost_usd=self.cost_usd + other.cost_usd, calls=self.calls + other.calls)


def first_message(response: dict[str, Any]) -> dict[str, Any]:
    """`choices[0].message` of a response, or {} when it has no choices."""
    choices = response.get("choices") or []
    if not choices:
        return {}
    return choices[0].get("message") or {}
