"""Entry-point factories for the built-in agents (see shiftbox._registry)."""

from __future__ import annotations


def scripted(arg: str | None, options: dict[str, str]):
    from ._scripted import scripted_agent

    if options:
        raise ValueError(f"scripted agents take no options (got {', '.join(options)})")
    return scripted_agent(arg or "oracle")


def litellm(arg: str | None, options: dict[str, str]):
    """`litellm:<model>` with options api_base, api_key_env, temperature, seed, max_tokens, max_retries,
    timeout, retry_backoff, drop_params and extra.<param> (see shiftbox.llm.LLMSettings)."""
    from ._litellm import litellm_agent

    return litellm_agent(arg, options)


def cmd(arg: str | None, options: dict[str, str]):
    """`cmd:"<command>"`: an external agent program (JSON lines on stdio, tools over MCP); option timeout=SECONDS."""
    from ._external import ExternalAgent

    timeout = _turn_timeout("cmd", options)
    if not arg:
        raise ValueError('cmd: needs a command, e.g. --agent cmd:"python examples/minimal_agent/agent.py"')
    return ExternalAgent(arg, turn_timeout_s=timeout)


def _turn_timeout(kind: str, options: dict[str, str], also: tuple[str, ...] = ()) -> float:
    """The option of agents that call their tools through the gateway: timeout=SECONDS, per agent turn (`also`: the
    other options the kind takes)."""
    from ._gateway_agent import DEFAULT_TURN_TIMEOUT_S

    unknown = set(options) - {"timeout", *also}
    if unknown:
        takes = " and ".join(["timeout=SECONDS", *(f"{name}=..." for name in also)])
        raise ValueError(f"{kind} agents take only the option{'s' if also else ''} {takes} "
                         f"(got {', '.join(sorted(unknown))})")
    timeout = float(options.get("timeout", DEFAULT_TURN_TIMEOUT_S))
    if timeout <= 0:
        raise ValueError("timeout must be a positive number of seconds")
    return timeout


def a2a(arg: str | None, options: dict[str, str]):
    """`a2a:URL`: a remote agent served over the A2A protocol (tools through the gateway); options timeout=SECONDS and
    handover=metadata|text (text: the handover also written into the message text, docs/a2a.md)."""
    from .a2a_agent import A2AAgent

    if not arg:
        raise ValueError("a2a: needs the agent's base URL, e.g. --agent a2a:http://127.0.0.1:9999")
    timeout = _turn_timeout("a2a", options, also=("handover",))
    return A2AAgent(arg, turn_timeout_s=timeout, handover=options.get("handover", "metadata"))
