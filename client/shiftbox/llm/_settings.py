"""A model and how to call it, from `--agent-arg` / `--user-arg` KEY=VALUE options (agent and user simulator)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from shiftbox_servers.kit import loads_json

from ._model import LLMConnection, LLMRequest, Role, connection_for
from ._openai_http import builds_without_litellm
from ._preflight import LLMEndpoint
from ._retries import complete_with_retries

COMMON_OPTIONS: dict[str, type] = {
    "api_base": str,
    "api_key_env": str,
    "temperature": float,
    "seed": int,
    "max_tokens": int,
    "max_retries": int,
    "timeout": float,
    "retry_backoff": float,
    "drop_params": bool,
    "fast_path": bool,
}
"""Option name -> type, for --agent-arg / --user-arg KEY=VALUE pairs."""

RESERVED_EXTRA = frozenset({"model", "messages", "tools", "api_key", "api_base", "base_url", "timeout",
                            "max_retries", "num_retries", "stream", "n", "temperature", "seed", "max_tokens",
                            "drop_params", "fast_path"})
"""Keys an `extra.<k>` option may not set: the harness owns them, or a dedicated option exists."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _convert(what: str, key: str, raw: str, kind: type) -> Any:
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered not in _TRUE | _FALSE:
                raise ValueError
            return lowered in _TRUE
        return kind(raw)
    except ValueError:
        expected = {int: "an integer", float: "a number", bool: "true or false"}.get(kind, kind.__name__)
        raise ValueError(f"{what}: option {key}={raw!r} must be {expected}") from None


def _extra_value(raw: str) -> Any:
    """An `extra.<k>` value: JSON when it parses (numbers, booleans, objects), else the string."""
    try:
        return loads_json(raw, "an option value", finite=False)
    except ValueError:
        return raw


@dataclass(frozen=True)
class LLMSettings:
    """A model and how to call it, parsed from KEY=VALUE options (never holding a key itself)."""

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    seed: int | None = None
    max_tokens: int | None = None
    max_retries: int = 2
    timeout: float = 120.0
    retry_backoff: float = 0.5
    drop_params: bool = True
    fast_path: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def connection(self) -> LLMConnection:
        """Where to call. The key is read from `api_key_env` now (None: litellm's own env lookup)."""
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return connection_for(self.api_base, api_key, self.api_key_env, self.timeout, self.fast_path)

    def endpoint(self, role: Role) -> LLMEndpoint:
        """What the preflight checks for the `role` these settings serve."""
        return LLMEndpoint(model=self.model, api_base=self.api_base, api_key_env=self.api_key_env, role=role)

    def calls_litellm(self) -> bool:
        """Whether its calls need litellm's code: not when the fast path builds them without it (then only a
        response of an unusual shape would import it)."""
        request = LLMRequest(role="agent", model=self.model, messages=[{"role": "user", "content": "?"}],
                             params=self.params(0))
        return not builds_without_litellm(request, self.connection())

    async def complete(self, request: LLMRequest, *, what: str) -> dict[str, Any]:
        """The request through the boundary with these retries, backoff and connection (`what` names
        the caller in error messages)."""
        return await complete_with_retries(request, self.connection(), retries=self.max_retries,
                                           backoff_s=self.retry_backoff, what=what)

    def params(self, default_seed: int | None) -> dict[str, Any]:
        """What decides the completion besides messages and tools (recorded with each request)."""
        params: dict[str, Any] = {"temperature": self.temperature}
        seed = self.seed if self.seed is not None else default_seed
        if seed is not None:
            params["seed"] = seed
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.drop_params:
            params["drop_params"] = True
        params.update(self.extra)
        return params


def parse_llm_options(what: str, model: str | None, options: dict[str, str],
                      specific: dict[str, type] | None = None,
                      ) -> tuple[LLMSettings, dict[str, Any]]:
    """LLMSettings from KEY=VALUE options, plus the caller's own `specific` options (converted).

    Raises ValueError naming the allowed options for anything unknown, and refuses an API key as a
    value: keys come from the environment (`api_key_env=NAME`, or the provider's usual variable).
    """
    if not model:
        raise ValueError(f"{what} needs a model: litellm:<model>, e.g. litellm:openai/gpt-4o-mini")
    specific = specific or {}
    allowed = {**COMMON_OPTIONS, **specific}
    common: dict[str, Any] = {}
    own: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, raw in options.items():
        if key.startswith("extra."):
            name = key.removeprefix("extra.")
            if not name or name in RESERVED_EXTRA:
                raise ValueError(f"{what}: option {key!r} is not allowed (the harness sets {name or 'it'}; "
                                 f"use the dedicated option)")
            extra[name] = _extra_value(raw)
        elif key == "api_key":
            raise ValueError(f"{what}: never pass an API key as an option; put it in an environment variable "
                             "and name that variable: api_key_env=NAME")
        elif key in allowed:
            value = _convert(what, key, raw, allowed[key])
            (own if key in specific else common)[key] = value
        else:
            raise ValueError(f"{what}: unknown option {key!r}; allowed options: "
                             f"{', '.join(sorted(allowed))}, extra.<param>")
    _check(what, common)
    return LLMSettings(model=model, extra=extra, **common), own


def _check(what: str, common: dict[str, Any]) -> None:
    problems = []
    if common.get("temperature", 0.0) < 0:
        problems.append("temperature must be >= 0")
    if common.get("max_retries", 0) < 0:
        problems.append("max_retries must be >= 0")
    if common.get("timeout", 1.0) <= 0:
        problems.append("timeout must be > 0")
    if common.get("retry_backoff", 0.0) < 0:
        problems.append("retry_backoff must be >= 0")
    if "max_tokens" in common and common["max_tokens"] <= 0:
        problems.append("max_tokens must be > 0")
    env = common.get("api_key_env")
    if env is not None and not _ENV_NAME.match(env):
        problems.append(f"api_key_env must name an environment variable (got {env!r})")
    if problems:
        raise ValueError(f"{what}: " + "; ".join(problems))
