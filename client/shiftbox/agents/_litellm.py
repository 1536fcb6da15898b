"""The LLM agent: any litellm model behind the domain policy, calling the domain's MCP tools.

Every completion goes through the one LLM boundary (`shiftbox.llm`, via
`shiftbox.llm_errors.complete_with_retries`), so it is recorded and replayed like every other call.

What the model is sent (all of it deterministic, so replays match request for request):
- system: a short instruction block, then the domain policy (`AgentContext.policy`);
- tools: the MCP tools as OpenAI function schemas (`name`, `description`, `parameters` = the tool's
  `inputSchema` unchanged);
- the conversation: user messages as `user`; assistant messages with their text and `tool_calls`
  (arguments re-serialized as sorted JSON); tool results as `tool` with their `tool_call_id`;
- params: `temperature` (default 0), `seed` (default: the simulation's derived seed), `max_tokens`
  when set, `parallel_tool_calls: false` under one-tool-per-turn, `drop_params` (so a provider that
  lacks e.g. `seed` ignores it instead of failing), and any `extra.<name>=<value>` option.

Tool-call ids are the harness's, not the provider's: call i of agent turn t is `call_<t>_<i>`
(t = the number of assistant messages so far, so it equals `Message.agent_turn`). Those ids go into
the trajectory and come back in later requests, so a provider's random ids never reach a recording.

Arguments that are not a JSON object (malformed JSON, a truncated completion, a JSON list) are not
dropped and do not crash the agent: the call is kept with arguments `{"__invalid_json__": "<raw>"}`.
The server's strict validation rejects the unknown key as `invalid_arguments`, so the trajectory
shows the agent's mistake and TUE's parameter validity counts it, exactly like any other bad call.
An empty arguments string counts as `{}` (some providers send that for tools without parameters).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from shiftbox_servers.kit import escape_lone_surrogates

from ..llm import COST_FIELD, LLMConnection, LLMRequest
from ..llm_errors import complete_with_retries
from ..trajectory import Message, ToolCall
from ._protocol import Agent, AgentContext, AgentReply

INVALID_JSON_KEY = "__invalid_json__"

AGENT_INSTRUCTIONS = """\
You are a customer service agent. Help the user according to the <policy> below, using the tools \
you are given.
- In each turn, either send a message to the user, or call tools{parallel}.
- Use only facts the user gave you or that tools returned; never invent ids, amounts or dates.
- Do not tell the user something was done unless a tool result shows it was.
- Tool arguments must be valid JSON matching the tool's parameters."""

SYSTEM_PROMPT = "<instructions>\n{instructions}\n</instructions>\n<policy>\n{policy}\n</policy>"

# -- options shared by the LLM agent and the LLM user simulator ----------------------------------------

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
}
"""Option name -> type, for --agent-arg / --user-arg KEY=VALUE pairs."""

RESERVED_EXTRA = frozenset({"model", "messages", "tools", "api_key", "api_base", "base_url", "timeout",
                            "max_retries", "num_retries", "stream", "n", "temperature", "seed", "max_tokens",
                            "drop_params"})
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
        return json.loads(raw)
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
    extra: dict[str, Any] = field(default_factory=dict)

    def connection(self) -> LLMConnection:
        """Where to call. The key is read from `api_key_env` now (None: litellm's own env lookup)."""
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return LLMConnection(api_base=self.api_base, api_key=api_key, timeout_s=self.timeout)

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


def count_usage(total: dict[str, float], model: str, response: dict[str, Any]) -> None:
    """Add one response's tokens and cost to `total` (the cost was priced live by the LLM boundary and
    travels in the response, so a replay counts the same without importing litellm)."""
    usage = response.get("usage") or {}
    prompt = float(usage.get("prompt_tokens") or 0)
    completion = float(usage.get("completion_tokens") or 0)
    cost = float(response.get(COST_FIELD) or 0.0)
    total["prompt_tokens"] = total.get("prompt_tokens", 0.0) + prompt
    total["completion_tokens"] = total.get("completion_tokens", 0.0) + completion
    total["cost_usd"] = total.get("cost_usd", 0.0) + cost
    total["calls"] = total.get("calls", 0.0) + 1.0


