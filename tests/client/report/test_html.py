"""The HTML report: self-contained, one plot per figure, every simulation, shift badges, escaping, determinism."""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.cli.report import report
from shiftbox.metrics import score_by_agent
from shiftbox.report import histogram, nice_ticks, redundant_calls, render_html
from shiftbox.runs import RUN_FILE, TASKS_FILE, score_run, write_html_report
from shiftbox.tasks import load_task_file
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
PLOT_TITLES = {"TSR by persona", "GSRT stages by domain", "GSRT stages by agent", "GSRT stages by goal shift",
               "TCRR distribution", "TUE distribution"}
EVIL = "<script>alert(1)</script>"


def load_run(run_dir: Path) -> tuple:
    """What `render_html` takes for one run directory, read with public names (scores, trajectories, run.json);
    `write_html_report` reads the same (test_the_same_run_renders_byte_identical_html compares the two)."""
    trajectories = read_trajectories(run_dir)
    tasks = {task.id: task for task in load_task_file(run_dir / TASKS_FILE).tasks}
    return score_by_agent(trajectories, tasks), trajectories, json.loads((run_dir / RUN_FILE).read_text())


def make_run(out: Path, agent: str, trials: int = 1) -> Path:
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--agent", agent,
                              "--trials", str(trials), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def late_ack(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("late_ack") / "run", "scripted:late_ack", trials=2)


@pytest.fixture(scope="module")
def wrong_params(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("wrong_params") / "run", "scripted:wrong_params")


@pytest.fixture(scope="module")
def late_ack_html(late_ack) -> str:
    return render_html(*load_run(late_ack))


def report_cli(*args: str):
    cli = typer.Typer()
    cli.command()(report)
    return runner.invoke(cli, list(args))


def test_report_loads_nothing_from_outside(late_ack_html):
    html = late_ack_html
    for attr in re.findall(r'\b(?:src|href|action|xlink:href|srcset)\s*=\s*"([^"]*)"', html, flags=re.I):
        assert attr.startswith("#"), f"external reference {attr!r}"
    assert not re.search(r"<link\b", html, flags=re.I)
    assert not re.search(r"<script\b[^>]*\bsrc\s*=", html, flags=re.I)
    assert not re.search(r"<(iframe|object|embed|img)\b", html, flags=re.I)
    assert not re.search(r"@import|url\(", html, flags=re.I)
    assert not re.search(r"https?://", html), "no URL at all in a report of scripted runs"
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert csp and "default-src &#x27;none&#x27;" in csp.group(1)


def test_one_svg_per_plot_with_its_title(late_ack_html):
    svgs = re.findall(r"<svg\b.*?</svg>", late_ack_html, flags=re.S)
    titles = [re.search(r"<title[^>]*>(.*?)</title>", s).group(1) for s in svgs]
    assert sorted(titles) == sorted(PLOT_TITLES)
    for svg in svgs:
        assert "<line" in svg and "<text" in svg  # axes, ticks, labels
    gsrt = next(s for s in svgs if "GSRT stages by domain" in s)
    for legend in (">ack<", ">tool<", ">outcome<", ">p90<", ">banking<", "agent turns after the shift"):
        assert legend in gsrt
    assert late_ack_html.count("<svg") == len(PLOT_TITLES)


def test_headline_figures_and_counts(late_ack, late_ack_html):
    run_metrics, _ = score_run(late_ack)
    html = late_ack_html
    for label in ("TSR", "TUE", "TCRR", "Goal-shift recovery", "GSRT", "pass^k", "communicate_info",
                  "P (schema-valid arguments)", "T (executed without error)"):
        assert label in html
    assert f"{run_metrics.gsrt.shifts} shifts recovered" in html
    assert f"over {run_metrics.tue.calls} calls" in html
    assert "k=2" in html


