"""`shiftbox compare RUN_A RUN_B`: paired differences with paired-bootstrap intervals; expectations by hand."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.metrics import compare, compute_run_metrics
from shiftbox.runs import score_run
from tests.client.harness import HANDWRITTEN
from tests.client.metrics.build import Builder, action, task

runner = CliRunner()


def make_run(out, agent, trials=2):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--agent", agent,
                              "--trials", str(trials), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    return {name: make_run(root / name, agent) for name, agent in
            (("oracle", "scripted:oracle"), ("oracle_again", "scripted:oracle"), ("late", "scripted:late_ack"))}


def compare_json(a, b):
    res = runner.invoke(app, ["compare", str(a), str(b), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def test_two_runs_of_the_same_agent_differ_by_nothing(runs):
    doc = compare_json(runs["oracle"], runs["oracle_again"])
    assert doc["a"] != doc["b"]                                # told apart by their folders
    assert doc["paired_simulations"] == 10 and doc["unpaired_a"] == doc["unpaired_b"] == 0
    for d in doc["differences"]:
        assert d["difference"] == 0, d
        assert d["interval"]["low"] <= 0 <= d["interval"]["high"], d


def test_oracle_against_late_ack(runs):
    doc = compare_json(runs["oracle"], runs["late"])
    by_metric = {d["metric"]: d for d in doc["differences"]}
    oracle, _ = score_run(runs["oracle"])
    late, _ = score_run(runs["late"])
    assert by_metric["tsr"]["difference"] == pytest.approx(late.tsr.mean - oracle.tsr.mean)
    assert by_metric["recovery"]["difference"] == pytest.approx(late.gsrt.recovery_rate - oracle.gsrt.recovery_rate)
    ack = by_metric["median ack turns"]
    assert (ack["a"], ack["b"], ack["difference"]) == (1, 2, 1)   # late_ack spends one turn before acknowledging
    assert ack["interval"]["low"] > 0                             # and that difference is not noise


def _sim(task_id, account, agent):
    t = Builder().user().agent(calls=[("get_account", {"account_id": account})]).build(task_id=task_id)
    return t.model_copy(update={"agent": agent})


def test_paired_bootstrap_interval_by_hand():
    """Two tasks. A: TSR 1.0 on both; B: 0.5 on t1, 1.0 on t2. B - A = -0.25; a resample of two tasks gives
    -0.5, -0.25 or 0 with probability 1/4, 1/2, 1/4, so the interval is [-0.5, 0]."""
    tasks = {t: task(task_id=t, actions=[action("a", "authentication", "get_account", {"account_id": "acc_1"})])
             for t in ("t1", "t2")}
    _, a = compute_run_metrics([_sim("t1", "acc_1", "A"), _sim("t2", "acc_1", "A")], tasks)
    _, b = compute_run_metrics([_sim("t1", "other", "B"), _sim("t2", "acc_1", "B")], tasks)
    tsr = next(d for d in compare(a, b).differences if d.metric == "tsr")
    assert (tsr.a, tsr.b, tsr.difference) == (1.0, 0.75, -0.25)
    assert (tsr.interval.low, tsr.interval.high) == (-0.5, 0.0)


def test_html_report_holds_the_comparison_and_both_agents(runs, tmp_path):
    out = tmp_path / "cmp.html"
    res = runner.invoke(app, ["compare", str(runs["oracle"]), str(runs["late"]), "--html", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert 'id="comparison-table"' in html and 'data-metric="median ack turns"' in html
    assert 'data-agent="scripted:oracle"' in html and 'data-agent="scripted:late_ack"' in html
    assert "B = scripted:late_ack" in res.output


def test_bad_input_names_the_problem(runs, tmp_path):
    res = runner.invoke(app, ["compare", str(tmp_path / "missing"), str(runs["late"])])
    assert res.exit_code == 2 and "not a run directory" in res.output
    both = tmp_path / "both"
    for name in ("oracle", "late"):
        shutil.copytree(runs[name], both / name)
    res = runner.invoke(app, ["compare", str(both), str(runs["late"])])
    assert res.exit_code == 2 and "exactly one agent" in res.output


def _rewrite_trajectories(run_dir, change):
    path = run_dir / "trajectories.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(change(t)) + "\n" for t in lines))


def test_compare_warns_when_the_runs_used_different_user_simulators_or_tool_contracts(runs, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(runs["late"], other)

    def change(t):
        t["user_simulator"] = {"kind": "litellm", "model": "some-model"}
        t["servers"]["banking"]["tool_contract"] = "0" * 64
        return t

    _rewrite_trajectories(other, change)
    data = compare_json(runs["oracle"], other)
    assert any("user simulator" in w for w in data["warnings"]), data["warnings"]
    assert any("tool contract" in w for w in data["warnings"]), data["warnings"]
    res = runner.invoke(app, ["compare", str(runs["oracle"]), str(other), "--html", str(tmp_path / "c.html")])
    assert res.exit_code == 0, res.output
    assert "user simulator" in res.output and "tool contract" in res.output
    page = (tmp_path / "c.html").read_text()
    assert 'id="comparison-warnings"' in page and "user simulator" in page
    assert compare_json(runs["oracle"], runs["late"])["warnings"] == []


def _cells(html: str, table_id: str, tag: str) -> list[list[str]]:
    import re

    table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', html, flags=re.S).group(0)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S)
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(rf"<{tag}>(.*?)</{tag}>", r, flags=re.S)] for r in rows]


def test_compare_page_shows_a_then_b_and_the_headline_metric_names(runs, tmp_path):
    """The page's title, the agents table and the comparison agree: A first, metric names as in the headline."""
    import re

    out = tmp_path / "cmp.html"
    res = runner.invoke(app, ["compare", str(runs["oracle"]), str(runs["late"]), "--html", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    title = re.search(r"<title>(.*?)</title>", html).group(1)
    assert "scripted:oracle, scripted:late_ack" in title, title
    assert "scripted:oracle, scripted:late_ack" in re.search(r"<h1>(.*?)</h1>", html).group(1)
    agents = [row[0] for row in _cells(html, "agents-table", "td") if row]
    assert agents == ["scripted:oracle", "scripted:late_ack"]
    headline = _cells(html, "agents-table", "th")[0]
    compared = [row[0] for row in _cells(html, "comparison-table", "td") if row]
    for name in ("TSR", "TUE", "TCRR", "recovery", "pass^1"):
        assert name in headline and name in compared, (name, headline, compared)
    assert "tsr" not in compared
    table_rows = [line.split("│")[1].strip() for line in res.output.splitlines() if line.startswith("│")]
    assert table_rows[:4] == ["TSR", "TUE", "TCRR", "recovery"], table_rows


def test_compare_shows_a_few_pass_k_rows_and_the_whole_curve(tmp_path):
    """12 trials: pass^k rows for k = 1, 2, 4, 8 and 12 (powers of two and the last) instead of 12 rows, and the
    curve over every k (terminal: one line per run; HTML: a plot with 12 points per run). The JSON keeps all."""
    import re

    a, b = (make_run(tmp_path / name, f"scripted:{name}", trials=12) for name in ("oracle", "late_ack"))
    res = runner.invoke(app, ["compare", str(a), str(b), "--html", str(tmp_path / "c.html")])
    assert res.exit_code == 0, res.output
    shown = [line.split("│")[1].strip() for line in res.output.splitlines()
             if line.startswith("│") and "pass^" in line]
    assert shown == ["pass^1", "pass^2", "pass^4", "pass^8", "pass^12"]
    lines = res.output.splitlines()
    start = next(i for i, line in enumerate(lines) if "pass^k curve, k = 1…12" in line)
    a_line, b_line = lines[start + 1], lines[start + 2]
    assert a_line.split() == ["A", "█" * 12, "scripted:oracle"], a_line  # the oracle passes at every k
    # late_ack's pass^k can fall with k (a persona abandons a goal at its stalling turn): 12 points, one per k
    assert b_line.split()[0] == "B" and len(b_line.split()[1]) == 12 and b_line.split()[2] == "scripted:late_ack"
    html = (tmp_path / "c.html").read_text()
    compared = [row[0] for row in _cells(html, "comparison-table", "td") if row]
    assert [m for m in compared if m.startswith("pass^")] == ["pass^1", "pass^2", "pass^4", "pass^8", "pass^12"]
    svg = re.search(r'<svg[^>]*id="plot-pass-k-curve".*?</svg>', html, flags=re.S).group(0)
    assert len(re.findall(r'<circle\b', svg)) == 24
    doc = compare_json(a, b)
    assert [d["metric"] for d in doc["differences"] if d["metric"].startswith("pass^")] == [
        f"pass^{k}" for k in range(1, 13)]
