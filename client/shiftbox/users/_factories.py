"""Entry-point factories for the built-in user simulators (see shiftbox._registry)."""

from __future__ import annotations


def scripted(arg: str | None, options: dict[str, str]):
    """`scripted` with option protocol=reference (default) or completion (see shiftbox.users._scripted)."""
    from ._scripted import DEFAULT_PROTOCOL, ScriptedUser

    unknown = sorted(set(options) - {"protocol"})
    if arg or unknown:
        raise ValueError("the scripted user takes no argument and only the option protocol=reference|completion "
                         f"(its seed comes from the run); got {arg or ', '.join(unknown)!r}")
    return ScriptedUser(protocol=options.get("protocol", DEFAULT_PROTOCOL))


def litellm(arg: str | None, options: dict[str, str]):
    """`litellm:<model>` with options api_base, api_key_env, temperature, seed, max_tokens, max_retries,
    timeout, retry_backoff, drop_params, max_empty_retries and extra.<param> (see shiftbox.users._llm)."""
    from ._llm import llm_user

    return llm_user(arg, options)
