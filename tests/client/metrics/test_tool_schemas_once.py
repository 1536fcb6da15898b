"""A tool's arguments JSON schema is made once a process (`ToolSpec.arguments_schema`): the in-process server
publishes it as the tool's input schema at the run's start, and the run's end reads the same one for the metrics'
argument checks (`domain_facts`) rather than asking pydantic to generate it again; nobody's copy changes it."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from shiftbox.metrics._aggregate import domain_facts
from shiftbox.metrics._mmtb_arguments import resolve
from shiftbox_servers.kit import DomainServer, Snapshot, get_domain


def test_the_server_and_the_metrics_make_each_tools_schema_once(monkeypatch):
    domain = get_domain("banking")
    specs = list(domain.toolset("default"))
    for spec in specs:  # as a fresh process holds them: no schema made yet
        spec.__dict__.pop("arguments_schema", None)
    domain_facts.cache_clear()
    made: Counter[str] = Counter()
    generate = BaseModel.__dict__["model_json_schema"].__func__

    def counted(cls, *args, **kwargs):
        made[cls.__name__] += 1
        return generate(cls, *args, **kwargs)

    monkeypatch.setattr(BaseModel, "model_json_schema", classmethod(counted))
    published = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir())).wire_tools()
    facts = domain_facts("banking")
    domain_facts.cache_clear()  # the next test's facts are made without the counter
    models = {spec.arguments_model.__name__ for spec in specs}
    assert {name: made[name] for name in models} == dict.fromkeys(models, 1)
    # the same schema both ways: the published one is the model's with the SDK's title and the kit's closing
    by_name = {tool["name"]: tool["inputSchema"] for tool in published}
    for spec in specs:
        expected = {**generate(spec.arguments_model), "title": f"{spec.fn.__name__}Arguments",
                    "additionalProperties": False}
        assert by_name[spec.name] == expected
        assert facts.json_schemas[spec.name] == resolve(generate(spec.arguments_model))  # as from a fresh one


def test_no_copy_changes_the_shared_schema():
    domain = get_domain("banking")
    spec = next(s for s in domain.toolset("default") if s.arguments_model.model_fields)
    before = spec.arguments_model.model_json_schema()
    published = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir())).input_schema(spec)
    published["title"] = "changed"
    next(iter(published["properties"].values()))["description"] = "changed"
    assert spec.arguments_schema == before
