"""The one live call shiftbox makes: through litellm (imported by `_import.import_litellm` when needed), or
its fast path for OpenAI-compatible endpoints (`_openai_http`, which imports litellm only for what it cannot
build or convert itself), and the call's price.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from types import ModuleType
from typing import Any

from .._jsonl import dump_json
from .._usage import COST_FIELD
from ._import import import_litellm
from ._model import LLMConnection, LLMRequest
from ._openai_http import call_openai_http, fast_route
from ._prices import known_model


@functools.lru_cache(maxsize=256)
def _priced(litellm: ModuleType, model: str) -> bool:
    """Whether litellm's price map prices the model at all (a local or fake model raises for any count)."""
    try:
        litellm.cost_per_token(model=model, prompt_tokens=0, completion_tokens=0)
        return True
    except Exception:
        return False


@functools.lru_cache(maxsize=4096)
def price_usd(litellm: ModuleType, model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """The price of a call from litellm's local price map; 0.0 for a model it does not price (local, fake),
    rather than a failure. Remembered per model and token counts: the map does not change while a run goes
    (a model registered with `litellm.register_model` must be registered before its first call)."""
    if not _priced(litellm, model):
        return 0.0
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return float(prompt_cost + completion_cost)
    except Exception:
        return 0.0


def fast_path_price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """A fast-path call's price, as `price_usd` gives it: 0.0 for a model litellm's price map does not know
    (found without importing litellm), else litellm's figure."""
    if "litellm" not in sys.modules and not known_model(model):
        return 0.0
    return price_usd(import_litellm(), model, prompt_tokens, completion_tokens)


async def call_litellm(request: LLMRequest, connection: LLMConnection) -> dict[str, Any]:
    """One live completion as plain JSON, without volatile fields and with its price (`COST_FIELD`), priced
    once, for the model the user named. OpenAI-compatible endpoints take the fast path (`_openai_http`)."""
    route = fast_route(request, connection)
    computed_cost = None  # litellm's own figure, on its path (the model called is the model named there)
    if route is not None:
        data = await call_openai_http(request, connection, route)
    else:
        litellm = import_litellm()
        kwargs: dict[str, Any] = dict(request.params)
        if request.tools:
            kwargs["tools"] = copy.deepcopy(request.tools)
        response = await litellm.acompletion(  # copies: a role's messages and tools are sent again, unchanged
            model=request.model, messages=copy.deepcopy(request.messages), api_base=connection.api_base,
            api_key=connection.api_key, timeout=connection.timeout_s, num_retries=0,
            max_retries=0, **kwargs)  # never retries itself: complete_with_retries does, countably
        computed_cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        data = json.loads(dump_json(response))  # plain JSON values (a lone surrogate the model sent survives)
    for volatile in ("id", "created", "system_fingerprint"):  # differ per call; never part of results
        data.pop(volatile, None)
    usage = data.get("usage") or {}
    prompt_tokens, completion_tokens = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    if isinstance(computed_cost, int | float) and not isinstance(computed_cost, bool):
        data[COST_FIELD] = float(computed_cost)  # computed once, by litellm
    elif route is not None:
        data[COST_FIELD] = fast_path_price(request.model, prompt_tokens, completion_tokens)
    else:  # a model litellm did not price (then 0.0, as price_usd gives)
        data[COST_FIELD] = price_usd(import_litellm(), request.model, prompt_tokens, completion_tokens)
    return data
