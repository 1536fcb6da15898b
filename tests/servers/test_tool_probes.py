"""Every tool's observable behaviour, pinned per domain and tool set, and held against the reference's.

tests/servers/probes/<domain>.json holds hand-written calls (typical ones and the edge cases agents
produce: formatted phone numbers, empty strings, unknown ids). From the first call of each tool the test
derives more edge cases from the published schemas: each argument empty, padded with spaces, of the wrong
type; an empty string for each optional argument left out; an unexpected argument; a required one
missing. Each probe runs in a fresh episode of the domain's native snapshot, on every tool set the domain
serves (new tool sets are picked up by name), and its outcome is compared with three things:

1. the outcome recorded for that tool set: any change of what a tool answers fails, naming the call;
2. the published tool contract recorded with it (kit `tool_contract` digests): a changed tool must have
   its probes re-recorded;
3. the reference's answer: each tool set that reproduces a reference (`agentchangebench`, `tau2`) has its
   own answers, seeded once from it and then only edited by hand, and the other tool sets are held against
   the first of them. A difference must be a row of docs/servers.md's deliberate-differences table that
   covers this tool set, exactly as `shiftbox conformance replay` requires.

SHIFTBOX_UPDATE_PROBES=1 re-records (1) and (2) and seeds (3) for new probes only; it still fails on a
difference from the reference that no row explains, so recording cannot bless an undocumented difference.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from shiftbox.conformance import (
    compare_outcomes,
    difference_class,
    find_reason,
    haystack,
    load_deliberate_differences,
)
from shiftbox.tasks import (
    REFERENCE_TOOLSETS,  # the first one a domain has gives the answers others are held against
)
from shiftbox_servers.kit import (
    DomainServer,
    Snapshot,
    registered_domains,
    result_error,
    tool_contract,
)
from tests.conftest import REPO
from tests.servers.helpers import call

PROBES = Path(__file__).with_name("probes")
UPDATE = bool(os.environ.get("SHIFTBOX_UPDATE_PROBES"))
RECORD = "SHIFTBOX_UPDATE_PROBES=1 uv run pytest tests/servers/test_tool_probes.py"
COVER = ("a difference from the reference needs a row of docs/servers.md's 'Deliberate differences from the "
         "reference tools' table that covers this tool set (`toolsets: …`), or belongs in a tool set of its own")


def probe_id(tool: str, arguments: dict[str, Any]) -> str:
    return f"{tool}({json.dumps(arguments, sort_keys=True, ensure_ascii=False)})"


def derived_calls(base: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Edge cases of one typical call, from the tool's input schema (the union over tool sets)."""
    tool, args = base["tool"], base["arguments"]
    out: list[dict[str, Any]] = []
    for name in sorted(schema.get("properties", {})):
        value = args.get(name)
        if name not in args:
            out.append({**args, name: ""})                         # an empty optional string
        elif isinstance(value, str):
            out += [{**args, name: ""}, {**args, name: f" {value} "}, {**args, name: 12345}]
        elif isinstance(value, bool):
            out.append({**args, name: str(value).lower()})
        elif isinstance(value, int | float):
            out.append({**args, name: str(value)})
    out.append({**args, "unexpected_argument": 1})
    required = [r for r in schema.get("required", []) if r in args]
    if required:
        out.append({k: v for k, v in args.items() if k != required[0]})
    return [{"tool": tool, "arguments": a} for a in out]


