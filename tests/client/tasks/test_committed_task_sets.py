"""Every committed generated task set: valid against its snapshot, and solved by the oracle with the
scripted user (TSR 1.0 and the expected final state) on every task — a task the oracle cannot solve is
a generator bug."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.runs import score_run
from shiftbox.tasks import load_task_file, validate_tasks
from shiftbox.users import load_personas
from shiftbox_servers.kit import get_domain, task_domains

DOMAINS = task_domains()
runner = CliRunner()


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_generated_task_validates_and_the_oracle_solves_it(domain, tmp_path):
    snapshot = get_domain(domain).default_snapshot_dir()
    path = snapshot / "tasks.json"
    task_file = load_task_file(path)
    assert len(task_file.tasks) >= 150
    errors = [f for f in validate_tasks(task_file, snapshot) if f.severity == "error"]
    assert not errors, errors[:3]
    res = runner.invoke(app, ["run", "--domain", domain, "--tasks", str(path), "--concurrency", "8",
                              "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output[-2000:]
    run, sims = score_run(tmp_path / "run")
    unsolved = [s.simulation_id for s in sims if s.tsr.score != 1.0 or s.tsr.state_match is not True]
    assert not unsolved, unsolved[:5]
    assert run.scored_simulations == len(task_file.tasks)


def _committed(domain: str) -> dict:
    return json.loads((get_domain(domain).default_snapshot_dir() / "tasks.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_goal_of_every_committed_task_has_a_deterministic_check(domain):
    """An action set tagged with the goal, or communicate_info attributed to it (communicate_info_by_goal):
    without one, a goal whose only check is an NL assertion costs nothing when the agent skips it."""
    unchecked = []
    for task in _committed(domain)["tasks"]:
        criteria = task["evaluation_criteria"]
        tagged = {a["goal"] for a in criteria["action_sets"]}
        attributed = {g for g, items in (criteria.get("communicate_info_by_goal") or {}).items() if items}
        unchecked += [(task["id"], g) for g in task["user_scenario"]["goal_shifts"]["goals"]
                      if g not in tagged | attributed]
    assert not unchecked, unchecked


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_committed_task_files_use_every_catalog_persona(domain):
    personas = {t["user_scenario"]["persona"] for t in _committed(domain)["tasks"]}
    assert personas == set(load_personas())
