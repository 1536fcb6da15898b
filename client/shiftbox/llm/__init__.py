"""The one LLM boundary: every completion (agent, user simulator, judge) goes through `complete()`.

Callers use `LLMSettings.complete()` (async, through `_retries`) or `complete_blocking()` (sync: the judge), which
retry transient failures countably and raise the LLM errors of `shiftbox.errors`. Live, the boundary
calls litellm (imported lazily, once, by `import_litellm`); under a cassette bound per simulation
with `use_cassette` it records each exchange, or replays it without touching the network. Every
response carries its price (`COST_FIELD`), so `Usage.of_response` counts a replay like the live run.

`--max-llm-concurrency` is a gate bound with `use_llm_gate`: a live call holds one of its slots, a replay none.
`LocalLlmGate` is shared by one process's simulations, `ProcessLlmGate` by worker processes on one machine,
`RayLlmGate` by Ray actors on a cluster (ray is imported only when one is made).

Live calls to OpenAI-compatible endpoints (`openai/`, `hosted_vllm/` with an api_base) take a fast path
(`_openai_http`: litellm's request body and response conversion, its own connection pool, no openai SDK, httpx's client only where needed); for
the common cases it makes both itself, so a run whose every role is served so never imports litellm.

Modules: `_model` (request, connection; `Usage` is `shiftbox._usage`), `_import` (litellm's one import), `_litellm` (the one
call and its price), `_openai_http` (the fast path), `_http_pool` (its connection pool), `_http_connection` (the pool's HTTP/1.1 connections), `_http_bare` (its requests to a plain http endpoint, made without httpx), `_http_client` (its httpx client, for the rest), `_openai_body` (its request bodies: litellm's building or its own, kept
per route, model, params and tools), `_openai_response` (its responses converted as litellm does), `_prices` (litellm's
price map read without importing litellm),
`_cassette` (record/replay), `_http_cassette` (record/replay at the HTTP level, vcrpy), `_gate` (the concurrency gates), `_boundary` (`complete`), `_retries` (retries,
causes, errors raised), `_blocking` (sync callers), `_settings` (KEY=VALUE options of the LLM agent and user simulator),
`_credentials` (naming a missing or refused key), `_preflight` (one cheap request per endpoint before a live run).
"""

from .._usage import Usage
from ._blocking import complete_blocking
from ._boundary import complete
from ._cassette import Cassette, first_difference, use_cassette
from ._gate import LlmGate, LocalLlmGate, ProcessLlmGate, RayLlmGate, use_llm_gate
from ._http_cassette import HttpCassette, http_cassette_file
from ._import import import_litellm, set_litellm_environment
from ._litellm import price_usd
from ._model import LLMConnection, LLMRequest, Role, first_message
from ._openai_http import forget_api_keys
from ._preflight import PREFLIGHT_TIMEOUT_S, Endpoint, LLMEndpoint, check_endpoints
from ._settings import LLMSettings, parse_llm_options

__all__ = ["PREFLIGHT_TIMEOUT_S", "Cassette", "Endpoint", "LLMEndpoint", "check_endpoints", "LLMConnection", "LLMRequest", "LLMSettings", "LlmGate", "HttpCassette",
           "LocalLlmGate", "ProcessLlmGate", "RayLlmGate", "Role", "Usage",
           "complete", "complete_blocking", "first_difference", "first_message", "forget_api_keys", "http_cassette_file",
           "import_litellm", "parse_llm_options", "set_litellm_environment", "price_usd", "use_cassette", "use_llm_gate"]
