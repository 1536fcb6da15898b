"""The end of a run and what every summary says (issue 29 items 4 and 5): the headline per agent instead of a row per
simulation, the simulations not scored and why, LLM tokens and cost per role everywhere, and aggregates over too
few tasks or no simulations saying so. Expected numbers are worked out by hand in each test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.cli.run import run_end
from shiftbox.llm import Usage
from shiftbox.metrics import compare, compute_run_metrics
from shiftbox.report import comparison_table, render_html, summary
from shiftbox.runs import metrics_document, summarize_run
from shiftbox.testing import fake_openai
from shiftbox.testing.fake_openai import Reply
from shiftbox.trajectory import Termination
from tests.client.harness import HANDWRITTEN
from tests.client.metrics.build import Builder, action, task

runner = CliRunner()


def run_cli(out: Path, *extra: str):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out), *extra])


def text_of(renderable) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


# -- the end of `shiftbox run` ------------------------------------------------------------------------------------


def test_a_run_ends_with_the_headline_and_the_next_commands_not_a_row_per_simulation(tmp_path):
    out = tmp_path / "r"
    res = run_cli(out, "--trials", "2")
    assert res.exit_code == 0, res.output
    assert not re.search(r"hw_banking_00\d#\d", res.output), "a row per simulation without --verbose"
    assert "10 simulations" in res.output and "10 scored, 0 not scored" in res.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in res.output.splitlines()
            if line.startswith("│")}
    # the oracle meets every gold action of all 5 tasks in both trials: TSR 1, and every resample of tasks too
    assert rows["TSR"] == "1.000 [1.000, 1.000]" and rows["simulations"] == "10 scored of 10"
    assert rows["pass^2"] == "1.000 [1.000, 1.000]"
    assert "no LLM calls" in res.output
    assert f"shiftbox metrics {out}" in res.output
    assert f"shiftbox report {out} --html {out / 'report.html'}" in res.output
    verbose = run_cli(tmp_path / "v", "--trials", "2", "--verbose")
    assert verbose.exit_code == 0, verbose.output
    assert sorted(set(re.findall(r"hw_banking_00\d#\d", verbose.output))) == sorted(
        f"hw_banking_00{i}#{k}" for i in range(1, 6) for k in range(2))


def llm_script(body: dict) -> Reply:
    """The agent (its requests carry tools) answers once for 100 + 7 tokens; the user opens for 20 + 8 tokens and,
    once the agent has answered, stops for 30 + 3."""
    if body.get("tools"):
        return Reply.text("Done. Anything else?", prompt_tokens=100, completion_tokens=7)
    if len(body["messages"]) > 2:
        return Reply.text("Thanks, that is all. ###STOP###", prompt_tokens=30, completion_tokens=3)
    return Reply.text("Hello, I need my account balance.", prompt_tokens=20, completion_tokens=8)


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory):
    """Two simulations of an LLM agent and an LLM user against the fake server, and what `run` printed."""
    out = tmp_path_factory.mktemp("llm") / "r"
    with pytest.MonkeyPatch.context() as mp, fake_openai(llm_script) as server:
        mp.setenv("OPENAI_API_KEY", "sk-test")
        res = run_cli(out, "--agent", "litellm:openai/fake-model", "--agent-arg", f"api_base={server.base_url}",
                      "--user", "litellm:openai/fake-model", "--user-arg", f"api_base={server.base_url}",
                      "--task-id", "hw_banking_001", "--task-id", "hw_banking_002")
        agent_requests = sum(bool(b.get("tools")) for b in server.requests)
        user_requests = len(server.requests) - agent_requests
    assert res.exit_code == 0, res.output
    assert (agent_requests, user_requests) == (2, 4)  # per simulation: user opens, agent answers, user stops
    return out, res.output


# by hand: agent 2 calls x (100 + 7); user 2 x (20 + 8) + 2 x (30 + 3); the fake model has no price: $0
AGENT = {"calls": 2, "prompt_tokens": 200, "completion_tokens": 14, "cost_usd": 0.0}
USER = {"calls": 4, "prompt_tokens": 100, "completion_tokens": 22, "cost_usd": 0.0}


def test_tokens_per_role_end_the_run_and_are_in_metrics_its_json_the_report_and_compare(llm_run, tmp_path):
    out, printed = llm_run
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in printed.splitlines() if line.startswith("│")]
    assert ["agent", "2", "200", "14", "0.0000"] in rows and ["user", "4", "100", "22", "0.0000"] in rows
    assert ["total", "6", "300", "36", "0.0000"] in rows

    as_json = runner.invoke(app, ["metrics", str(out), "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["usage"] == {"agent": AGENT, "user": USER}
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["run"]["usage"] == {"agent": AGENT, "user": USER}
    assert [s["usage"]["agent"]["prompt_tokens"] for s in saved["simulations"]] == [100, 100]

    shown = runner.invoke(app, ["metrics", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "│ LLM cost │ $0.0000 │ 336 tokens in 6 calls" in one_line(shown.output)
    table = [[c.strip() for c in line.split("│")[1:-1]] for line in shown.output.splitlines() if line.startswith("│")]
    assert ["agent", "2", "200", "14", "0.0000"] in table and ["user", "4", "100", "22", "0.0000"] in table

    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(out), "--html", str(page)]).exit_code == 0
    html = page.read_text()
    assert "LLM tokens and cost" in html and "2 calls, 200 prompt + 14 completion tokens, $0.0000" in html

    compared = runner.invoke(app, ["compare", str(out), str(out)])
    assert compared.exit_code == 0, compared.output
    text = one_line(compared.output)
    for side in ("A", "B"):
        assert f"LLM use · {side}: agent: 2 calls, 200 prompt + 14 completion tokens" in text
    doc = json.loads(runner.invoke(app, ["compare", str(out), str(out), "--json"]).output)
    assert doc["usage_a"] == doc["usage_b"] == {"agent": AGENT, "user": USER}


def hand_built_run():
    """Three simulations of one agent on tasks t1, t2; t2#1 ended on an infrastructure failure (not scored), but its
    LLM calls cost all the same."""
    tasks = {t: task(task_id=t, actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
             for t in ("t1", "t2")}
    spent = [({"agent": Usage(prompt_tokens=1000, completion_tokens=50, cost_usd=0.25, calls=2),
               "user": Usage(prompt_tokens=300, completion_tokens=40, cost_usd=0.01, calls=3)}, "none", "user_stop"),
             ({"agent": Usage(prompt_tokens=500, completion_tokens=25, cost_usd=0.125, calls=1)}, "none", "user_stop"),
             ({"agent": Usage(prompt_tokens=200, completion_tokens=0, cost_usd=0.5, calls=4),
               "user": Usage(prompt_tokens=10, completion_tokens=2, cost_usd=0.0, calls=1)}, "infrastructure",
              "infrastructure_error")]
    trajectories = []
    for (usage, blame, reason), (task_id, trial) in zip(spent, [("t1", 0), ("t2", 0), ("t2", 1)], strict=True):
        t = Builder().user().agent(calls=[("get_account", {"account_id": "acc_1"})]).build(task_id=task_id, trial=trial)
        trajectories.append(t.model_copy(update={"usage": usage, "termination": Termination(
            reason=reason, blame=blame, detail="server down\nTraceback: …" if blame != "none" else "")}))
    return trajectories, tasks


def test_usage_is_summed_by_hand_per_role_over_scored_and_unscored_simulations():
    trajectories, tasks = hand_built_run()
    run, sims = compute_run_metrics(trajectories, tasks)
    assert run.scored_simulations == 2
    assert run.usage == {"agent": Usage(prompt_tokens=1700, completion_tokens=75, cost_usd=0.875, calls=7),
                         "user": Usage(prompt_tokens=310, completion_tokens=42, cost_usd=0.01, calls=4)}
    assert list(run.usage) == ["agent", "user"]
    assert json.loads(metrics_document(run, sims))["run"]["usage"]["agent"]["cost_usd"] == 0.875
    table = [[c.strip() for c in line.split("│")[1:-1]] for line in text_of(summary(run)).splitlines()
             if line.startswith("│")]
    assert ["agent", "7", "1700", "75", "0.8750"] in table and ["total", "11", "2010", "117", "0.8850"] in table
    html = render_html({"a": _scores(run, sims)}, trajectories, None)
    assert "$0.8850" in html  # the card's total: 0.875 + 0.01
    c = compare(sims[:2], sims)
    assert c.usage_a["agent"].prompt_tokens == 1500 and c.usage_b["agent"].prompt_tokens == 1700


def _scores(run, sims):
    from shiftbox.metrics import AgentScores

    return AgentScores(agent=run.agent, metrics=run, simulations=sims)


def test_the_run_end_says_what_was_not_scored_grouped_by_blame_and_reason(tmp_path):
    trajectories, tasks = hand_built_run()
    s = summarize_run(tmp_path / "r", trajectories, tasks, planned=4)
    assert (s.simulations, s.scored, s.planned) == (3, 2, 4)
    assert [(g.blame, g.reason, g.simulations, g.first, g.detail) for g in s.not_scored] == [
        ("infrastructure", "infrastructure_error", 1, "t2#1", "server down")]
    text = one_line(text_of(run_end(s)))
    assert "3 simulations" in text and "2 scored, 1 not scored" in text
    assert "1 × infrastructure: infrastructure_error (first: t2#1: server down)" in text
    assert "t1#0" not in text  # scored simulations get no row


# -- degenerate aggregates ------------------------------------------------------------------------------------------


def test_one_task_has_no_interval_and_every_summary_says_why():
    """One task: every bootstrap resample draws that task, so an interval would only repeat the figure."""
    trajectories, tasks = hand_built_run()
    one = [t for t in trajectories if t.task_id == "t1"]
    run, sims = compute_run_metrics(one, tasks)
    assert run.tsr.mean == 1.0 and run.intervals == {}
    text = one_line(text_of(summary(run)))
    assert "too few tasks for an interval (n=1)" in text and "bootstrap over 1 tasks" not in text
    html = render_html({"a": _scores(run, sims)}, one, None)
    assert "too few tasks for an interval (n=1)" in html
    c = compare(sims, sims)
    assert all(d.interval is None for d in c.differences)
    assert "too few tasks for an interval (n=1)" in one_line(text_of(comparison_table(c)))
    two, _ = compute_run_metrics(trajectories, tasks)  # two tasks: an interval (docs/metrics.md: the minimum)
    assert "tsr" in two.intervals


@pytest.fixture
def empty_run(tmp_path) -> Path:
    out = tmp_path / "empty"
    assert run_cli(out, "--task-id", "hw_banking_001").exit_code == 0
    (out / "trajectories.jsonl").write_text("")  # as left by a run stopped before its first simulation ended
    return out


@pytest.mark.parametrize("command", [["metrics", "{run}"], ["metrics", "{run}", "--json"],
                                     ["report", "{run}", "--html", "{tmp}/r.html"], ["compare", "{run}", "{run}"]])
def test_a_run_without_simulations_says_so_and_exits_1(empty_run, tmp_path, command):
    res = runner.invoke(app, [a.format(run=empty_run, tmp=tmp_path) for a in command])
    assert res.exit_code == 1, res.output
    assert "no simulations in" in res.output and "--resume" in res.output
    assert "│" not in res.output, "no table of '-'"


def test_metrics_of_a_run_where_nothing_could_be_scored_exits_1_after_the_table(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "r"
    res = run_cli(out, "--agent", "litellm:openai/fake-model", "--agent-arg", "api_base=http://127.0.0.1:9",
                  "--agent-arg", "max_retries=0", "--task-id", "hw_banking_001", "--task-id", "hw_banking_002",
                  "--no-preflight")  # the preflight would refuse the run before it starts (exit 2)
    assert res.exit_code == 1, res.output
    assert "no headline: no simulation could be scored" in res.output and "│ TSR" not in res.output
    assert "2 × infrastructure: infrastructure_error (first: hw_banking_001#0: agent litellm:openai/fake-model" in \
        one_line(res.output)
    assert "next:" not in res.output, "nothing to score: the next step is to fix the run, not to score it"
    shown = runner.invoke(app, ["metrics", str(out)])
    assert shown.exit_code == 1, shown.output
    assert "0 scored; not scored: {'infrastructure_error': 2}" in one_line(shown.output)
    assert "no scored simulations: all 2 ended for reasons not the agent's (infrastructure_error 2)" in one_line(
        shown.output)
    assert (out / "metrics.json").exists()
