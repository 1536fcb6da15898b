"""The LLM agent: any litellm model behind the domain policy, calling the domain's MCP tools.

Every completion goes through the one LLM boundary (`shiftbox.llm`, with the retries of its
`LLMSettings`), so it is recorded and replayed like every other call.

What the model is sent (all of it deterministic, so replays match request for request):
- system: a short instruction block, then the domain policy (`AgentContext.policy`; without one,
  `--policy none`, the instruction block alone, not pointing at a policy);
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
from typing import Any

from shiftbox_servers.kit import escape_lone_surrogates, loads_json

from ..llm import Endpoint, LLMRequest, LLMSettings, Usage, first_message, parse_llm_options
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
NO_POLICY_INSTRUCTIONS = AGENT_INSTRUCTIONS.replace(" according to the <policy> below", "")
"""The instructions of a run without a policy (`--policy none`): the system prompt is these alone."""
NO_POLICY_PROMPT = "<instructions>\n{instructions}\n</instructions>"

def agent_system_prompt(context: AgentContext) -> str:
    """The system prompt of a model-backed agent: the instruction block, then the domain policy when given."""
    parallel = " (at most one tool call per turn)" if context.one_tool_per_turn else \
        " (several independent tool calls may go in one turn)"
    if context.policy.strip():
        instructions = AGENT_INSTRUCTIONS.format(parallel=parallel)
        return SYSTEM_PROMPT.format(instructions=instructions, policy=context.policy.strip())
    return NO_POLICY_PROMPT.format(instructions=NO_POLICY_INSTRUCTIONS.format(parallel=parallel))


# -- conversions ---------------------------------------------------------------------------------------


def tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """One MCP tool (name, description, inputSchema) as an OpenAI function tool."""
    parameters = tool.get("inputSchema") or {"type": "object", "properties": {}}
    return {"type": "function",
            "function": {"name": tool["name"], "description": tool.get("description") or "",
                         "parameters": parameters}}


_SCHEMAS_KEPT = 16
_schemas: dict[tuple[Any, ...], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
"""`_schemas_key` of an MCP tools list -> (that list, held so the ids in the key are not reused; its OpenAI function
tools)."""


def _schemas_key(tools: list[dict[str, Any]]) -> tuple[Any, ...]:
    """What `tool_schema` reads of each tool: its name and description, and its input schema by identity (the
    function tool holds that very object as its parameters)."""
    return tuple((t.get("name"), t.get("description"), id(t.get("inputSchema"))) for t in tools)


def tool_schemas(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`tool_schema` of each tool, one list for tools of the same names, descriptions and schema objects: every
    simulation of a run is given copies of its world's tools (`AgentContext` copies the list and the dicts, not the
    schemas), and its agent sends the same list, which the fast path's body templates know by identity however many
    simulations are in flight. The lists are never changed: a world's tools are fixed once it is connected, and a
    request never changes its own."""
    key = _schemas_key(tools)
    kept = _schemas.get(key)
    if kept is not None:
        return kept[1]
    if len(_schemas) >= _SCHEMAS_KEPT:
        _schemas.pop(next(iter(_schemas)))
    schemas = [tool_schema(t) for t in tools]
    _schemas[key] = (tools, schemas)
    return schemas


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
        value = loads_json(raw, "tool call arguments", finite=False)
    except (TypeError, ValueError):
        value = None
    return value if isinstance(value, dict) else {INVALID_JSON_KEY: str(raw)}


def reply_from_message(message: dict[str, Any], turn: int, one_tool_per_turn: bool = False) -> AgentReply:
    """An OpenAI-style assistant message as an AgentReply; call i gets the harness's id `call_<turn>_<i>`."""
    raw_calls = message.get("tool_calls") or []
    if one_tool_per_turn:
        raw_calls = raw_calls[:1]
    calls = [ToolCall(id=f"call_{turn}_{i}", name=((raw.get("function") or {}).get("name") or ""),
                      arguments=parse_arguments((raw.get("function") or {}).get("arguments")))
             for i, raw in enumerate(raw_calls)]
    content = message.get("content")
    if isinstance(content, list):  # content parts (some providers): keep the text ones
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return AgentReply(content=content or None, tool_calls=calls)


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
        self.usage = Usage()
        """Running totals over this agent's calls."""
        self._sent: list[Message] = []
        self._items: list[dict[str, Any]] = []
        """The conversation the last request sent, and what it sent (the system prompt, then each message of it): a
        message is converted once, and the same dict goes in every later request (messages are appended, never
        changed, while a simulation runs)."""

    def endpoints(self) -> list[Endpoint]:
        return [self.settings.endpoint("agent")]

    async def start(self, context: AgentContext) -> None:
        self.context = context
        self.system_prompt = agent_system_prompt(context)
        self.tools = tool_schemas(context.tools)
        self._sent, self._items = [], [{"role": "system", "content": self.system_prompt}]

    async def close(self) -> None:
        return None

    def request(self, messages: list[Message]) -> LLMRequest:
        """The completion request for the next assistant message (pure: same conversation, same request)."""
        if self.context is None:
            raise RuntimeError("LiteLLMAgent.respond() called before start()")
        params = self.settings.params(self.context.seed)
        if self.context.one_tool_per_turn and self.tools:
            params["parallel_tool_calls"] = False
        return LLMRequest.of_role("agent", self.settings.model, self._openai(messages), self.tools or None, params)

    def _openai(self, messages: list[Message]) -> list[dict[str, Any]]:
        """The system prompt and `to_openai_messages(messages)`, converting only the messages not sent before."""
        sent, kept = self._sent, 0
        while kept < len(sent) and kept < len(messages) and sent[kept] is messages[kept]:
            kept += 1
        del sent[kept:], self._items[kept + 1:]
        sent += messages[kept:]
        self._items += to_openai_messages(messages[kept:])
        return list(self._items)

    async def respond(self, messages: list[Message]) -> AgentReply:
        request = self.request(messages)
        response = await self.settings.complete(request, what=f"agent {self.name}")
        self.usage += Usage.of_response(response)
        turn = sum(1 for m in messages if m.role == "assistant")
        return self.reply_from(first_message(response), turn)

    def reply_from(self, message: dict[str, Any], turn: int) -> AgentReply:
        """The provider's message as an AgentReply, with the harness's own tool-call ids."""
        return reply_from_message(message, turn, self.context is not None and self.context.one_tool_per_turn)


def litellm_agent(model: str | None, options: dict[str, str]) -> LiteLLMAgent:
    settings, _ = parse_llm_options("litellm agent", model, options)
    return LiteLLMAgent(settings)
