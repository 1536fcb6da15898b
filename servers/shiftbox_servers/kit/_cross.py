"""Cross-domain conversations: several domains seen as one, their tools and goals namespaced.

A run over several domains (`--domain banking,airline`) connects to each domain's own server; the agent
sees one tool list in which every name is `<domain>__<name>` (`banking__get_account`), and a task's goals
are namespaced the same way (`airline__booking`). The namespaced names are valid LLM tool names
(`^[a-zA-Z0-9_-]{1,64}$`) and cannot collide: a domain name never holds `__` nor ends in `_`, so the first
`__` of a namespaced name is always the separator and (domain, name) is read back unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ._tools import ToolSet

NAMESPACE_SEPARATOR = "__"
MAX_TOOL_NAME = 64
"""The longest tool name LLM APIs accept (OpenAI, Anthropic: `^[a-zA-Z0-9_-]{1,64}$`)."""
DOMAIN_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
"""A domain name that can be namespaced: lower-case words joined by single underscores."""
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def namespaced(domain: str, name: str) -> str:
    """`name` (a tool or goal of `domain`) as the cross-domain agent sees it: `<domain>__<name>`.

    ValueError when the result would not be a valid, unambiguous LLM tool name."""
    if not DOMAIN_NAME.fullmatch(domain):
        raise ValueError(f"domain name {domain!r} cannot be namespaced: use lower-case letters and digits, words "
                         "joined by single underscores")
    full = f"{domain}{NAMESPACE_SEPARATOR}{name}"
    if not name or not _TOOL_NAME.fullmatch(name) or len(full) > MAX_TOOL_NAME:
        raise ValueError(f"{full!r} is not a valid tool name (letters, digits, _ and -, at most {MAX_TOOL_NAME})")
    return full


def split_namespaced(name: str) -> tuple[str, str] | None:
    """(domain, name) of a namespaced name; None for a name without the separator."""
    domain, sep, rest = name.partition(NAMESPACE_SEPARATOR)
    return (domain, rest) if sep and domain and rest else None


def domain_of(name: str) -> str | None:
    """The domain a namespaced tool or goal belongs to; None for a plain (single-domain) name."""
    parts = split_namespaced(name)
    return parts[0] if parts else None


def domain_list(spec: str) -> list[str]:
    """The domains of `--domain banking,airline` (one domain: a list of one), checked: no blank entry, no repeat.

    ValueError naming the problem; whether each domain is installed is `get_domain`'s to say."""
    names = [part.strip() for part in spec.split(",")]
    if any(not n for n in names):
        raise ValueError(f"--domain {spec!r} has an empty entry; give domain names separated by commas, "
                         "e.g. banking,airline")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"--domain {spec!r} names {', '.join(repeated)} more than once")
    return names


def is_cross_domain(spec: str) -> bool:
    """`spec` names several domains (`banking,airline`)."""
    return "," in spec


def combined_state_digest(digests: Mapping[str, str], domains: Sequence[str]) -> str:
    """One digest for the final states of `domains` (each domain's own state digest): what a cross-domain
    task's `expected_state_digest` holds. Independent of the order the domains are listed in."""
    lines = "".join(f"{d}={digests[d]}\n" for d in sorted(domains))
    return hashlib.sha256(lines.encode()).hexdigest()


def namespaced_tools(domain: str, tools: ToolSet) -> ToolSet:
    """A domain's tool set with namespaced names (what metrics read: schemas and annotations)."""
    return ToolSet({namespaced(domain, s.name): replace(s, name=namespaced(domain, s.name)) for s in tools})


def cross_policy(policies: Mapping[str, str]) -> str:
    """The agent policy of a cross-domain conversation: how tools are named, then each domain's own policy."""
    names = ", ".join(policies)
    head = (f"You serve one customer across several services ({names}). Each service's tools are named "
            f"<service>{NAMESPACE_SEPARATOR}<tool> (for example {next(iter(policies))}{NAMESPACE_SEPARATOR}"
            "<tool>); follow each service's own policy below for its tools.")
    return "\n\n".join([head, *(f"# {d} policy\n\n{text.strip()}" for d, text in policies.items())]) + "\n"
