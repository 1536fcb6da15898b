"""`shiftbox metrics RUN --compat agentchangebench --judge MODEL` on a shiftbox run: the reference's GSRT judge is
asked through the LLM boundary and replays offline from the committed cassettes
(fixtures/banking-rubric/compat-gsrt-cassettes, recorded by bench/record_compat_gsrt_fixture.py against the local
fake server with `ScriptedJudge` answering)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.replay import FIXTURES, offline_copy

FIXTURE = FIXTURES / "banking-rubric"
CASSETTES = FIXTURE / "compat-gsrt-cassettes"
JUDGE = ["--compat", "agentchangebench", "--judge", "litellm:openai/fake-model"]
runner = CliRunner()


@pytest.fixture
def run_dir(tmp_path, monkeypatch) -> Path:
    return offline_copy(FIXTURE, tmp_path, monkeypatch)


def test_without_a_judge_a_shiftbox_run_is_not_judged_and_says_how_to_judge_it(run_dir):
    """The bug: compat mode reported 0 shifts on a run whose harness recorded 5. Without a judge the reference's
    GSRT is undefined (never 0 shifts passed off as a finding), and the note names --judge."""
    res = runner.invoke(app, ["metrics", str(run_dir), "--compat", "agentchangebench", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["gsrt"]["recovery_rate"] is None and data["gsrt"]["median_ack"] is None
    note = next(n for n in data["notes"] if n.startswith("GSRT: 3 of 3 simulations"))
    assert "--judge" in note and "harness recorded 5 shifts" in note


def test_the_judge_replays_offline_and_gives_the_papers_gsrt(run_dir):
    """By hand from the fixture's transcripts (ScriptedJudge: a shift is the user message naming the next goal; ack
    and outcome the first assistant message after it naming that goal's words / saying the request is done; tool
    the first assistant message after it whose next message is a tool result; none follows any shift):
      hw_banking_001#0: shifts at 10 (authentication -> transactions) and 12 (-> dispute), each answered at +1;
      hw_banking_002#0: 10 (authentication -> cards), 12 (-> statements), each +1;
      hw_banking_004#0: 10 (account_info -> cards), +1.
    5 shifts, all recovered (ack after the shift, no transfer): recovery 1.0, transfer 0.0, median ack 1 and
    outcome 1 (message-index deltas), no tool time (never_tool 1.0)."""
    res = runner.invoke(app, ["metrics", str(run_dir), *JUDGE, "--judge-replay", str(CASSETTES), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    gsrt = data["gsrt"]
    assert gsrt["shifts"] == 5
    assert (gsrt["recovery_rate"], gsrt["transfer_rate"]) == (1.0, 0.0)
    assert (gsrt["median_ack"], gsrt["median_tool"], gsrt["median_outcome"]) == (1.0, None, 1.0)
    assert (gsrt["never_ack"], gsrt["never_tool"], gsrt["never_outcome"]) == (0.0, 1.0, 0.0)
    assert data["judge"]["name"] == "llm:openai/fake-model"
    assert data["judge"]["usage"]["prompt_tokens"] > 0
    assert not any(n.startswith("GSRT: 3 of 3") for n in data["notes"])
    assert any("the judge located 5 shifts; the harness recorded 5" in n for n in data["notes"])
    by_domain = data["by_domain"]["banking"]["gsrt"]
    assert by_domain["shifts"] == 5 and by_domain["recovery_rate"] == 1.0


def test_the_judged_shifts_per_simulation(run_dir):
    from shiftbox import load_task_file, read_trajectories
    from shiftbox.agentchangebench import compat_run_metrics
    from shiftbox.runs import TASKS_FILE, make_judge

    judge = make_judge("litellm:openai/fake-model", replay=CASSETTES)
    trajectories = read_trajectories(run_dir)
    tasks = {task.id: task for task in load_task_file(run_dir / TASKS_FILE).tasks}
    _, sims = compat_run_metrics(trajectories, tasks, judge=judge)
    got = {s.simulation_id: [(r.message_index, r.from_goal, r.to_goal, r.ack, r.tool, r.outcome) for r in s.gsrt]
           for s in sims}
    assert got == {
        "hw_banking_001#0": [(10, "authentication", "transactions", 1, None, 1),
                             (12, "transactions", "dispute", 1, None, 1)],
        "hw_banking_002#0": [(10, "authentication", "cards", 1, None, 1), (12, "cards", "statements", 1, None, 1)],
        "hw_banking_004#0": [(10, "account_info", "cards", 1, None, 1)],
    }
    assert all(s.gsrt_judged for s in sims)


def test_a_changed_transcript_is_a_cassette_miss(run_dir):
    lines = (run_dir / "trajectories.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["messages"][1]["content"] += " (edited)"
    lines[0] = json.dumps(first)
    (run_dir / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["metrics", str(run_dir), *JUDGE, "--judge-replay", str(CASSETTES)])
    assert res.exit_code == 1 and "cassette miss" in res.output
