"""Entry-point factories for the built-in user simulators (see shiftbox._registry)."""

from __future__ import annotations


def scripted(arg: str | None, options: dict[str, str]):
    from ._scripted import ScriptedUser

    if arg or options:
        raise ValueError("the scripted user takes no argument or options (its seed comes from the run)")
    return ScriptedUser()
