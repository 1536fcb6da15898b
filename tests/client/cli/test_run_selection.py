"""`shiftbox run --limit N` / `--task-id ID`: which tasks a run takes (the first N in file order, the named ones),
recorded in run.json so `--resume` and `shiftbox replay` take the same ones; unknown ids are input errors."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.errors import RunPlanError
from shiftbox.runs import ExecutionOptions, plan_run
from shiftbox.trajectory import read_trajectories
from tests.client.harness import HANDWRITTEN

runner = CliRunner()
FILE_ORDER = [t["id"] for t in json.loads(HANDWRITTEN.read_text())["tasks"]]  # the file as written, read here


def run(out, *extra: str):
    return runner.invoke(app, ["run", "--domain", "banking", "--tasks", str(HANDWRITTEN), "--out", str(out), *extra])


def task_ids(run_dir) -> list[str]:
    return sorted({t.task_id for t in read_trajectories(run_dir)})


def test_limit_takes_the_first_n_tasks_in_file_order_and_records_it(tmp_path):
    res = run(tmp_path / "r", "--limit", "2", "--trials", "2")
    assert res.exit_code == 0, res.output
    assert task_ids(tmp_path / "r") == sorted(FILE_ORDER[:2])
    metadata = json.loads((tmp_path / "r" / "run.json").read_text())
    assert metadata["config"]["limit"] == 2 and metadata["simulations"] == 4


def test_without_limit_run_json_has_no_limit_key(tmp_path):
    assert run(tmp_path / "r", "--task-id", FILE_ORDER[0]).exit_code == 0
    assert "limit" not in json.loads((tmp_path / "r" / "run.json").read_text())["config"]


def test_limit_applies_to_the_named_tasks_in_file_order(tmp_path):
    res = run(tmp_path / "r", "--task-id", FILE_ORDER[3], "--task-id", FILE_ORDER[1], "--limit", "1")
    assert res.exit_code == 0, res.output
    assert task_ids(tmp_path / "r") == [FILE_ORDER[1]]


def test_resume_keeps_the_selection_and_a_changed_limit_is_a_changed_configuration(tmp_path):
    assert run(tmp_path / "r", "--limit", "2").exit_code == 0
    again = run(tmp_path / "r", "--limit", "2", "--resume")
    assert again.exit_code == 0, again.output
    assert len(read_trajectories(tmp_path / "r")) == 2
    changed = run(tmp_path / "r", "--resume")
    assert changed.exit_code == 2 and "limit" in " ".join(changed.output.split())


def test_replay_of_a_fixture_recorded_with_limit_replays_the_same_tasks(tmp_path):
    res = run(tmp_path / "live", "--limit", "2", "--record", str(tmp_path / "fx"))
    assert res.exit_code == 0, res.output
    replayed = runner.invoke(app, ["replay", str(tmp_path / "fx"), "--out", str(tmp_path / "again")])
    assert replayed.exit_code == 0, replayed.output
    assert task_ids(tmp_path / "again") == sorted(FILE_ORDER[:2])


def test_unknown_task_ids_are_an_input_error_naming_them_and_some_known_ids(tmp_path):
    res = run(tmp_path / "r", "--task-id", "nope", "--task-id", FILE_ORDER[0], "--task-id", "also_nope")
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "nope, also_nope" in text and FILE_ORDER[0] in text.split("known", 1)[1]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("limit", [0, -3])
def test_a_limit_below_one_is_refused(tmp_path, limit):
    res = run(tmp_path / "r", "--limit", str(limit))
    assert res.exit_code == 2 and "--limit" in res.output
    with pytest.raises(RunPlanError, match="--limit"):
        plan_run(HANDWRITTEN, tmp_path / "p", limit=limit)


@pytest.mark.parametrize(("option", "value", "minimum"), [
    ("--max-steps", "1", 2), ("--max-tool-errors", "0", 1), ("--trials", "0", 1), ("--retry-infra", "-1", 0),
    ("--concurrency", "0", 1),
])
def test_a_number_below_its_minimum_is_refused_by_the_plan_naming_the_option(tmp_path, option, value, minimum):
    """`shiftbox run` and the Inspect tasks check numbers with one rule (`plan_run`); the message names the option."""
    res = run(tmp_path / "r", option, value)
    assert res.exit_code == 2
    assert f"{option} ({option[2:].replace('-', '_')}) {value}: give a whole number, at least {minimum}" in \
        " ".join(res.output.split())
    assert not (tmp_path / "r").exists()
    name = option[2:].replace("-", "_")
    with pytest.raises(RunPlanError, match=f"at least {minimum}"):
        if name in {f.name for f in dataclasses.fields(ExecutionOptions)}:  # how a run executes, not its results
            plan_run(HANDWRITTEN, tmp_path / "p", options=ExecutionOptions(**{name: int(value)}))
        else:
            plan_run(HANDWRITTEN, tmp_path / "p", **{name: int(value)})
