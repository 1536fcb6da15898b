"""`shiftbox tasks validate | import | stats`: output, exit codes and error messages."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shiftbox.agentchangebench import import_agentchangebench
from shiftbox.cli.tasks import tasks_app
from shiftbox.tasks import TaskFile
from shiftbox_servers.banking import import_agentchangebench as import_acb_snapshot
from tests.conftest import require_acb

runner = CliRunner()


def test_validate_banking_reference_reports_the_unknown_tool_as_the_references_own_data(tmp_path):
    path = require_acb("banking", "tasks.json")
    res = runner.invoke(tasks_app, ["validate", str(path)], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    assert "customer_detailsrequest" in res.output and "error (reference data)" in res.output
    assert "are the reference's own data errors, not shiftbox's" in " ".join(res.output.split())
    res = runner.invoke(tasks_app, ["validate", str(path), "--json"])
    assert res.exit_code == 0
    findings = json.loads(res.stdout)
    raw = json.loads(path.read_text())
    uses = sum(tool["function_name"] == "customer_detailsrequest" for t in raw
               for a in t["evaluation_criteria"]["action_sets"] for tool in a["allowed_tools"])
    unknown = [f for f in findings if "customer_detailsrequest" in f["problem"]]
    assert len(unknown) == uses == 5 and all(f["reference_data"] and f["severity"] == "error" for f in unknown)
    assert set(findings[0]) == {"task_id", "field", "problem", "fix", "severity", "reference_data"}
    # the same tasks as a file of one's own: the errors are its author's, and fail the command
    own = import_agentchangebench(path).model_copy(update={"source": "mine"})
    (tmp_path / "own.json").write_text(own.model_dump_json())
    res = runner.invoke(tasks_app, ["validate", str(tmp_path / "own.json"), "--json"])
    assert res.exit_code == 1 and not any(f["reference_data"] for f in json.loads(res.stdout))
    assert len(json.loads(res.stdout)) == len(findings)


def test_validate_with_snapshot_replays_gold_calls(tmp_path):
    snapshot = tmp_path / "acb"
    import_acb_snapshot(require_acb("banking", "db.toml"), snapshot)
    res = runner.invoke(tasks_app, ["validate", str(require_acb("banking", "tasks.json")), "--snapshot",
                                    str(snapshot), "--json"])
    assert res.exit_code == 0
    (missing,) = [f for f in json.loads(res.stdout) if "'tx_102' is missing from the snapshot" in f["problem"]]
    assert missing["reference_data"]
    # on a tool set other than the reference's, a gold call's outcome may be shiftbox's difference, not the data
    res = runner.invoke(tasks_app, ["validate", str(require_acb("banking", "tasks.json")), "--snapshot",
                                    str(snapshot), "--toolset", "default", "--json"])
    assert res.exit_code == 1
    (missing,) = [f for f in json.loads(res.stdout) if "'tx_102' is missing from the snapshot" in f["problem"]]
    assert not missing["reference_data"]


def test_validate_clean_native_file_exits_0(tmp_path):
    source = import_agentchangebench(require_acb("banking", "tasks.json"))
    clean = TaskFile(domain="banking", source="test", tasks=[t for t in source.tasks if t.id.startswith("1_")])
    path = tmp_path / "clean.json"
    path.write_text(clean.model_dump_json())
    res = runner.invoke(tasks_app, ["validate", str(path)])
    assert res.exit_code == 0, res.output
    assert "errors: 0, warnings: 0" in res.output


def test_import_writes_a_native_file(tmp_path):
    source = require_acb("retail", "tasks-new.json")
    out = tmp_path / "sub" / "retail.json"
    res = runner.invoke(tasks_app, ["import", "agentchangebench", str(source), "--out", str(out)])
    assert res.exit_code == 0, res.output
    written = TaskFile.model_validate_json(out.read_text())
    raw = json.loads(source.read_text())
    assert [t.id for t in written.tasks] == [t["id"] for t in raw]
    sets = sum(len(t["evaluation_criteria"]["action_sets"]) for t in raw)
    assert f"{len(raw)} retail tasks, {sets} action sets" in res.output
    assert out.read_text().startswith('{\n  "')  # indent=2
    # the native file validates like the reference list it came from
    a = runner.invoke(tasks_app, ["validate", str(out), "--json"])
    b = runner.invoke(tasks_app, ["validate", str(source), "--json"])
    assert a.exit_code == b.exit_code == 0 and a.stdout == b.stdout
    assert any(f["severity"] == "error" for f in json.loads(a.stdout))  # all of them the reference's own


def test_stats_json_and_table():
    path = require_acb("banking", "tasks.json")
    res = runner.invoke(tasks_app, ["stats", str(path), "--json"])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["tasks"] == len(json.loads(path.read_text()))
    res = runner.invoke(tasks_app, ["stats", str(path)])
    assert res.exit_code == 0 and "ordered goal pairs" in res.output


@pytest.mark.parametrize("command", [["validate"], ["stats"], ["import", "agentchangebench"]])
def test_unreadable_input_is_a_usage_error(tmp_path, command):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    args = [*command, str(bad)] + (["--out", str(tmp_path / "o.json")] if command[0] == "import" else [])
    res = runner.invoke(tasks_app, args)
    assert res.exit_code == 2
    assert "bad.json: not JSON" in res.stderr and "fix:" in res.stderr


def test_bad_snapshot_is_a_usage_error(tmp_path):
    res = runner.invoke(tasks_app, ["validate", str(require_acb("banking", "tasks.json")), "--snapshot",
                                    str(tmp_path)])
    assert res.exit_code == 2 and "is not a snapshot" in res.stderr


@pytest.mark.parametrize("command", [["validate"], ["stats"], ["import", "agentchangebench"]])
def test_every_command_has_an_example(command):
    res = runner.invoke(tasks_app, [*command, "--help"])
    assert res.exit_code == 0 and "Example: shiftbox tasks" in res.output
