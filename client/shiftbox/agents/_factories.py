"""Entry-point factories for the built-in agents (see shiftbox._registry)."""

from __future__ import annotations


def scripted(arg: str | None, options: dict[str, str]):
    from ._scripted import scripted_agent

    if options:
        raise ValueError(f"scripted agents take no options (got {', '.join(options)})")
    return scripted_agent(arg or "oracle")


def litellm(arg: str | None, options: dict[str, str]):
    """`litellm:<model>` with options api_base, api_key_env, temperature, seed, max_tokens, max_retries,
    timeout, retry_backoff, drop_params and extra.<param> (see shiftbox.agents._litellm)."""
    from ._litellm import litellm_agent

    return litellm_agent(arg, options)
