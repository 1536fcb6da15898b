"""`--llm-cassettes http`: the boundary's HTTP-level mode. Two simulations run at once, each recording its LLM
exchanges (agent and user simulator through litellm's fast path, against the fake server) into its own vcrpy
cassette; with the server gone and no key, the fixture replays identically through litellm's response parsing."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

import shiftbox
from shiftbox.errors import RunPlanError
from shiftbox.testing import fake_openai
from shiftbox.testing.fake_brains import ScriptedLLM
from tests.client.harness import HANDWRITTEN, handwritten

KEY_ENV, KEY = "SHIFTBOX_VCR_TEST_KEY", "sk-http-cassette-secret-42"
TASK_IDS = ["hw_banking_001", "hw_banking_002"]


def llm_args(base_url: str) -> dict[str, str]:
    return {"api_base": base_url, "api_key_env": KEY_ENV}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, list[dict], list[shiftbox.Trajectory]]:
    """The fixture, recorded with the two simulations running concurrently; the server's requests in arrival order."""
    tmp = tmp_path_factory.mktemp("http-cassettes")
    tasks = handwritten().tasks
    with pytest.MonkeyPatch.context() as env, fake_openai(ScriptedLLM(tasks), api_key=KEY) as server:
        env.setenv(KEY_ENV, KEY)
        plan = shiftbox.plan_run(HANDWRITTEN, tmp / "live", agent="litellm:openai/fake-model",
                                 user="litellm:openai/fake-model", agent_args=llm_args(server.base_url),
                                 user_args=llm_args(server.base_url), task_ids=TASK_IDS,
                                 options=shiftbox.ExecutionOptions(concurrency=2),
                                 record=tmp / "fixture", llm_cassettes="http")
        result = shiftbox.run_evaluation(plan)
        requests = list(server.requests)
    return tmp / "fixture", requests, result.trajectories


def canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True)


def interactions(cassette: Path) -> list[dict]:
    return yaml.safe_load(cassette.read_text())["interactions"]


def test_each_simulation_records_into_its_own_vcrpy_cassette(recorded):
    fixture, requests, trajectories = recorded
    cassettes = {p.stem: p for p in (fixture / "cassettes").iterdir()}
    assert sorted(cassettes) == ["hw_banking_001_0", "hw_banking_002_0"]  # vcrpy's YAML only, no boundary cassette
    owner = {}
    for trajectory in trajectories:
        held = interactions(cassettes[trajectory.simulation_id.replace("#", "_")])
        calls = sum(int(u.calls) for u in trajectory.usage.values())
        assert len(held) == calls > 2  # every LLM call of this simulation (agent and user), and only those
        for interaction in held:
            assert interaction["request"]["method"] == "POST"
            assert interaction["request"]["uri"].endswith("/v1/chat/completions")
            owner[canonical(json.loads(interaction["request"]["body"]))] = trajectory.simulation_id
    assert len(owner) == len(requests)
    order = [owner[canonical(body)] for body in requests]  # each request the server saw, by the cassette holding it
    switches = sum(a != b for a, b in zip(order, order[1:], strict=False))
    assert switches >= 2, "the simulations did not run at the same time"


def test_no_credential_reaches_the_http_cassettes(recorded):
    fixture, _, _ = recorded
    for cassette in (fixture / "cassettes").iterdir():
        text = cassette.read_text()
        assert KEY not in text and "authorization" not in text.lower()


def test_the_http_fixture_replays_identically_offline_without_a_key(recorded, tmp_path, monkeypatch):
    fixture, _, _ = recorded
    monkeypatch.delenv(KEY_ENV, raising=False)
    result = shiftbox.replay_fixture(fixture, tmp_path / "replay")
    assert result.identical, (result.failed, result.problems)
    assert result.simulations == 2


def test_a_changed_request_is_a_cassette_miss_naming_the_simulation(recorded, tmp_path):
    fixture, _, _ = recorded
    changed = tmp_path / "changed"
    shutil.copytree(fixture, changed)
    cassette = changed / "cassettes" / "hw_banking_002_0.yaml"
    data = yaml.safe_load(cassette.read_text())
    data["interactions"][0]["request"]["body"] = data["interactions"][0]["request"]["body"].replace("fake-model",
                                                                                                    "other-model")
    cassette.write_text(yaml.safe_dump(data))
    result = shiftbox.replay_fixture(changed, tmp_path / "replay")
    assert not result.identical
    assert "cassette miss for hw_banking_002#0/call 0" in (result.failed or "") + " ".join(result.problems)


def test_http_cassettes_need_record_and_the_extra(tmp_path, monkeypatch):
    with pytest.raises(RunPlanError, match="--llm-cassettes http needs --record"):
        shiftbox.plan_run(HANDWRITTEN, tmp_path / "a", llm_cassettes="http")
    with pytest.raises(RunPlanError, match="--llm-cassettes 'tape' is not one of boundary, http"):
        shiftbox.plan_run(HANDWRITTEN, tmp_path / "b", record=tmp_path / "fx", llm_cassettes="tape")
    monkeypatch.setitem(sys.modules, "vcr", None)
    with pytest.raises(RunPlanError, match=r"records with vcrpy: pip install 'shiftbox\[vcr\]'"):
        shiftbox.plan_run(HANDWRITTEN, tmp_path / "c", record=tmp_path / "fx", llm_cassettes="http")


def test_shiftbox_run_takes_the_option(tmp_path):
    from typer.testing import CliRunner

    from shiftbox.cli import app

    done = CliRunner().invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                                    str(tmp_path / "run"), "--llm-cassettes", "http"])
    assert done.exit_code == 2, done.output
    assert "--llm-cassettes http needs --record" in done.output
    assert not (tmp_path / "run").exists()
