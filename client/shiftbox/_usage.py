"""The usage LLM calls account for (tokens, cost, calls): data on the ground floor, so trajectories, metrics and
reports can carry it without importing the LLM boundary (`shiftbox.llm` re-exports it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_serializer

COST_FIELD = "shiftbox_cost_usd"
"""Added to every response: its price from litellm's local price map (0.0 for models it does not price)."""


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
