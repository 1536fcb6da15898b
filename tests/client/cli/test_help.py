"""What `--help`, `--version` and the input errors of `metrics` and `replay` tell a user (issue 29, item 12)."""

from __future__ import annotations

import json
import re
from importlib.metadata import version

from typer.testing import CliRunner

from shiftbox.cli import app
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}  # one help line per option: no wrapping inside a phrase


def help_text(*command: str) -> str:
    res = runner.invoke(app, [*command, "--help"], env=WIDE)
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())  # wrapped lines joined: phrases are searched whole


def test_help_keeps_bracketed_text():
    text = help_text("run")
    assert "needs shiftbox[ray]" in text and "needs shiftbox[vcr]" in text
    assert "[default: local, or processes when --workers > 1]" in text


def test_agent_help_lists_every_agent_kind():
    text = help_text("run")
    agent = re.search(r"--agent <\w+>(.*?)--user <", text).group(1)  # the option's own help, not the example
    for kind in ("scripted:", "litellm:", "cmd:", "a2a:"):
        assert kind in agent, (kind, agent)


def test_version_prints_both_distributions_versions():
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.split("\n")[:2] == [f"shiftbox {version('shiftbox')}",
                                          f"shiftbox-servers {version('shiftbox-servers')}"]


def make_run(tmp_path):
    out = tmp_path / "run"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out),
                              "--task-id", "hw_banking_001"])
    assert res.exit_code == 0, res.output
    return out


def test_metrics_refuses_a_corrupt_run_json_with_exit_2(tmp_path):
    out = make_run(tmp_path)
    (out / "run.json").write_text('{"config": {"domain": ')
    res = runner.invoke(app, ["metrics", str(out)])
    assert res.exit_code == 2, res.output
    assert "run.json" in res.output and "does not parse" in res.output


def test_replay_of_a_run_directory_names_the_missing_fixture_json(tmp_path):
    out = make_run(tmp_path)
    res = runner.invoke(app, ["replay", str(out), "--out", str(tmp_path / "replayed")])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "no run.json" not in text
    assert "fixture.json" in text and "--record" in text


def test_replay_into_an_existing_run_does_not_suggest_a_resume_it_lacks(tmp_path):
    fixture = tmp_path / "fixture"
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out",
                              str(tmp_path / "recorded"), "--task-id", "hw_banking_001", "--record", str(fixture)])
    assert res.exit_code == 0, res.output
    out = make_run(tmp_path)
    res = runner.invoke(app, ["replay", str(fixture), "--out", str(out)])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "--resume" not in text and "already holds a run" in text and "--out" in text


def test_shipped_task_files_name_no_internal_issue_number(tmp_path):
    res = runner.invoke(app, ["tasks", "validate", str(HANDWRITTEN)])
    assert res.exit_code == 0, res.output
    assert not re.search(r"(?i)\bissue \d", res.output), res.output
    root = HANDWRITTEN.parents[2]  # snapshots/
    sources = {p: json.loads(p.read_text()).get("source", "") for p in root.rglob("tasks*.json")}
    assert sources and not [p for p, s in sources.items() if re.search(r"(?i)\bissue \d", s or "")]
