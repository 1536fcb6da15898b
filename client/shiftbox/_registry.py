"""Finding agents and user simulators by SPEC (`kind:arg`) through entry points third parties extend.

A factory is `factory(arg: str | None, options: dict[str, str]) -> Agent | UserSimulator` (instances of
the base classes `shiftbox.agents.Agent` / `shiftbox.users.UserSimulator`), registered under the entry
point group `shiftbox.agents` or `shiftbox.users` with the spec's `kind` as name (docs/adding-an-agent.md).
"""

from __future__ import annotations

import functools
from typing import Any

from shiftbox_servers.kit import installed_entry_points

from .agents import Agent
from .errors import ShiftboxError
from .users import UserSimulator

AGENT_GROUP = "shiftbox.agents"
USER_GROUP = "shiftbox.users"


class SpecError(ShiftboxError, ValueError):
    """A SPEC that names nothing installed, or options the factory rejects."""


def parse_spec(spec: str) -> tuple[str, str | None]:
    kind, sep, arg = spec.partition(":")
    if not kind:
        raise SpecError(f"empty SPEC {spec!r}; write KIND or KIND:ARG, e.g. scripted:oracle")
    return kind, (arg if sep else None)


def parse_options(pairs: list[str], flag: str = "option") -> dict[str, str]:
    """`k=v` pairs from `flag` (--agent-arg, --user-arg, --judge-arg); one that is not is a SpecError naming it."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SpecError(f"{flag} {pair!r} is not KEY=VALUE (e.g. {flag} {key or 'temperature'}=0)")
        options[key] = value
    return options


@functools.cache
def _factory(group: str, kind: str) -> Any:
    """The factory registered for `kind`, loaded once per process (`installed_entry_points` scans once)."""
    found = installed_entry_points(group, kind)
    return next(iter(found)).load() if found else None


def _installed_kinds(group: str) -> str:
    """The kinds installed for `group`, named for an error message."""
    return ", ".join(sorted({ep.name for ep in installed_entry_points(group)}))


def _make(group: str, what: str, spec: str, options: dict[str, str], base: type) -> Any:
    kind, arg = parse_spec(spec)
    factory = _factory(group, kind)
    if factory is None:
        raise SpecError(f"no {what} kind {kind!r} installed (SPEC {spec!r}); installed kinds: {_installed_kinds(group)}")
    try:
        made = factory(arg, options)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{what} {spec!r}: {exc}") from exc
    if not isinstance(made, base):
        public = f"{base.__module__.rpartition('._')[0]}.{base.__name__}"  # shiftbox.agents.Agent
        raise SpecError(f"{what} {spec!r}: the factory returned a {type(made).__name__}, which does not derive "
                        f"from {public}")
    return made


def agent_from_spec(spec: str, options: dict[str, str] | None = None) -> Agent:
    """The agent SPEC names (`scripted:oracle`, `litellm:openai/gpt-4.1`, `cmd:…`, or a plug-in's kind)."""
    return _make(AGENT_GROUP, "agent", spec, options or {}, Agent)


def user_from_spec(spec: str, options: dict[str, str] | None = None) -> UserSimulator:
    """The user simulator SPEC names (`scripted`, `litellm:<model>`, or a plug-in's kind)."""
    return _make(USER_GROUP, "user simulator", spec, options or {}, UserSimulator)


def check_spec(group: str, spec: str) -> None:
    """Fail early (before a run starts) if SPEC names nothing installed."""
    kind, _ = parse_spec(spec)
    if _factory(group, kind) is None:
        raise SpecError(f"no kind {kind!r} installed for {spec!r}; installed kinds: {_installed_kinds(group)}")
