"""Entry-point factories for the built-in agents (see shiftbox._registry)."""

from __future__ import annotations


def scripted(arg: str | None, options: dict[str, str]):
    from ._scripted import scripted_agent

    if options:
        raise ValueError(f"scripted agents take no options (got {', '.join(options)})")
    return scripted_agent(arg or "oracle")
