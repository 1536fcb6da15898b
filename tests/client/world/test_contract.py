"""Tool contracts: a server whose published tools drifted from the snapshot's manifest is refused."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox_servers.kit import get_domain
from tests.client.harness import HANDWRITTEN

runner = CliRunner()


def test_run_refuses_a_server_whose_tool_description_changed(tmp_path, monkeypatch):
    tools = get_domain("banking").tools
    spec = tools.specs["get_account_balance"] if "get_account_balance" in tools.specs else next(iter(tools))
    patched = dataclasses.replace(spec, fn=_with_doc(spec.fn, "A drifted description."))
    monkeypatch.setitem(tools.specs, spec.name, patched)
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN),
                              "--out", str(tmp_path / "r"), "--task-id", "hw_banking_001"])
    assert res.exit_code == 2, res.output
    assert spec.name in res.output and "tool contract" in res.output
    assert "shiftbox snapshots build" in res.output


def test_run_records_the_tool_contract_in_run_json_and_trajectories(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN),
                              "--out", str(tmp_path / "r"), "--task-id", "hw_banking_001"])
    assert res.exit_code == 0, res.output
    manifest = json.loads((get_domain("banking").default_snapshot_dir() / "manifest.json").read_text())
    digest = manifest["tool_contracts"]["default"]["digest"]
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    assert run["tool_contracts"]["banking"] == digest
    line = next(p for p in (tmp_path / "r").glob("trajectories*.jsonl")).read_text().splitlines()[0]
    assert json.loads(line)["servers"]["banking"]["tool_contract"] == digest


def test_run_records_the_user_simulators_identity(tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN),
                              "--out", str(tmp_path / "r"), "--task-id", "hw_banking_001"])
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "r" / "run.json").read_text())
    trajectory = json.loads((tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()[0])
    catalog = Path(__file__).resolve().parents[3] / "client" / "shiftbox" / "users" / "personas.json"
    version = json.loads(catalog.read_text())["schema_version"]
    digest = hashlib.sha256(catalog.read_bytes()).hexdigest()
    for sim in (run["user_simulator"], trajectory["user_simulator"]):
        assert sim["kind"] == "scripted" and sim["personas_version"] == version
        assert sim["personas_sha256"] == digest


def test_an_llm_user_names_its_model_and_prompt_digest():
    from shiftbox import user_from_spec

    sim = user_from_spec("litellm:openai/some-model").identity()
    assert sim.kind == "litellm" and sim.model == "openai/some-model"
    assert len(sim.prompt_sha256) == 64 and len(sim.personas_sha256) == 64


def _with_doc(fn, doc):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__doc__ = doc
    return wrapper


class _FlakyTransport:
    """Wraps a client's call_tool: the first `failures` calls fail as a broken connection would."""

    def __init__(self, call_tool, failures: int = 1):
        self.call_tool, self.failures, self.calls = call_tool, failures, 0

    async def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionResetError("connection reset by peer")
        return await self.call_tool(*args, **kwargs)


def _tool_with(world, read_only: bool, destructive: bool) -> str:
    for tool in world.tools:
        hints = tool.get("annotations", {})
        if hints.get("readOnlyHint") is read_only and hints.get("destructiveHint") is destructive:
            return tool["name"]
    raise AssertionError("no such tool")


def test_a_read_only_call_is_retried_after_a_transport_failure_and_a_destructive_one_never():
    import anyio
    import pytest

    from shiftbox.world import InfrastructureError, open_world

    async def main():
        async with open_world("banking") as world:
            world.read_only_retries = 1
            episode = world.episode("retry-test")
            flaky = _FlakyTransport(world.client.wire_call)  # the in-process world's tools/call (`World.call_tool`)
            world.client.wire_call = flaky
            name = _tool_with(world, read_only=True, destructive=False)
            record = await episode.call(name, {}, call_id="c0", message_index=0, agent_turn=0)
            assert flaky.calls == 2 and record.timing["attempts"] == 2  # answered (an error result is fine)
            flaky.calls, flaky.failures = 0, 1
            name = _tool_with(world, read_only=False, destructive=True)
            with pytest.raises(InfrastructureError, match="not retried"):
                await episode.call(name, {}, call_id="c1", message_index=0, agent_turn=0)
            assert flaky.calls == 1
            world.read_only_retries = 0  # without --retry-infra: no call is retried
            flaky.calls, flaky.failures = 0, 1
            name = _tool_with(world, read_only=True, destructive=False)
            with pytest.raises(InfrastructureError):
                await episode.call(name, {}, call_id="c2", message_index=0, agent_turn=0)
            assert flaky.calls == 1

    anyio.run(main)
