"""The committed fixtures (LLM agent + LLM user, recorded against the local fake server) replay offline
exactly, in both tool modes, and hold no credentials."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import FixtureInfo

FIXTURES = sorted(p for p in (Path(__file__).resolve().parents[3] / "fixtures").iterdir() if p.is_dir())
runner = CliRunner()


def test_there_is_a_recorded_llm_fixture_per_native_domain():
    names = {p.name for p in FIXTURES}
    assert {"banking-litellm", "retail-litellm", "airline-litellm"} <= names


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
@pytest.mark.parametrize("tools", ["reexecute", "transcript"])
def test_fixture_replays_identically_without_network_or_keys(fixture, tools, tmp_path, monkeypatch):
    for var in ("SHIFTBOX_FAKE_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "replayed"), "--tools", tools])
    assert res.exit_code == 0, res.output
    assert "identical to the recording" in res.output


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_is_an_llm_run_with_goal_shifts(fixture):
    info = FixtureInfo.model_validate_json((fixture / "fixture.json").read_text())
    assert info.run.config.agent.startswith("litellm:") and info.run.config.user.startswith("litellm:")
    text = (fixture / "trajectories.jsonl").read_text()
    assert '"shifts":[{' in text and "<<GOAL" not in text    # shifts recorded; control tokens stripped


SECRET = re.compile(r"(?i)authorization|bearer\s|sk-[a-z0-9-]{8,}|x-api-key|api-key:")


def test_no_credentials_in_any_committed_fixture_file():
    offenders = [str(p) for f in FIXTURES for p in f.rglob("*") if p.is_file() and SECRET.search(p.read_text())]
    assert not offenders, f"credentials-like text in: {offenders}"


def test_a_changed_prompt_is_a_cassette_miss_naming_the_field(tmp_path):
    import json
    import shutil

    fixture = tmp_path / "fx"
    shutil.copytree(FIXTURES[0], fixture)
    cassette = sorted((fixture / "cassettes").iterdir())[0]
    lines = cassette.read_text().splitlines()
    first = json.loads(lines[0])
    # the recording now holds a different system prompt than the one the agent/user will send
    first["request"]["messages"][0]["content"] += " (edited)"
    cassette.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "out"), "--tools", "transcript"])
    assert res.exit_code == 1
    assert re.search(r"cassette miss for \S+#0/call 0: request differs in messages\[0\]\.content", res.output)
