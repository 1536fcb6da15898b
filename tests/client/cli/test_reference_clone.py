"""`shiftbox snapshots import` and `shiftbox tasks import` take a local clone of the reference repository
(data/tau2/domains/<domain>/...) and pick the right files, or say what is missing and where they looked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from tests.conftest import make_acb_clone

runner = CliRunner()

@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return make_acb_clone(tmp_path_factory.mktemp("AgentChangeBench"))


@pytest.mark.parametrize(("domain", "snapshot_id"), [("banking", "banking/acb-v1"), ("retail", "retail/acb-v1")])
def test_snapshots_import_takes_the_clone_root(clone, tmp_path, domain, snapshot_id):
    res = runner.invoke(app, ["snapshots", "import", "agentchangebench", domain, str(clone), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith(f"{snapshot_id} -> {tmp_path}")


def test_snapshots_import_names_the_missing_database_and_where_it_looked(clone, tmp_path):
    res = runner.invoke(app, ["snapshots", "import", "agentchangebench", "airline", str(clone), "--out",
                              str(tmp_path / "snap")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert f"no airline database (db.toml or db.json) under {clone}" in text
    assert str(clone / "data/tau2/domains/airline/db.json") in text and str(clone / "airline/db.toml") in text
    assert not (tmp_path / "snap").exists()


@pytest.mark.parametrize(("args", "source", "count"), [
    (["--domain", "banking"], "banking/tasks.json", 50),
    (["--domain", "retail"], "retail/tasks.json", 114),
    (["--domain", "retail", "--task-set", "new"], "retail/tasks-new.json", 51),
    (["--domain", "airline"], "airline/tasks.json", 50),
    (["--domain", "airline", "--task-set", "new"], "airline/tasks_new.json", 50),
])
def test_tasks_import_takes_the_clone_root_and_picks_the_task_list(clone, tmp_path, args, source, count):
    res = runner.invoke(app, ["tasks", "import", "agentchangebench", str(clone), *args, "--out",
                              str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    written = json.loads((tmp_path / "t.json").read_text())
    assert written["source"] == f"agentchangebench {source}" and len(written["tasks"]) == count


@pytest.mark.parametrize("under", ["data/tau2/domains", "data/tau2/domains/retail"])
def test_the_domains_folder_and_a_domains_folder_work_too(clone, tmp_path, under):
    res = runner.invoke(app, ["tasks", "import", "agentchangebench", str(clone / under), "--domain", "retail",
                              "--task-set", "new", "--out", str(tmp_path / "t.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "t.json").read_text())["source"] == "agentchangebench retail/tasks-new.json"


def test_a_folder_needs_the_domain_and_the_task_list_must_be_there(clone, tmp_path):
    res = runner.invoke(app, ["tasks", "import", "agentchangebench", str(clone), "--out", str(tmp_path / "t.json")])
    assert res.exit_code == 2 and "is a folder: pass the domain" in " ".join(res.output.split())
    res = runner.invoke(app, ["tasks", "import", "agentchangebench", str(clone), "--domain", "banking",
                              "--task-set", "new", "--out", str(tmp_path / "t.json")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "no banking new task list (tasks-new.json or tasks_new.json)" in text
    assert str(clone / "data/tau2/domains/banking/tasks_new.json") in text
    res = runner.invoke(app, ["tasks", "import", "agentchangebench", str(tmp_path / "nowhere"), "--out",
                              str(tmp_path / "t.json")])
    assert res.exit_code == 2 and "does not exist" in res.output