def test_path_evaluation_tables_by_mission_type_position_structure_relation_and_prefix(late_ack, late_ack_html):
    paths = score_run(late_ack)[0].paths
    html = late_ack_html
    for kind in ("mission-table", "structure-table", "relation-table", "prefix-table"):
        assert f'class="data {kind}"' in html
    assert "Path accuracy \u00b7 MMTB" in html
    assert paths.goals and paths.by_type and paths.by_relation
    for kind, s in paths.by_type.items():
        assert f"<tr><td>{kind}</td>" in html and f"<td>{s.accuracy:.3f} ({s.goals})</td></tr>" in html
    for key, s in paths.prefixes.items():
        row = f"<tr><td>{key.replace('->', ' -&gt; ')}</td><td>{s.accuracy:.3f} ({s.goals})</td></tr>" if s.goals else ""
        assert row in html
    assert f"{sum(s.goals > 0 for s in paths.prefixes.values())} of 340 prefixes have goals" in html


def test_every_simulation_is_listed_with_its_conversation(late_ack, late_ack_html):
    trajectories = read_trajectories(late_ack)
    assert len(trajectories) == 10
    listed = re.findall(r'<details class="sim" id="sim-\d+" data-sim="([^"]*)"', late_ack_html)
    assert sorted(listed) == listed == sorted(t.simulation_id for t in trajectories)
    for t in trajectories:
        for m in t.messages:
            if m.content and m.role != "tool":
                assert f'<div class="text">{escape(m.content)}</div>' in late_ack_html


def test_late_ack_shifts_are_badged_with_their_stage_turns(late_ack, late_ack_html):
    _, sims = score_run(late_ack)
    html = late_ack_html
    shifts = [(r.shift_index, r.to_goal) for s in sims for r in s.gsrt]
    assert shifts
    for index, goal in set(shifts):
        assert f"shift {index}: {goal}</span>" in html
    assert html.count('class="badge shift"') == len(shifts) + 1  # + the legend's example badge
    for stage in ("ack", "tool", "outcome"):
        reached = [getattr(r, stage) for s in sims for r in s.gsrt if getattr(r, stage) is not None]
        assert html.count(f'<span class="badge {stage}" title=') == len(reached)
        for k in set(reached):
            assert f">{stage} +{k}" in html
    assert ">ack +2" in html  # late_ack acknowledges one turn late
    # a stacked request (MEDIUM_1) carries two shifts on one message
    shift_messages = {(t.simulation_id, s.message_index) for t in read_trajectories(late_ack) for s in t.shifts}
    assert html.count('class="msg user shift"') == len(shift_messages) < len(shifts)


def test_tool_errors_are_highlighted_with_their_kind(wrong_params):
    html = render_html(*load_run(wrong_params))
    errors = [c for t in read_trajectories(wrong_params) for c in t.tool_calls if c.is_error]
    assert errors
    assert html.count('class="msg tool error"') == len(errors)
    assert "error: invalid_arguments" in html
    assert 'class="chip bad"' in html


def test_text_from_trajectories_is_escaped(late_ack):
    scores, trajectories, metadata = load_run(late_ack)
    t = trajectories[0]
    user = next(m for m in t.messages if m.role == "user")
    assistant = next(m for m in t.messages if m.role == "assistant" and m.tool_calls)
    tool = next(m for m in t.messages if m.role == "tool")
    user.content = EVIL
    assistant.content = f'"><img src=x onerror=alert(2)> {EVIL}'
    assistant.tool_calls[0].arguments = {"note": EVIL}
    tool.content = EVIL
    t.persona = EVIL
    t.termination.detail = EVIL
    html = render_html(scores, trajectories, metadata)
    assert EVIL not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert len(re.findall(r"<script\b", html)) == 2  # the report's own two inline scripts


def test_the_same_run_renders_byte_identical_html(late_ack, late_ack_html, tmp_path):
    assert render_html(*load_run(late_ack)) == late_ack_html
    a = write_html_report(late_ack, tmp_path / "a.html").read_bytes()
    b = write_html_report(late_ack, tmp_path / "sub" / "b.html").read_bytes()
    assert a == b == late_ack_html.encode()


