"""Property-based fuzzing of every tool's arguments in every domain (hypothesis).

Whatever JSON an agent sends: the server never crashes, every error carries a known kind other than
`internal`, and a rejected call (invalid arguments) leaves the episode's state unchanged.
"""

from __future__ import annotations

import itertools
import json

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from shiftbox_servers.kit import (
    DomainServer,
    ErrorKind,
    Snapshot,
    get_domain,
    result_error,
    task_domains,
)

KINDS = {k.value for k in ErrorKind} - {ErrorKind.INTERNAL.value}
DOMAINS = task_domains()

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False, width=32),
                    st.text(max_size=30), st.sampled_from(["'; DROP TABLE users; --", "%", "\x00", "🙂", "#W2378156",
                                                            "2025-13-45", "-1", "1e309"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.dictionaries(st.text(max_size=10), inner, max_size=3)),
                           max_leaves=6)


def typed(schema: dict, defs: dict, depth: int = 0) -> st.SearchStrategy:
    """Values of the JSON type a schema asks for (so calls get past validation into the tool's body)."""
    if "$ref" in schema:
        return typed(defs[schema["$ref"].split("/")[-1]], defs, depth)
    if "anyOf" in schema:
        return st.one_of([typed(s, defs, depth) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return st.one_of(st.text(min_size=1, max_size=20), st.sampled_from(
            ["acc_00001", "cust_0001", "card_00001", "tx_000001", "#W2378156", "4WQ150", "mia_li_3668",
             "credit_card_4421486", "gift_card_0000001", "2025-06-01", "+15551234567", "1 + 2", "JFK", "economy"]))
    if kind == "integer":
        return st.integers(-5, 600)
    if kind == "number":
        return st.one_of(st.integers(-5, 5000), st.floats(-10, 5000, allow_nan=False).map(lambda x: round(x, 2)))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array" and depth < 3:
        return st.lists(typed(schema.get("items", {}), defs, depth + 1), max_size=3)
    if kind == "object" and depth < 3:
        props = schema.get("properties", {})
        return st.fixed_dictionaries({k: typed(v, defs, depth + 1) for k, v in props.items()})
    return json_values


def arguments_for(spec) -> st.SearchStrategy[dict]:
    """Mostly well-typed values for the tool's own parameters; sometimes anything, extra or missing keys."""
    schema = spec.arguments_model.model_json_schema()
    defs, props = schema.get("$defs", {}), schema.get("properties", {})
    well_typed = st.fixed_dictionaries({k: typed(v, defs) for k, v in props.items()})
    own = st.fixed_dictionaries({}, optional={n: json_values for n in props})
    noisy = st.dictionaries(st.sampled_from([*props, "extra", "__class__"]), json_values, max_size=len(props) + 1)
    return st.one_of(well_typed, well_typed, own, noisy)


@pytest.fixture(scope="module", params=DOMAINS)
def domain_server(request):
    domain = get_domain(request.param)
    return DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))


def test_fuzzed_arguments_never_crash_and_errors_are_kinded(domain_server):
    specs = list(domain_server.domain.tools)
    examples = itertools.count()  # a dropped episode id stays closed: each example opens its own

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(data=st.data())
    def check(data):
        spec = data.draw(st.sampled_from(specs), label="tool")
        arguments = data.draw(arguments_for(spec), label="arguments")
        name = f"fuzz-{next(examples)}"

        async def call():
            async with Client(domain_server.mcp) as client:
                episode = {"shiftbox/episode": name}
                before = json.loads((await client.read_resource("shiftbox://episode/digest", meta=episode))
                                    .contents[0].text)["digest"]
                result = await client.call_tool(spec.name, arguments, meta=episode)
                after = json.loads((await client.read_resource("shiftbox://episode/digest", meta=episode))
                                   .contents[0].text)["digest"]
                return result, before, after

        result, before, after = anyio.run(call)
        if result.is_error:
            error = result_error(result) or {}
            assert error.get("kind") in KINDS, (spec.name, arguments, result.content)
            assert before == after, f"{spec.name} changed state although it failed: {arguments}"
        domain_server.episodes.drop(name)

    check()
