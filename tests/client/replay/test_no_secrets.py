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


# -- issue 30 item 5: every writer redacts, HTTP cassettes and `cmd:` command lines included -----------------

USERINFO, QUERY_SECRETS, BODY_SECRETS = ("ui-5e4d3c2b1a09f8e7", {"apikey": "qa-1b2c3d4e5f607182", "auth":
                                         "qb-2c3d4e5f60718293", "client_secret": "qc-3d4e5f607182930a"},
                                         {"api_key": "ba-4e5f607182930a1b", "password": "bb-5f607182930a1b2c"})
SECRETS = [USERINFO, *QUERY_SECRETS.values(), *BODY_SECRETS.values()]


def leaks(root, secrets) -> dict[str, list[str]]:
    """Each secret found, with the files (under `root`) holding it."""
    files = [p for p in root.rglob("*") if p.is_file()]
    found = {s: [str(p.relative_to(root)) for p in files if s in p.read_text(errors="replace")] for s in secrets}
    return {s: where for s, where in found.items() if where}


def test_http_cassettes_and_every_run_file_hold_no_credential_of_the_url_query_or_body(tmp_path, monkeypatch):
    import base64

    monkeypatch.setenv("SHIFTBOX_TEST_KEY", "sk-dummy")
    tasks = load_task_file(HANDWRITTEN).tasks
    with fake_openai(ScriptedLLM(tasks)) as server:
        llm = {"api_base": server.base_url.replace("http://", f"http://alice:{USERINFO}@"),
               "api_key_env": "SHIFTBOX_TEST_KEY", "extra.extra_query": json.dumps(QUERY_SECRETS),
               "extra.extra_body": json.dumps(BODY_SECRETS)}
        args = [a for role in ("agent", "user") for k, v in llm.items() for a in (f"--{role}-arg", f"{k}={v}")]
        res = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--agent",
                                       "litellm:openai/fake-model", "--user", "litellm:openai/fake-model", *args,
                                       "--task-id", "hw_banking_001", "--out", str(tmp_path / "run"),
                                       "--record", str(tmp_path / "fixture"), "--llm-cassettes", "http"])
        assert res.exit_code == 0, res.output
        # every secret did reach the provider, so the grep below is meaningful
        body = server.requests[0]
        assert {k: body[k] for k in BODY_SECRETS} == BODY_SECRETS and body["extra_query"] == QUERY_SECRETS
        assert base64.b64decode(server.headers[0]["authorization"].split()[1]).decode() == f"alice:{USERINFO}"
    assert CliRunner().invoke(app, ["metrics", str(tmp_path / "run")]).exit_code == 0
    assert CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--html", str(tmp_path / "report.html")]).exit_code == 0
    assert list((tmp_path / "fixture" / "cassettes").glob("*.yaml")) and (tmp_path / "report.html").exists()
    assert leaks(tmp_path, SECRETS) == {}
    # the redacted fixture still replays over HTTP, offline: its api_base parses, requests match redacted
    monkeypatch.delenv("SHIFTBOX_TEST_KEY")
    res = CliRunner().invoke(app, ["replay", str(tmp_path / "fixture"), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output
    assert leaks(tmp_path, SECRETS) == {}


AGENT_PROGRAM = HANDWRITTEN.parents[3] / "tests" / "client" / "agents" / "external_agent.py"


def test_cmd_agent_command_lines_are_written_without_their_credentials(tmp_path):
    import shlex
    import sys

    option, assigned = "ko-6a7b8c9d0e1f2a3b", "ke-7b8c9d0e1f2a3b4c"
    spec = "cmd:" + shlex.join(["env", f"MY_SERVICE_TOKEN={assigned}", sys.executable, str(AGENT_PROGRAM), "lookup",
                                "cust_0004", "--api-key", option])
    res = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--agent", spec,
                                   "--user", "scripted", "--task-id", "hw_banking_003", "--max-steps", "12",
                                   "--out", str(tmp_path / "run"), "--record", str(tmp_path / "fixture")])
    assert res.exit_code == 0, res.output
    assert CliRunner().invoke(app, ["metrics", str(tmp_path / "run")]).exit_code == 0
    written = {p.name for p in tmp_path.rglob("*") if p.is_file()}
    assert {"run.json", "fixture.json", "trajectories.jsonl", "metrics.json"} <= written
    assert leaks(tmp_path, [option, assigned]) == {}
    run = (tmp_path / "run" / "trajectories.jsonl").read_text()
    assert "MY_SERVICE_TOKEN=[redacted]" in run and "--api-key [redacted]" in run  # the rest of the line is kept


PROGRAM = """
import json, sys
import httpx
base, secrets = sys.argv[1], json.loads(sys.argv[2])
url = base + "/chat/completions?" + "&".join(f"{k}={v}" for k, v in secrets["query"].items())
body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], **secrets["body"]}
print(httpx.post(url, json=body, headers={"Authorization": "Bearer sk-dummy"}).status_code)
"""


def test_an_agent_program_under_python_m_shiftbox_vcr_records_no_credential(tmp_path):
    import os
    import subprocess
    import sys

    program, cassette = tmp_path / "agent.py", tmp_path / "cassettes" / "agent.yaml"
    program.write_text(PROGRAM)
    secrets = json.dumps({"query": QUERY_SECRETS, "body": BODY_SECRETS})
    with fake_openai(["hello"]) as server:
        base = server.base_url.replace("http://", f"http://alice:{USERINFO}@")
        env = {**os.environ, "SHIFTBOX_VCR_CASSETTE": str(cassette), "SHIFTBOX_RECORD_MODE": "once"}
        done = subprocess.run([sys.executable, "-m", "shiftbox.vcr", str(program), base, secrets], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "200", done.stderr
        assert {k: server.requests[0][k] for k in BODY_SECRETS} == BODY_SECRETS  # they did reach the server
    assert cassette.exists() and "chat/completions" in cassette.read_text()
    assert leaks(tmp_path / "cassettes", SECRETS) == {}
