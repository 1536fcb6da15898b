"""`shiftbox run --record DIR` never finishes a fixture of failures: when simulations ended for reasons not the
agent's (the user simulator's model failing, infrastructure), no fixture.json is written, the run exits 1 naming
them, and `shiftbox replay DIR` refuses the directory."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import FIXTURE_FILE
from shiftbox.testing import Reply, fake_openai
from shiftbox.testing.fake_brains import ScriptedLLM
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN, handwritten
from tests.client.walkthrough import code_blocks, run_beside_fake_llm, scratch_checkout

runner = CliRunner()
IDS = ["hw_banking_001", "hw_banking_002"]


def user_model_down(body: dict) -> Reply:
    """Every request answered by the scripted model, but those of the user simulator of the second task (its
    prompt holds what that user knows) by a server error."""
    system = (body.get("messages") or [{}])[0].get("content") or ""
    second = next(t for t in handwritten().tasks if t.id == IDS[1]).user_scenario.instructions.known_info.strip()
    if second in system:
        return Reply.error(500, "the user model is down")
    return ScriptedLLM(handwritten().tasks)(body)


def record(server, tmp_path, fixture):
    roles = []
    for role in ("agent", "user"):
        roles += [f"--{role}", "litellm:openai/fake-model", f"--{role}-arg", f"api_base={server.base_url}"]
    selection = [arg for task_id in IDS for arg in ("--task-id", task_id)]
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), *selection, *roles,
                               "--max-retries", "0", "--out", str(tmp_path / "live"), "--record", str(fixture)])


def test_a_recording_whose_simulations_failed_is_not_finished_as_a_fixture(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / FIXTURE_FILE).write_text("{}")  # an earlier recording's: not left to pass for this one
    with fake_openai(user_model_down) as server:
        res = record(server, tmp_path, fixture)
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split()).split("error: ", 1)[-1]  # the error, after the summary table
    assert f"fixture {fixture} not finished" in text
    assert "1 of 2 simulations" in text and "hw_banking_002#0" in text and "hw_banking_001#0" not in text
    assert not (fixture / FIXTURE_FILE).exists()
    replayed = runner.invoke(app, ["replay", str(fixture), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 2 and "not a fixture" in replayed.output


def test_a_healthy_recording_is_finished(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    with fake_openai(ScriptedLLM(handwritten().tasks)) as server:
        res = record(server, tmp_path, tmp_path / "fx")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "fx" / FIXTURE_FILE).exists()
    replayed = runner.invoke(app, ["replay", str(tmp_path / "fx"), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 0, replayed.output


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_replay_page_recording_example_runs_as_written(tmp_path):
    """docs/replay.md's offline recording: the fake LLM, then the run recorded with both roles given its address,
    then the replay without a key; on a free port instead of the page's."""
    server, commands = code_blocks("replay.md", "bash")
    checkout, env = scratch_checkout(tmp_path)
    done = run_beside_fake_llm(server, commands, checkout, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "identical to the recording" in done.stdout
    assert (checkout / "fixtures" / "mine" / FIXTURE_FILE).exists()
    assert len(read_trajectories(checkout / "runs" / "replayed")) == 2
