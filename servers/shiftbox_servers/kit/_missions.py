"""The shape of a generation mission: what a domain's goal builders hand the task generator.

A mission is plain data (the servers distribution cannot import the client's task model): the goal,
its action type, the user's reason, the gold calls in order with their dependencies, the facts the
user knows, which call outputs the agent must communicate (attributed to this goal in the task), and
NL assertions.
"""

from __future__ import annotations

from typing import Any

Mission = dict[str, Any]


def mission_call(key: str, tool: str, params: dict[str, Any], after: tuple[str, ...] = (),
                 required: list[str] | None = None) -> dict[str, Any]:
    """One gold call: `key` names it for `after` (dependencies) and for `{"$from": "key.field"}` params."""
    return {"key": key, "tool": tool, "params": params, "after": list(after), "required": required}


def mission(goal: str, action_type: str, reason: str, calls: list[dict[str, Any]], *, known: tuple[str, ...] = (),
            communicate: tuple[str, ...] = (), nl: tuple[str, ...] = ()) -> Mission:
    """A goal's mission; `action_type` is single, serial, parallel, chat or clarify.

    Every mission needs gold calls, a chat one too (a general question grounded in one read, with an output
    to `communicate`): a goal that only NL assertions check costs an agent nothing when skipped without a judge.
    """
    return {"goal": goal, "action_type": action_type, "reason": reason, "known": list(known), "calls": calls,
            "communicate": list(communicate), "nl_assertions": list(nl)}
