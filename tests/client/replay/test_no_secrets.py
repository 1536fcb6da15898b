"""No secret — the value of an API key's environment variable — is ever written to a run or fixture."""

from __future__ import annotations

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
