"""The one way shiftbox imports litellm (agents, user simulators and judges all go through here).

litellm must be configured before its first import:
- `LITELLM_LOCAL_MODEL_COST_MAP=True`: use the bundled price map; otherwise the import fetches one
  from the internet (no internet here, and a fetched map would make costs drift between runs).
- `DISABLE_AIOHTTP_TRANSPORT=True`: async calls go through httpx like sync ones, so one recorder
  (vcrpy cassettes) sees every LLM exchange.
Both are set with `os.environ.setdefault`, so an explicit setting by the caller wins.

The import is slow (several seconds: litellm builds many pydantic models), so import it lazily,
only where an LLM is actually used.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "DISABLE_AIOHTTP_TRANSPORT": "True",
}


def import_litellm() -> ModuleType:
    """Set litellm's environment, import it, silence its banners and return the module."""
    for key, value in LITELLM_ENV.items():
        os.environ.setdefault(key, value)
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def usage_of(response: Any, litellm: ModuleType | None = None) -> dict[str, float]:
    """prompt_tokens, completion_tokens and cost_usd of one completion response.

    Cost comes from litellm's local price map; a model it does not know (a local or fake model) costs
    0.0 rather than failing the call that produced the response.
    """
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "completion_tokens", None) or 0
    cost = 0.0
    try:
        lib = litellm or import_litellm()
        cost = float(lib.completion_cost(completion_response=response) or 0.0)
    except Exception:
        cost = 0.0
    return {"prompt_tokens": float(prompt), "completion_tokens": float(completion), "cost_usd": cost}


def add_usage(total: dict[str, float], usage: dict[str, float]) -> dict[str, float]:
    """Add `usage` into `total` in place (keys summed; a `calls` counter is kept) and return it."""
    for key, value in usage.items():
        total[key] = total.get(key, 0.0) + float(value)
    total["calls"] = total.get("calls", 0.0) + 1.0
    return total