def outcome(result) -> dict[str, Any]:
    """What the agent observes: the error kind and message, or the structured result (the text when the
    tool publishes no structured output)."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        error = result_error(result) or {}
        return {"error": error.get("kind", "error"), "result": error.get("message") or text}
    return {"error": None, "result": text if result.structured_content is None else result.structured_content}


def _text(o: dict[str, Any]) -> str:
    return o["result"] if isinstance(o["result"], str) else json.dumps(o["result"], ensure_ascii=False)


def _short(o: dict[str, Any] | None, limit: int = 220) -> str:
    if o is None:
        return "nothing recorded"
    text = (f"{o['error']}: " if o["error"] else "ok: ") + _text(o)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _run(domain, snapshot: Snapshot, toolset: str, calls: list[dict[str, Any]]):
    """Each call in a fresh episode; returns (contract, {probe id: outcome})."""
    server = DomainServer(domain, snapshot, toolset=toolset)
    outcomes: dict[str, dict[str, Any]] = {}
    async with Client(server.mcp) as client:
        listed = (await client.list_tools()).tools
        contract = tool_contract(t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed)
        for n, c in enumerate(calls):
            episode = f"probe-{n}"
            outcomes[probe_id(c["tool"], c["arguments"])] = outcome(await call(client, c["tool"], c["arguments"],
                                                                              episode))
            server.episodes.drop(episode)
    return contract.tools, outcomes


def _probes(domain, spec: dict[str, Any], schemas: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    calls = list(spec["calls"])
    missing = sorted(set(schemas) - {c["tool"] for c in calls})
    assert not missing, (f"{domain.name}: no probe call for {', '.join(missing)}: add a typical call of each to "
                         f"{PROBES / (domain.name + '.json')} (its edge cases are derived from it)")
    seen: set[str] = set()
    for tool in schemas:
        base = next(c for c in spec["calls"] if c["tool"] == tool)
        calls += derived_calls(base, schemas[tool])
    unique = []
    for c in calls:
        key = probe_id(c["tool"], c["arguments"])
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _schemas(domain) -> dict[str, dict[str, Any]]:
    """Tool name -> its input schema, properties and required merged over the domain's tool sets."""
    merged: dict[str, dict[str, Any]] = {}
    for name in domain.toolset_names():
        server = DomainServer(domain, _snapshot(domain), toolset=name)
        for tool in server.sdk_tools.values():
            entry = merged.setdefault(tool.name, {"properties": {}, "required": []})
            entry["properties"].update(tool.parameters.get("properties", {}))
            entry["required"] += [r for r in tool.parameters.get("required", []) if r not in entry["required"]]
    return merged


def _snapshot(domain) -> Snapshot:
    return Snapshot.load(domain.default_snapshot_dir())


def domains_with_tools() -> list[str]:
    return sorted(registered_domains())


def probe_problems(name: str, *, update: bool = False) -> list[str]:
    """Every recorded outcome that changed and every undocumented difference from the reference, for one
    domain (`update`: re-record first, as SHIFTBOX_UPDATE_PROBES=1 does)."""
    domain = registered_domains()[name]
    path = PROBES / f"{name}.json"
    assert path.is_file(), f"no probe corpus for domain {name}: write {path} with typical calls of its tools"
    spec = json.loads(path.read_text())
    snapshot = _snapshot(domain)
    probes = _probes(domain, spec, _schemas(domain))
    table = load_deliberate_differences(REPO / "docs" / "servers.md")
    reference_sets = [t for t in REFERENCE_TOOLSETS if t in domain.toolsets]
    problems: list[str] = []
    recorded = spec.setdefault("toolsets", {})
    current = {toolset: anyio.run(_run, domain, snapshot, toolset, probes) for toolset in domain.toolset_names()}

    references = spec.setdefault("reference", {})   # reference tool set -> the reference's answers
    if update:
        for name_ in reference_sets:
            kept = references.get(name_, {})
            references[name_] = {k: kept.get(k, v) for k, v in current[name_][1].items()}

    for toolset, (contract, outcomes) in current.items():
        then = recorded.get(toolset)
        if update:
            recorded[toolset] = {"contract": contract, "outcomes": outcomes}
        elif then is None:
            problems.append(f"{name}/{toolset}: no recorded outcomes for this tool set; record them with {RECORD}")
        else:
            problems += _changes(f"{name}/{toolset}", contract, outcomes, then)
        answers = references.get(toolset if toolset in references else next(iter(reference_sets), ""), {})
        problems += _unexplained(table, name, toolset, outcomes, answers)
    if update:
        spec["snapshot"] = snapshot.manifest.sha256
        path.write_text(json.dumps(spec, indent=1, ensure_ascii=False) + "\n")
    elif spec.get("snapshot") != snapshot.manifest.sha256:
        problems.append(f"{name}: the probes were recorded on another snapshot ({spec.get('snapshot')}); re-record "
                        f"({RECORD})")
    return problems


