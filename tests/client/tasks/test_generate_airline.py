"""The seeded task generator on airline: reproducible, covering, and solvable by the oracle."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from itertools import pairwise, permutations

import anyio
import pytest

from shiftbox.agents._scripted import scripted_agent
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.tasks import generate_tasks, load_task_file, validate_tasks
from shiftbox.tasks._generate import ACTION_TYPES, PERSONAS, action_types
from shiftbox.users import ScriptedUser
from shiftbox.world import open_world
from shiftbox_servers.airline import GOAL_TOOLS
from tests.client.harness import REPO

SNAPSHOT = REPO / "snapshots" / "airline" / "v1"
N = 150


@pytest.fixture(scope="module")
def generated():
    return generate_tasks("airline", SNAPSHOT, n=N, seed=7)


def test_same_seed_same_file_and_other_seed_differs(generated):
    again = generate_tasks("airline", SNAPSHOT, n=N, seed=7)
    assert again.model_dump_json() == generated.model_dump_json()
    assert generated.source == "generator v1 seed=7"
    other = generate_tasks("airline", SNAPSHOT, n=20, seed=8)
    assert other.model_dump_json() != generate_tasks("airline", SNAPSHOT, n=20, seed=7).model_dump_json()


def test_the_committed_task_file_is_the_seed_7_output(generated):
    committed = load_task_file(SNAPSHOT / "tasks.json")
    assert committed.model_dump_json() == generated.model_dump_json()


def test_coverage(generated):
    tasks = generated.tasks
    pairs = {(a, b) for t in tasks for a, b in pairwise(t.goals)}
    assert set(permutations(sorted(GOAL_TOOLS), 2)) <= pairs
    assert {len(t.goals) for t in tasks} == {1, 2, 3, 4}
    assert all(len(set(t.goals)) == len(t.goals) for t in tasks)
    personas = Counter(t.user_scenario.persona for t in tasks)
    assert set(personas) == set(PERSONAS)
    assert max(personas.values()) - min(personas.values()) <= 1
    assert {v for t in tasks for v in action_types(t).values()} == set(ACTION_TYPES)
    openers = sum(t.goals[0] == "reservation_lookup" for t in tasks)
    assert N // 2 < openers < N


def test_the_user_is_introduced_by_user_id(generated):
    for task in generated.tasks:
        assert re.search(r"your user id is [a-z_]+_\d+\.", task.user_scenario.instructions.known_info), task.id


def test_communicate_info_comes_from_outputs_never_from_known_info(generated):
    for task in generated.tasks:
        known = task.user_scenario.instructions.known_info.lower()
        for value in task.evaluation_criteria.communicate_info:
            needle = re.escape(value.strip().lower())
            assert not re.search(rf"(?<![0-9a-z]){needle}(?![0-9a-z])", known), (task.id, value)
    assert sum(bool(t.evaluation_criteria.communicate_info) for t in generated.tasks) > N // 2


def test_every_task_is_valid_structurally_and_has_a_digest(generated):
    assert [f for f in validate_tasks(generated) if f.severity == "error"] == []
    assert all(t.evaluation_criteria.expected_state_digest for t in generated.tasks)
    assert all(t.evaluation_criteria.action_sets for t in generated.tasks)


def test_later_goals_act_on_what_earlier_goals_booked(generated):
    """Missions of one task share its episode: a reservation booked by an earlier goal is changed, cancelled or
    given bags by a later one, and the user knows it from the conversation, not from known_info."""
    db = sqlite3.connect(SNAPSHOT / "db.sqlite")
    try:
        snapshot_ids = {row[0] for row in db.execute("SELECT reservation_id FROM reservations")}
    finally:
        db.close()
    chained = 0
    for task in generated.tasks:
        new_ids = {a.allowed_tools[0].params.get("reservation_id") for a in task.evaluation_criteria.action_sets
                   if a.allowed_tools[0].function_name != "book_reservation"} - snapshot_ids - {None}
        if new_ids:
            chained += 1
            assert "book_reservation" in {a.allowed_tools[0].function_name
                                          for a in task.evaluation_criteria.action_sets}, task.id
            assert not any(rid in task.user_scenario.instructions.known_info for rid in new_ids), task.id
    assert chained >= 5


def test_oracle_and_scripted_user_solve_a_sample(generated):
    sample = generated.tasks[::7][:22]

    async def run():
        async with open_world("airline") as world:
            return [await run_simulation(t, 0, 0, scripted_agent("oracle"), ScriptedUser(), world) for t in sample]

    trajectories = anyio.run(run)
    run_metrics, sims = compute_run_metrics(trajectories, {t.id: t for t in sample})
    assert all(s.tsr.score == 1.0 for s in sims), [(s.task_id, s.tsr) for s in sims if s.tsr.score != 1.0]
    assert all(s.tsr.state_match is True for s in sims)
    assert run_metrics.tsr.mean == 1.0
    assert run_metrics.tsr.state_match == 1.0
