"""Entry-point factories for the built-in user simulators (see shiftbox._registry)."""

from __future__ import annotations


def scripted(arg: str | None, options: dict[str, str]):
    from ._scripted import ScriptedUser

    if arg or options:
        raise ValueError("the scripted user takes no argument or options (its seed comes from the run)")
    return ScriptedUser()


def litellm(arg: str | None, options: dict[str, str]):
    """`litellm:<model>` with options api_base, api_key_env, temperature, seed, max_tokens, max_retries,
    timeout, retry_backoff, drop_params, max_empty_retries and extra.<param> (see shiftbox.users._llm)."""
    from ._llm import llm_user

    return llm_user(arg, options)
