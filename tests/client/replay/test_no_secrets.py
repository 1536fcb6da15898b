"""No secret — the value of an API key's environment variable — is ever written to a run or fixture."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.tasks import load_task_file
from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.testing.fake_openai import fake_openai
from tests.client.harness import HANDWRITTEN

SECRET = "sk-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def test_api_key_values_never_reach_run_or_fixture_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTBOX_TEST_KEY", SECRET)
    tasks = load_task_file(HANDWRITTEN).tasks
    with fake_openai(ScriptedLLM(tasks), api_key=SECRET) as server:
        args = []
        for role in ("agent", "user"):
            args += [f"--{role}", "litellm:openai/fake-model", f"--{role}-arg", f"api_base={server.base_url}",
                     f"--{role}-arg", "api_key_env=SHIFTBOX_TEST_KEY"]
        res = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), *args,
                                       "--task-id", "hw_banking_001", "--out", str(tmp_path / "run"),
                                       "--record", str(tmp_path / "fixture")])
        assert res.exit_code == 0, res.output
        # the key did reach the provider (the fake requires it), so the check below is meaningful
        assert server.headers and all(SECRET in (h.get("authorization") or h.get("Authorization") or "")
                                      for h in server.headers)
    res = CliRunner().invoke(app, ["metrics", str(tmp_path / "run")])
    assert res.exit_code == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 8
    leaked = [str(p) for p in files if SECRET in p.read_text(errors="replace")]
    assert not leaked, f"the API key was written to: {leaked}"
    assert SECRET not in res.output


# -- issue 15 item 10: secrets passed through options are redacted wherever options are recorded --------

PASSWORD, HEADER_SECRET, QUERY_SECRET = "pw-4a1b2c3d4e5f6071", "hdr-8f7e6d5c4b3a2910", "qk-0a9b8c7d6e5f4a3b"


def test_credentials_in_options_are_never_written_to_run_fixture_or_cassette_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTBOX_TEST_KEY", "sk-dummy")
    tasks = load_task_file(HANDWRITTEN).tasks
    with fake_openai(ScriptedLLM(tasks)) as server:
        base = server.base_url.replace("http://", f"http://alice:{PASSWORD}@")
        headers = json.dumps({"Authorization": f"Bearer {HEADER_SECRET}", "X-Api-Key": HEADER_SECRET})
        args = []
        for role in ("agent", "user"):
            args += [f"--{role}", "litellm:openai/fake-model", f"--{role}-arg", f"api_base={base}",
                     f"--{role}-arg", "api_key_env=SHIFTBOX_TEST_KEY", f"--{role}-arg", f"extra.extra_headers={headers}"]
        cmd = ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), *args, "--task-id", "hw_banking_001"]
        res = CliRunner().invoke(app, [*cmd, "--out", str(tmp_path / "run"), "--record", str(tmp_path / "fixture")])
        assert res.exit_code == 0, res.output
        # the secrets did reach the provider, so the check below is meaningful
        assert server.headers and all(h.get("x-api-key") == HEADER_SECRET for h in server.headers)
        # resuming with the same options is the same configuration, although run.json holds them redacted
        res = CliRunner().invoke(app, [*cmd, "--out", str(tmp_path / "run"), "--resume"])
        assert res.exit_code == 0, res.output
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"run.json", "fixture.json"} <= {p.name for p in files} and any("cassettes" in p.parts for p in files)
    for secret in (PASSWORD, HEADER_SECRET):
        leaked = [str(p.relative_to(tmp_path)) for p in files if secret in p.read_text(errors="replace")]
        assert not leaked, f"{secret} was written to: {leaked}"
    config = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert "alice" not in config["agent_args"]["api_base"] and "127.0.0.1" in config["agent_args"]["api_base"]
    # the fixture (credentials redacted) still replays: requests are compared redacted
    res = CliRunner().invoke(app, ["replay", str(tmp_path / "fixture"), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("value", [
    f"https://alice:{PASSWORD}@llm.example.com/v1",
    f"https://llm.example.com/v1?key={QUERY_SECRET}",
    f"https://llm.example.com/v1?api-version=2024&api_key={QUERY_SECRET}",
    f"https://llm.example.com/v1?code={QUERY_SECRET}&x=1",
    json.dumps({"Authorization": f"Bearer {HEADER_SECRET}"}),
    json.dumps({"api-key": HEADER_SECRET, "X-Custom": HEADER_SECRET}),
])
def test_redaction_removes_credentials_and_keeps_the_rest(value):
    from shiftbox.redact import redact

    key = "api_base" if value.startswith("https://") else "extra.extra_headers"
    options = {key: value, "temperature": "0.2", "api_key_env": "MY_KEY"}
    cleaned = redact(options)
    assert all(s not in json.dumps(cleaned) for s in (PASSWORD, HEADER_SECRET, QUERY_SECRET))
    assert cleaned["temperature"] == "0.2" and cleaned["api_key_env"] == "MY_KEY"  # names a variable: kept
    if value.startswith("https://"):
        assert cleaned["api_base"].startswith("https://") and "llm.example.com/v1" in cleaned["api_base"]
    assert redact(cleaned) == cleaned  # idempotent: a redacted configuration compares equal to itself
    request = {"params": {"extra_headers": {"Authorization": f"Bearer {HEADER_SECRET}"}, "temperature": 0}}
    assert HEADER_SECRET not in json.dumps(redact(request)) and redact(request)["params"]["temperature"] == 0
