"""Record and replay: identical repeats, drift and cassette misses named, no secrets in fixtures."""

from __future__ import annotations

import functools
import json

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.errors import CassetteMiss
from shiftbox.llm import Cassette, LLMRequest, use_cassette
from shiftbox.pytest import ReplayFailed, replay_and_check
from shiftbox.runs import FIXTURE_FILE
from tests.client.harness import HANDWRITTEN
from tests.client.replay import record_scripted

runner = CliRunner()


@pytest.fixture
def fixture_dir(tmp_path):
    return record_scripted(tmp_path)


def test_fixture_layout(fixture_dir):
    info = json.loads((fixture_dir / FIXTURE_FILE).read_text())
    assert info["run"]["config"]["agent"] == "scripted:redundant" and info["servers"]["banking"]["snapshot_sha256"]
    transcripts = sorted(p.name for p in (fixture_dir / "transcripts").iterdir())
    assert len(transcripts) == 10 and len(list((fixture_dir / "cassettes").iterdir())) == 10
    first = [json.loads(line) for line in (fixture_dir / "transcripts" / transcripts[0]).read_text().splitlines()]
    assert first[0]["method"] == "tools/list" and len(first[0]["tools"]) == 20
    assert all(line["method"] == "tools/call" and "result" in line for line in first[1:])


def test_replay_twice_gives_identical_trajectories_and_metrics(fixture_dir, tmp_path):
    hashes = []
    for name in ("a", "b"):
        res = runner.invoke(app, ["replay", str(fixture_dir), "--out", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
        assert "identical to the recording" in res.output
        runner.invoke(app, ["metrics", str(tmp_path / name)])
        lines = (tmp_path / name / "trajectories.jsonl").read_text().splitlines()
        from shiftbox.trajectory import Trajectory

        traj = sorted(Trajectory.model_validate_json(x).content_hash() for x in lines)
        hashes.append((traj, (tmp_path / name / "metrics.json").read_bytes()))
    assert hashes[0] == hashes[1]


def test_transcript_mode_needs_no_server(fixture_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTBOX_SNAPSHOTS", str(tmp_path / "no-snapshots-here"))
    res = runner.invoke(app, ["replay", str(fixture_dir), "--out", str(tmp_path / "t"), "--tools", "transcript"])
    assert res.exit_code == 0, res.output


def test_modified_server_behaviour_is_drift_naming_sim_call_and_field(fixture_dir, tmp_path, monkeypatch):
    from shiftbox_servers.banking import tools

    spec = tools.specs["get_customer_by_phone"]
    original = spec.fn

    @functools.wraps(original)
    def changed(ep, phone_number):
        result = original(ep, phone_number)
        return result.model_copy(update={"email": "changed@example.com"})

    monkeypatch.setitem(tools.specs, "get_customer_by_phone", spec.__class__(spec.name, changed, spec.annotations,
                                                                             spec.arguments_model))
    res = runner.invoke(app, ["replay", str(fixture_dir), "--out", str(tmp_path / "drift")])
    assert res.exit_code == 1
    assert "tool drift in hw_banking_001#0/call 0 (get_customer_by_phone)" in res.output
    assert "result.email" in res.output


def test_a_tampered_recording_is_drift_too(fixture_dir, tmp_path):
    path = fixture_dir / "trajectories.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["tool_calls"][0]["arguments"]["phone_number"] = "+10000000000"
    path.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    res = runner.invoke(app, ["replay", str(fixture_dir), "--out", str(tmp_path / "x"), "--tools", "transcript"])
    assert res.exit_code == 1 and "arguments.phone_number" in res.output


def test_cassette_miss_names_simulation_call_and_field(tmp_path):
    request = LLMRequest(role="agent", model="m", messages=[{"role": "system", "content": "policy"},
                                                            {"role": "user", "content": "hi"}])
    recording = Cassette("sim#0", tmp_path / "c.jsonl", "record")
    with use_cassette(recording):
        recording.record(request, {"choices": [{"message": {"role": "assistant", "content": "hello"}}]})
    replaying = Cassette("sim#0", tmp_path / "c.jsonl", "replay")
    assert replaying.replay(request)["choices"][0]["message"]["content"] == "hello"
    changed = request.model_copy(update={"messages": [request.messages[0], {"role": "user", "content": "hey"}]})
    with pytest.raises(CassetteMiss, match=r"cassette miss for sim#0/call 0: request differs in messages\[1\]\.content"):
        Cassette("sim#0", tmp_path / "c.jsonl", "replay").replay(changed)
    with pytest.raises(CassetteMiss, match="only 1 calls"):
        replaying.replay(request)


def test_pytest_helper_checks_thresholds(fixture_dir, tmp_path):
    metrics = replay_and_check(fixture_dir, tmp_path / "ok", min_tsr=1.0, min_recovery=1.0)
    assert metrics.tcrr.pooled > 0
    with pytest.raises(ReplayFailed, match="TCRR"):
        replay_and_check(fixture_dir, tmp_path / "strict", max_tcrr=0.0)


def test_plugin_fixture_is_registered(shiftbox_replay, fixture_dir):
    assert shiftbox_replay(fixture_dir, min_tue=1.0).simulations == 10


def test_replay_input_errors(tmp_path, fixture_dir):
    res = runner.invoke(app, ["replay", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "not a fixture" in res.output
    res = runner.invoke(app, ["replay", str(fixture_dir), "--out", str(tmp_path / "o"), "--tools", "psychic"])
    assert res.exit_code == 2 and "reexecute" in res.output
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(tmp_path / "r"),
                              "--record", str(tmp_path / "f"), "--resume"])
    assert res.exit_code == 2 and "--record cannot be combined with --resume" in res.output
