"""Issue 30 (Low): a value made only of invisible characters is blank, like a whitespace-only one.

Every string argument of every tool of the three domains (nested ones included) that refuses `"   "` must refuse
`"\\u200b"`, `"\\ufeff"`, `"\\u180e"`, `"\\u2800"`, `"\\u3164"`, … as well, and still take a value with something
visible in it. End to end, the writes an agent could make with such values store nothing.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import ValidationError

from shiftbox_servers.kit import DomainServer, Snapshot, get_domain, task_domains
from tests.servers.conftest import domain_test_data
from tests.servers.helpers import call, digest

DOMAINS = task_domains()
INVISIBLE = ("\u200b", "\ufeff", "\u180e", "\u2800", "\u3164", "\u200c\u200d", "\u2060", "\u00ad", "\u115f",
             "\u1160", "\uffa0", "\u034f", "\ufe0f", "\u202e", "\U000e0020", " \u200b\t\u3000")
"""Zero-width and format characters (Cf), a soft hyphen, fillers that render blank (Braille blank U+2800, the Hangul
fillers), a combining grapheme joiner, a variation selector, a bidi override, a tag space, and a mix with spaces."""
VISIBLE = "Visible\u200b1"


def string_fields(schema: dict, defs: dict, path: tuple = ()) -> list[tuple]:
    """The paths (keys and list index 0) of every free-text string in a JSON schema: no enum, no pattern."""
    if "$ref" in schema:
        return string_fields(defs[schema["$ref"].split("/")[-1]], defs, path)
    found = []
    for option in schema.get("anyOf", []):
        found += string_fields(option, defs, path)
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and "pattern" not in schema:
        found.append(path)
    elif kind == "array":
        found += string_fields(schema.get("items", {}), defs, (*path, 0))
    elif kind == "object":
        for name, sub in schema.get("properties", {}).items():
            found += string_fields(sub, defs, (*path, name))
    return sorted(set(found), key=str)


def placed(path: tuple, value: str) -> Any:
    """`value` at `path` in otherwise empty arguments (the other fields' errors are at other places)."""
    if not path:
        return value
    head, rest = path[0], placed(path[1:], value)
    return [rest] if head == 0 else {head: rest}


def refused_at(model, path: tuple, value: str) -> bool:
    try:
        model.model_validate(placed(path, value))
    except ValidationError as exc:
        return any(tuple(e["loc"]) == path for e in exc.errors())
    return False


FIELDS = [(domain, spec.name, path) for domain in DOMAINS for spec in get_domain(domain).tools
          for path in string_fields(spec.arguments_model.model_json_schema(),
                                    spec.arguments_model.model_json_schema().get("$defs", {}))]


def test_the_walk_finds_the_string_arguments_of_every_domain():
    counts = {d: sum(1 for f in FIELDS if f[0] == d) for d in DOMAINS}
    assert all(n >= 10 for n in counts.values()), counts
    assert ("airline", "book_reservation", ("passengers", 0, "first_name")) in FIELDS


@pytest.mark.parametrize(("domain", "tool", "path"), FIELDS, ids=[f"{d}-{t}-{'.'.join(map(str, p))}"
                                                                 for d, t, p in FIELDS])
def test_invisible_only_is_refused_where_whitespace_only_is(domain, tool, path):
    model = next(s for s in get_domain(domain).tools if s.name == tool).arguments_model
    if not refused_at(model, path, "   "):
        pytest.skip("this field takes a whitespace-only value")
    accepted = [repr(v) for v in INVISIBLE if not refused_at(model, path, v)]
    assert accepted == [], f"{tool} {path} accepted {accepted}"
    assert not refused_at(model, path, VISIBLE), "a value with something visible in it is not blank"




def _filled(arguments: Any, value: str) -> Any:
    if isinstance(arguments, dict):
        return {k: _filled(v, value) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [_filled(v, value) for v in arguments]
    return value if arguments == "{}" else arguments


@pytest.mark.parametrize("domain", DOMAINS)
def test_writes_with_invisible_values_store_nothing(domain):
    """The attack as it was run: each write with each invisible value; before the fix every one was stored."""
    server = DomainServer(get_domain(domain), Snapshot.load(get_domain(domain).default_snapshot_dir()))
    writes = domain_test_data(domain).NATIVE_INVISIBLE_WRITES

    async def attack() -> tuple[int, int, bool, list[bool]]:
        stored = attempts = 0
        async with Client(server.mcp) as client:
            before = await digest(client)
            for tool, arguments in writes:
                for value in INVISIBLE:
                    attempts += 1
                    result = await call(client, tool, _filled(arguments, value))
                    stored += not result.is_error
            unchanged = await digest(client) == before
            visible = [not (await call(client, tool, _filled(arguments, VISIBLE))).is_error
                       for tool, arguments in writes]
            return stored, attempts, unchanged, visible

    stored, attempts, unchanged, visible = anyio.run(attack)
    assert visible == [True] * len(writes), "each write goes through with a visible value (the ids are right)"
    assert attempts == len(writes) * len(INVISIBLE)
    assert (stored, unchanged) == (0, True), f"{stored} of {attempts} invisible values stored"
