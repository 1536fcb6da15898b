"""Reference tasks are written for the reference's own tool contract: an import records the domain's copy of it
(`agentchangebench`, or `tau2` for tau2's own files) and runs, validation and gold recording use it unless
`--toolset` says otherwise."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shiftbox.agentchangebench import import_agentchangebench
from shiftbox.cli import app
from shiftbox.runs import plan_run
from shiftbox.tasks import reference_toolset, validate_tasks
from shiftbox_servers.banking import import_agentchangebench as import_banking_snapshot
from shiftbox_servers.kit import get_domain
from tests.conftest import require_acb

runner = CliRunner()


def test_the_reference_tool_set_is_the_first_the_domain_has():
    # AgentChangeBench's files: its own tool set first; tau2's own files (no goal_shifts): tau2's first
    assert reference_toolset({"agentchangebench", "tau2"}, tau2_file=False) == "agentchangebench"
    assert reference_toolset({"agentchangebench", "tau2"}, tau2_file=True) == "tau2"
    assert reference_toolset({"tau2"}, tau2_file=False) == "tau2"
    assert reference_toolset({"agentchangebench"}, tau2_file=True) == "agentchangebench"
    assert reference_toolset({"vitabench"}, tau2_file=False) is None
    assert reference_toolset(set(), tau2_file=True) is None


@pytest.mark.parametrize("name", ["banking/tasks.json", "retail/tasks.json", "retail/tasks-new.json",
                                  "airline/tasks.json", "airline/tasks_new.json"])
def test_an_imported_reference_file_records_the_domains_reference_tool_set(name):
    task_file = import_agentchangebench(require_acb(*name.split("/")))
    toolsets = set(get_domain(task_file.domain).toolsets)
    expected = "agentchangebench" if "agentchangebench" in toolsets else "tau2" if "tau2" in toolsets else None
    assert task_file.toolset == expected
    if task_file.domain == "banking":
        assert expected == "agentchangebench"


@pytest.fixture(scope="module")
def banking(tmp_path_factory):
    """The AgentChangeBench banking snapshot and its tasks imported on it (a native file)."""
    root = tmp_path_factory.mktemp("acb-banking")
    import_banking_snapshot(require_acb("banking", "db.toml"), root / "snap")
    tasks = root / "tasks.json"
    task_file = import_agentchangebench(require_acb("banking", "tasks.json"), snapshot=root / "snap")
    tasks.write_text(task_file.model_dump_json(indent=2))
    return root


def test_a_run_of_imported_banking_tasks_uses_the_agentchangebench_tool_set(banking, tmp_path):
    res = runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(banking / "tasks.json"),
                              "--snapshot", str(banking / "snap"), "--task-id", "9_banking_cards_easy2_status_001_converted",
                              "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["toolset"] == "agentchangebench"
    (line,) = (tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()
    assert json.loads(line)["servers"]["banking"]["toolset"] == "agentchangebench"


def test_an_explicit_tool_set_overrides_the_files(banking, tmp_path):
    plan = plan_run(banking / "tasks.json", tmp_path / "run", snapshot=banking / "snap", toolset="default")
    assert plan.config.toolset == "default"
    assert plan_run(banking / "tasks.json", tmp_path / "run", snapshot=banking / "snap").config.toolset == \
        "agentchangebench"


def test_a_raw_reference_list_run_directly_uses_it_too(banking, tmp_path):
    plan = plan_run(require_acb("banking", "tasks.json"), tmp_path / "run", snapshot=banking / "snap")
    assert plan.config.toolset == "agentchangebench"


def test_a_native_file_without_a_tool_set_runs_the_default(tmp_path):
    plan = plan_run("snapshots/banking/v1/tasks-handwritten.json", tmp_path / "run")
    assert plan.config.toolset == "default"


def _log_shift_task_file(tmp_path):
    """A banking reference list whose gold calls log_shift_event, a tool only the agentchangebench set has."""
    task = {"id": "t1", "user_scenario": {"instructions": {"domain": "banking", "reason_for_call": "r"},
                                          "goal_shifts": {"required_shifts": 0, "goals": ["cards"]}},
            "evaluation_criteria": {"action_sets": [{"action_id": "log", "allowed_tools": [
                {"function_name": "log_shift_event", "params": {"turn_no": 1}}]}]}}
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([task]))
    return path


def test_validation_checks_tool_names_against_the_files_tool_set(tmp_path):
    task_file = import_agentchangebench(_log_shift_task_file(tmp_path))
    assert task_file.toolset == "agentchangebench"
    unknown = [f for f in validate_tasks(task_file) if f.field.endswith(".function_name")]
    assert unknown == []
    unknown = [f for f in validate_tasks(task_file, toolset="default") if f.field.endswith(".function_name")]
    assert [f.problem for f in unknown] == ["unknown tool 'log_shift_event': the banking domain has no such tool"]
