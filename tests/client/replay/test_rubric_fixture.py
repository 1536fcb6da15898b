"""The committed rubric fixture (fixtures/banking-rubric, recorded by bench/record_rubric_fixture.py against the
local fake server): its judge's calls replay offline, with no key, and give the recorded verdicts exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.replay import offline_copy

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "banking-rubric"
JUDGE = ["--judge", "litellm:openai/fake-model", "--judge-arg", "rubric_window=6", "--judge-arg", "rubric_stride=4"]
runner = CliRunner()


@pytest.fixture
def replayed(tmp_path, monkeypatch) -> dict:
    """The fixture scored again with every judge answer from its cassettes: metrics.json as a dict."""
    run = offline_copy(FIXTURE, tmp_path, monkeypatch)
    res = runner.invoke(app, ["metrics", str(run), *JUDGE, "--judge-replay", str(FIXTURE / "judge-cassettes")])
    assert res.exit_code == 0, res.output
    assert "rubric pass rate" in res.output
    assert "rubric pass^k" in res.output and "k=1: 0.667" in res.output   # 2 of 3 one-trial tasks pass
    return json.loads((run / "metrics.json").read_text())


def test_the_judge_replays_offline_with_identical_verdicts(replayed):
    recorded = json.loads((FIXTURE / "judge-verdicts.json").read_text())
    assert {"judge": replayed["run"]["judge"], "rubric": replayed["run"]["rubric"],
            "simulations": {s["simulation_id"]: s["rubric"] for s in replayed["simulations"]}} == recorded


def test_the_recorded_verdicts_are_the_scripted_judges(replayed):
    """ScriptedJudge meets an item once its quoted phrases have all been seen (its notes carry them forward);
    windows of 6, stride 4 over 15 messages are [0-5], [4-9], [8-13], [12-14], over 13 messages [0-5], [4-9],
    [8-12]; every window is asked, since a later one may take an item back."""
    sims = {s["simulation_id"]: s["rubric"] for s in replayed["simulations"]}
    assert sorted(sims) == ["hw_banking_001#0", "hw_banking_002#0", "hw_banking_004#0"]
    first = sims["hw_banking_001#0"]
    assert first["windows"] == [[0, 5], [4, 9], [8, 13], [12, 14]]
    # phone number (message 1) and the lookup (3) in window 0, the dispute (7, 8) in window 1, the second request
    # (10, 11) in window 2; the credit limit increase is never offered
    assert [(v["met"], v["window"]) for v in first["items"]] == [(True, 0), (True, 0), (True, 1), (True, 2),
                                                                  (False, None)]
    assert first["items"][2]["trail"] == [False, True, True, True]
    assert first["judged_windows"] == 4 and first["success"] is False
    second = sims["hw_banking_002#0"]
    assert [v["window"] for v in second["items"]] == [0, 1, 3] and second["success"] is True
    fourth = sims["hw_banking_004#0"]
    assert fourth["windows"] == [[0, 5], [4, 9], [8, 12]]
    assert [v["window"] for v in fourth["items"]] == [0, 1] and fourth["judged_windows"] == 3
    assert fourth["success"] is True
    rubric = replayed["run"]["rubric"]
    assert (rubric["judged"], rubric["passed"], rubric["pass_rate"]) == (3, 2, 2 / 3)
    assert (rubric["items"], rubric["items_met"]) == (10, 9)
    # one trial per task: pass^1 = pass@1 = avg@1 = the pass rate, 2 of 3 tasks
    assert rubric["pass_hat_k"] == rubric["pass_at_k"] == rubric["avg_at_k"] == {"1": 2 / 3}


def test_a_changed_rubric_item_is_a_cassette_miss_naming_the_simulation(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    tasks = json.loads((run / "tasks.json").read_text())
    tasks["tasks"][0]["evaluation_criteria"]["rubric"][0] += " (edited)"
    (run / "tasks.json").write_text(json.dumps(tasks))
    res = runner.invoke(app, ["metrics", str(run), *JUDGE, "--judge-replay", str(FIXTURE / "judge-cassettes")])
    assert res.exit_code == 1
    assert "cassette miss for hw_banking_001#0" in res.output and "request differs in messages[1].content" in res.output


def test_other_windows_than_the_recording_are_a_cassette_miss(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    res = runner.invoke(app, ["metrics", str(run), "--judge", "litellm:openai/fake-model",
                              "--judge-replay", str(FIXTURE / "judge-cassettes")])
    assert res.exit_code == 1 and "cassette miss" in res.output