def _changes(where: str, contract: dict[str, str], outcomes: dict[str, Any], then: dict[str, Any]) -> list[str]:
    problems = [f"{where}: {tool}'s published contract (name, description, schemas) changed since its probes were "
                f"recorded; check them and re-record ({RECORD})"
                for tool in sorted(set(contract) | set(then["contract"]))
                if contract.get(tool) != then["contract"].get(tool)]
    return problems + [
        f"{where}: {key} changed: was {_short(then['outcomes'].get(key))}; now {_short(now)}. A tool's observable "
        f"behaviour changed: {COVER}; then re-record ({RECORD})"
        for key, now in outcomes.items() if now != then["outcomes"].get(key)]


def _unexplained(table, name: str, toolset: str, outcomes: dict[str, Any], answers: dict[str, Any]) -> list[str]:
    """The probes whose outcome differs from the reference's answer with no row of the table to explain it."""
    problems = []
    for key, now in outcomes.items():
        ref = answers.get(key)
        if ref is None:
            continue
        ref_error, now_error = ref["error"] is not None, now["error"] is not None
        compared = compare_outcomes(_text(ref), ref_error, now["result"], now_error, ids={})
        if compared.equal:
            continue
        klass = difference_class(ref_error, now_error, now["error"])
        tool, arguments = key.split("(", 1)[0], json.loads(key.split("(", 1)[1][:-1])
        if find_reason(table, name, tool, klass, haystack(arguments, _text(ref), _text(now)), compared.differences,
                       toolset=toolset) is None:
            problems.append(f"{name}/{toolset}: {key} differs from the reference ({klass.replace('_', ' ')}): "
                            f"reference {_short(ref)}; shiftbox {_short(now)}; "
                            f"{'; '.join(compared.differences)[:200]}. {COVER}")
    return problems


@pytest.mark.parametrize("name", domains_with_tools())
def test_tool_behaviour_is_pinned_and_every_difference_from_the_reference_is_a_table_row(name):
    problems = probe_problems(name, update=UPDATE)
    assert not problems, f"{len(problems)} problem(s):\n- " + "\n- ".join(problems[:40])


def test_a_changed_tool_is_named_and_needs_a_row_or_a_toolset(monkeypatch):
    """The reference tool set starts normalizing phone numbers, as the default tools do: the probes name the
    tool and the calls that changed, and say that the difference from the reference needs a row."""
    from shiftbox_servers.banking import DOMAIN, normalize_phone

    toolset = DOMAIN.toolset("agentchangebench")
    spec = toolset.specs["get_customer_by_phone"]

    def forgiving(ep, phone_number):
        return spec.fn(ep, normalize_phone(phone_number) or phone_number)

    forgiving.__doc__, forgiving.__signature__ = spec.fn.__doc__, inspect.signature(spec.fn)
    monkeypatch.setitem(toolset.specs, spec.name, dataclasses.replace(spec, fn=forgiving))
    problems = probe_problems("banking")
    changed = [p for p in problems if p.startswith("banking/agentchangebench: get_customer_by_phone(") and
               "555-300-5824" in p]
    assert any(" changed: was not_found" in p for p in changed), problems[:5]
    assert any("differs from the reference (shiftbox succeeds)" in p and "needs a row" in p for p in changed)
    assert not [p for p in problems if "get_customer_by_phone" not in p]   # nothing else is blamed
