"""`shiftbox run`'s preflight (issue 29 item 2): a missing, wrong or unauthorised key, or a model server nobody
runs, stops the run before any simulation starts (exit 2, in well under a second, naming the model, the
endpoint and the fix); `--no-preflight` skips it, and then each simulation's auth failure is tried once and
named in full; a replay never runs a preflight."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.llm import LLMEndpoint
from shiftbox.testing import fake_openai
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, REPO

runner = CliRunner()
WRONG_KEY_MESSAGE = ("Incorrect API key provided: sk-w*****0002. You can find your API key at "
                     "https://platform.openai.com/account/api-keys.")  # sk-wrong-0002: 4 shown, 5 starred, 4 shown
FIX = "fix: set OPENAI_API_KEY to a valid key (or keep the key in another variable and name it: --agent-arg api_key_env=NAME)"
TWO_TASKS = ("--task-id", "hw_banking_001", "--task-id", "hw_banking_002")


@pytest.fixture(autouse=True)
def no_openai_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def run_llm(out: Path, base: str, *extra: str):
    start = time.monotonic()
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                              "--agent", "litellm:openai/fake-model", "--agent-arg", f"api_base={base}", *TWO_TASKS,
                              *extra])
    return res, time.monotonic() - start


def one_line(output: str) -> str:
    return " ".join(output.split())


def test_a_missing_key_refuses_the_run_at_once_without_a_request(tmp_path):
    with fake_openai(["never"], api_key="sk-right") as server:
        base = server.base_url
        res, took = run_llm(tmp_path / "r", base)
    assert res.exit_code == 2, res.output
    assert took < 1.0
    said = one_line(res.output)
    assert (f"error: authentication failed for model openai/fake-model at {base}: no API key: "
            f"OPENAI_API_KEY is not set; {FIX}") in said
    assert "--no-preflight skips it" in said
    assert server.requests == [] and server.rejected == []
    assert not (tmp_path / "r").exists()                       # refused before anything is written


def test_a_wrong_key_refuses_the_run_with_the_providers_whole_message(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0002")
    with fake_openai(["never"], api_key="sk-right") as server:
        base = server.base_url
        res, took = run_llm(tmp_path / "r", base, "--user", "litellm:openai/fake-model",
                            "--user-arg", f"api_base={server.base_url}")
    assert res.exit_code == 2, res.output
    assert took < 1.0
    said = one_line(res.output)
    assert f"authentication failed for model openai/fake-model at {base}: {WRONG_KEY_MESSAGE}; {FIX}" in said
    assert server.rejected == [("GET", "/v1/models")]           # agent and user share the endpoint: one request
    assert server.requests == [] and not (tmp_path / "r").exists()


def test_permission_denied_refuses_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fine")
    denied = "Project `proj_abc` does not have access to model `fake-model`"
    with fake_openai(["never"], permission_denied=denied) as server:
        base = server.base_url
        res, _ = run_llm(tmp_path / "r", base)
    assert res.exit_code == 2, res.output
    assert f"authentication failed for model openai/fake-model at {base}: {denied}; {FIX}" in one_line(res.output)
    # the list of models was refused, and a 1-token completion confirmed it (a key may be kept from listing only)
    assert server.rejected == [("GET", "/v1/models"), ("POST", "/v1/chat/completions")]


def test_a_key_variable_named_but_unset_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("SHIFTBOX_TEST_UNSET_KEY", raising=False)
    with fake_openai(["never"]) as server:
        res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(tmp_path / "r"),
                                  "--user", "litellm:openai/fake-model", "--user-arg", f"api_base={server.base_url}",
                                  "--user-arg", "api_key_env=SHIFTBOX_TEST_UNSET_KEY", *TWO_TASKS])
    assert res.exit_code == 2, res.output
    assert ("no API key: SHIFTBOX_TEST_UNSET_KEY is not set; fix: set SHIFTBOX_TEST_UNSET_KEY to a valid key"
            in one_line(res.output))


def test_a_model_server_nobody_runs_refuses_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fine")
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{free.getsockname()[1]}/v1"
    res, took = run_llm(tmp_path / "r", dead)
    assert res.exit_code == 2, res.output
    assert took < 1.0
    said = one_line(res.output)
    assert f"cannot reach model openai/fake-model at {dead}: " in said
    assert "fix: start the model server there, or give its address with --agent-arg api_base=URL" in said


def test_without_the_preflight_each_simulation_tries_once_and_names_the_failure_in_full(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0002")
    with fake_openai(["never"], api_key="sk-right") as server:
        base = server.base_url
        res, _ = run_llm(tmp_path / "r", base, "--no-preflight", "--agent-arg", "max_retries=3")
    assert res.exit_code == 1, res.output                       # nothing could be scored
    assert server.rejected == [("POST", "/v1/chat/completions")] * 2   # one request per simulation: no retry
    for t in read_trajectories(tmp_path / "r"):
        assert t.termination.blame == "infrastructure"
        assert (f"authentication failed for model openai/fake-model at {base}: {WRONG_KEY_MESSAGE}; {FIX}"
                in t.termination.detail)
    assert f"{WRONG_KEY_MESSAGE}; {FIX}" in one_line(res.output)   # the summary's line is not cut either


def boom(self, timeout_s):
    raise AssertionError("a preflight ran")


def test_a_replay_runs_no_preflight_and_a_live_run_does(tmp_path, monkeypatch):
    monkeypatch.setattr(LLMEndpoint, "check", boom)
    fixture = REPO / "fixtures" / "banking-litellm"
    assert json.loads((fixture / "fixture.json").read_text())["run"]["config"]["agent"].startswith("litellm:")
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 0, res.output
    assert "identical to the recording" in res.output
    res, _ = run_llm(tmp_path / "live", "http://127.0.0.1:9/v1")
    assert isinstance(res.exception, AssertionError) and "a preflight ran" in str(res.exception)


def test_the_llm_judge_is_preflighted_before_scoring_but_not_when_it_replays(tmp_path, monkeypatch):
    run = tmp_path / "run"
    assert runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(run),
                               "--task-id", "hw_banking_001"]).exit_code == 0
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0002")
    with fake_openai(["never"], api_key="sk-right") as server:
        base = server.base_url
        res = runner.invoke(app, ["metrics", str(run), "--judge", "litellm:openai/fake-model",
                                  "--judge-arg", f"api_base={base}"])
        assert res.exit_code == 2, res.output
        assert (f"authentication failed for model openai/fake-model at {base}: {WRONG_KEY_MESSAGE}; fix: set "
                "OPENAI_API_KEY to a valid key (the preflight checks this before scoring; --no-preflight skips it)"
                in one_line(res.output))                      # the judge takes no api_key_env: not suggested
        assert server.rejected == [("GET", "/v1/models")]
        cassettes = tmp_path / "judge"
        cassettes.mkdir()
        res = runner.invoke(app, ["metrics", str(run), "--judge", "litellm:openai/fake-model",
                                  "--judge-arg", f"api_base={base}", "--judge-replay", str(cassettes)])
        assert "preflight" not in res.output
        assert server.rejected == [("GET", "/v1/models")]     # no request: the judge answers from its cassettes