def test_a_rerun_of_the_same_configuration_renders_the_same_report(tmp_path):
    one = make_run(tmp_path / "one", "scripted:oracle")
    two = make_run(tmp_path / "two", "scripted:oracle")
    assert render_html(*load_run(one)) == render_html(*load_run(two))


def test_footer_names_mode_versions_and_snapshot_hashes(late_ack, late_ack_html):
    footer = late_ack_html[late_ack_html.index('<footer id="provenance">'):]
    meta = json.loads((late_ack / "run.json").read_text())
    assert "<strong>shiftbox</strong> definitions" in footer
    assert f"shiftbox {meta['shiftbox_version']}" in footer
    for t in read_trajectories(late_ack):
        for server in t.servers.values():
            assert server.snapshot_sha256 in footer and server.version in footer and server.name in footer


def test_an_empty_run_still_renders(late_ack, tmp_path):
    run_dir = tmp_path / "empty"
    run_dir.mkdir()
    for name in ("run.json", "tasks.json"):
        (run_dir / name).write_text((late_ack / name).read_text())
    html = render_html(*load_run(run_dir))
    assert "No simulations in this run yet." in html and html.count("<svg") == len(PLOT_TITLES)


def test_cli_writes_the_report_and_prints_its_path(late_ack, tmp_path):
    out = tmp_path / "reports" / "late_ack.html"
    res = report_cli(str(late_ack), "--html", str(out))
    assert res.exit_code == 0, res.output
    assert str(out) in res.output and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_errors_name_the_problem_and_the_fix(late_ack, tmp_path):
    res = report_cli(str(tmp_path / "missing"), "--html", str(tmp_path / "r.html"))
    assert res.exit_code == 2 and "does not exist" in res.output and "shiftbox run" in res.output
    (tmp_path / "notarun").mkdir()
    res = report_cli(str(tmp_path / "notarun"), "--html", str(tmp_path / "r.html"))
    assert res.exit_code == 2 and "not a run directory" in res.output and "shiftbox run" in res.output
    res = report_cli(str(late_ack), "--html", str(tmp_path))
    assert res.exit_code == 2 and "is a directory" in res.output
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "tasks.json").write_text((late_ack / "tasks.json").read_text())
    (broken / "trajectories.jsonl").write_text('{"simulation_id": 1}\n')
    res = report_cli(str(broken), "--html", str(tmp_path / "r.html"))
    assert res.exit_code == 2 and "does not parse" in res.output
    assert not (tmp_path / "r.html").exists()


def test_cli_help_has_an_example():
    res = report_cli("--help")
    assert res.exit_code == 0 and "Example: shiftbox report" in res.output and "--html" in res.output


def test_nice_ticks_and_histogram_bins():
    assert nice_ticks(3, integer=True) == [0, 1, 2, 3]
    assert nice_ticks(1.0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(37, integer=True)[-1] == 40
    svg = histogram("h", "H", [0.0, 0.3, 0.7, 1.0, 1.0], x_label="x")
    assert "[0.30, 0.40): 1 simulation<" in svg and "[0.90, 1.00]: 2 simulations<" in svg
    assert "[0.70, 0.80): 1 simulation<" in svg


def test_redundant_calls_are_badged_as_tcrr_counts_them(tmp_path):
    run_dir = make_run(tmp_path / "redundant", "scripted:redundant")
    scores, trajectories, metadata = load_run(run_dir)
    ((run_metrics, sims),) = ((s.metrics, s.simulations) for s in scores.values())
    assert run_metrics.tcrr.redundant > 0
    for t, s in zip(sorted(trajectories, key=lambda t: t.simulation_id),
                    sorted(sims, key=lambda s: s.simulation_id), strict=True):
        assert len(redundant_calls(t)) == s.tcrr.redundant, t.simulation_id
    html = render_html(scores, trajectories, metadata)
    assert html.count('<span class="badge redundant" title=') == run_metrics.tcrr.redundant