def first_message(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices") or []
    if not choices:
        return {}
    return choices[0].get("message") or {}


# -- conversions ---------------------------------------------------------------------------------------


def tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool (name, description, inputSchema) as an OpenAI function tool."""
    parameters = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {"type": "function",
            "function": {"name": tool["name"], "description": tool.get("description") or "",
                         "parameters": parameters}}


def arguments_json(arguments: dict[str, Any]) -> str:
    """Arguments as the model sees them again; a lone surrogate it sent stays a JSON escape (UTF-8 cannot
    carry it, so the next request could not be sent)."""
    return escape_lone_surrogates(json.dumps(arguments, sort_keys=True, ensure_ascii=False))


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A provider's tool-call arguments as a dict; not a JSON object -> {"__invalid_json__": raw}."""
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        value = None
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: str(raw)}


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation as the agent's model sees it."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "content": m.content or ""})
        elif m.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                item["tool_calls"] = [{"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": arguments_json(c.arguments)}}
                                      for c in m.tool_calls]
            elif not m.content:
                item["content"] = ""
            out.append(item)
        else:
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content or ""})
    return out


# -- the agent -----------------------------------------------------------------------------------------


class LiteLLMAgent(Agent):
    """`litellm:<model>`: the domain policy as system prompt, MCP tools as function schemas."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        self.name = f"litellm:{settings.model}"
        self.context: AgentContext | None = None
        self.system_prompt = ""
        self.tools: list[dict[str, Any]] = []
        self.usage: dict[str, float] = {}
        """Running totals over this agent's calls: prompt_tokens, completion_tokens, cost_usd, calls."""

    async def start(self, context: AgentContext) -> None:
        self.context = context
        parallel = " (at most one tool call per turn)" if context.one_tool_per_turn else \
            " (several independent tool calls may go in one turn)"
        instructions = AGENT_INSTRUCTIONS.format(parallel=parallel)
        self.system_prompt = SYSTEM_PROMPT.format(instructions=instructions, policy=context.policy.strip())
        self.tools = [tool_schema(t) for t in context.tools]

    async def close(self) -> None:
        return None

    def request(self, messages: list[Message]) -> LLMRequest:
        """The completion request for the next assistant message (pure: same conversation, same request)."""
        if self.context is None:
            raise RuntimeError("LiteLLMAgent.respond() called before start()")
        params = self.settings.params(self.context.seed)
        if self.context.one_tool_per_turn and self.tools:
            params["parallel_tool_calls"] = False
        return LLMRequest(role="agent", model=self.settings.model,
                          messages=[{"role": "system", "content": self.system_prompt},
                                    *to_openai_messages(messages)],
                          tools=self.tools or None, params=params)

    async def respond(self, messages: list[Message]) -> AgentReply:
        request = self.request(messages)
        response = await complete_with_retries(
            request, self.settings.connection(), retries=self.settings.max_retries,
            backoff_s=self.settings.retry_backoff, what=f"agent {self.name}")
        count_usage(self.usage, self.settings.model, response)
        turn = sum(1 for m in messages if m.role == "assistant")
        return self.reply_from(first_message(response), turn)

    def reply_from(self, message: dict[str, Any], turn: int) -> AgentReply:
        """The provider's message as an AgentReply, with the harness's own tool-call ids."""
        raw_calls = message.get("tool_calls") or []
        if self.context is not None and self.context.one_tool_per_turn:
            raw_calls = raw_calls[:1]
        calls = [ToolCall(id=f"call_{turn}_{i}", name=((raw.get("function") or {}).get("name") or ""),
                          arguments=parse_arguments((raw.get("function") or {}).get("arguments")))
                 for i, raw in enumerate(raw_calls)]
        content = message.get("content")
        if isinstance(content, list):  # content parts (some providers): keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return AgentReply(content=content or None, tool_calls=calls)


def litellm_agent(model: str | None, options: dict[str, str]) -> LiteLLMAgent:
    settings, _ = parse_llm_options("litellm agent", model, options)
    return LiteLLMAgent(settings)
