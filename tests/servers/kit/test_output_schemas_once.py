"""The tools returning the same pydantic model share its published results (`model_output`): its validator and output
schema are made once a process, not once per tool (the banking domain's 20 tools return 12 models), and each tool
still publishes that model's schema."""

from __future__ import annotations

from collections import Counter

from pydantic import TypeAdapter

from shiftbox_servers.kit import DomainServer, Snapshot, _outputs, get_domain


def test_each_return_model_is_made_into_a_checked_output_once(monkeypatch):
    domain = get_domain("banking")
    _outputs.tool_output.cache_clear()
    _outputs.model_output.cache_clear()
    made: Counter = Counter()
    checked_output = _outputs.checked_output

    def counted(model, wrap):
        made[model] += 1
        return checked_output(model, wrap)

    monkeypatch.setattr(_outputs, "checked_output", counted)
    server = DomainServer(domain, Snapshot.load(domain.default_snapshot_dir()))
    outputs = server.outputs
    returned = Counter(spec.signature.return_annotation for spec in server.tools)
    assert max(returned.values()) > 1  # several tools return the same model: what is shared
    assert dict(made) == dict.fromkeys(returned, 1)
    for spec in server.tools:  # each tool publishes its own return model's schema and validator
        model = spec.signature.return_annotation
        assert outputs[spec.name].output_model is model and outputs[spec.name].wrap_output is False
        assert outputs[spec.name].output_schema == TypeAdapter(model).json_schema()
    _outputs.tool_output.cache_clear()  # the next test's outputs are made without the counter
    _outputs.model_output.cache_clear()
