"""The seeded task generator, in every domain: reproducible, covering, and solvable by the oracle.

Domain-specific properties are in test_generate_<domain>.py.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from itertools import pairwise, permutations

import anyio
import pytest

from shiftbox.agents import scripted_agent
from shiftbox.cli.demo import demo_sample
from shiftbox.generation import (
    ACTION_TYPES,
    GENERATOR_VERSION,
    GenerationError,
    generate_tasks,
)
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.tasks import load_task_file, validate_tasks
from shiftbox.users import ScriptedUser, load_personas
from shiftbox.world import open_world
from shiftbox_servers.kit import get_domain, mission
from tests.client.tasks.generation import DOMAINS, N, rubric_gaps, seed7, snapshot_dir

OPENERS = {"banking": "authentication", "airline": "reservation_lookup"}
"""The goal most tasks start with; retail identifies the customer inside the first goal instead."""

pytestmark = pytest.mark.parametrize("domain", DOMAINS)


def test_same_seed_same_file_and_other_seed_differs(domain):
    again = generate_tasks(domain, snapshot_dir(domain), n=N, seed=7)
    assert again.model_dump_json() == seed7(domain).model_dump_json()
    assert seed7(domain).source == f"generator v{GENERATOR_VERSION} seed=7"
    other = generate_tasks(domain, snapshot_dir(domain), n=20, seed=8)
    assert other.model_dump_json() != generate_tasks(domain, snapshot_dir(domain), n=20, seed=7).model_dump_json()


def test_the_committed_task_file_is_the_seed_7_output(domain):
    committed = load_task_file(snapshot_dir(domain) / "tasks.json")
    assert committed.model_dump_json() == seed7(domain).model_dump_json()


def test_missions_cover_every_goal(domain):
    d = get_domain(domain)
    assert set(d.missions) == set(d.goal_tools)


def test_coverage(domain):
    tasks = seed7(domain).tasks
    pairs = {(a, b) for t in tasks for a, b in pairwise(t.goals)}
    assert set(permutations(sorted(get_domain(domain).goal_tools), 2)) <= pairs
    assert {len(t.goals) for t in tasks} == {1, 2, 3, 4}
    assert all(len(set(t.goals)) == len(t.goals) for t in tasks)
    personas = Counter(t.user_scenario.persona for t in tasks)
    assert set(personas) == set(load_personas())  # the whole catalog, not a list of the generator's own
    assert max(personas.values()) - min(personas.values()) <= 1
    assert {v for t in tasks for v in t.action_types.values()} == set(ACTION_TYPES)
    if domain in OPENERS:
        openers = sum(t.goals[0] == OPENERS[domain] for t in tasks)
        assert N // 2 < openers < N


def test_every_persona_gets_every_length(domain):
    tasks = seed7(domain).tasks
    lengths = {(t.user_scenario.persona, len(t.goals)) for t in tasks}
    assert lengths == {(p, n) for p in load_personas() for n in (1, 2, 3, 4)}


def test_the_demo_sample_meets_every_persona_and_length(domain):
    tasks = seed7(domain).tasks
    chosen = set(demo_sample(tasks))
    sample = {(t.user_scenario.persona, len(t.goals)) for t in tasks if t.id in chosen}
    assert sample == {(p, n) for p in load_personas() for n in (1, 2, 3, 4)}


def test_every_goal_has_a_deterministic_check(domain):
    """An action set tagged with the goal or communicate_info attributed to it; the validator agrees."""
    generated = seed7(domain)
    unchecked = [(t.id, g) for t in generated.tasks for g in t.goals
                 if not t.action_sets_for(g) and not t.communicate_info_for(g)]
    assert not unchecked, unchecked
    assert [f for f in validate_tasks(generated) if "no deterministic check" in f.problem] == []


def test_chat_goals_are_grounded_in_a_read_whose_output_the_agent_must_say(domain):
    chats = [(t, g) for t in seed7(domain).tasks for g, kind in t.action_types.items() if kind == "chat"]
    assert chats
    for task, goal in chats:
        assert task.action_sets_for(goal), (task.id, goal)
        assert task.communicate_info_for(goal), (task.id, goal)


def test_communicate_info_is_attributed_to_the_goal_that_read_it(domain):
    for task in seed7(domain).tasks:
        criteria = task.evaluation_criteria
        attributed = {item for items in criteria.communicate_info_by_goal.values() for item in items}
        assert attributed == set(criteria.communicate_info), task.id  # every item serves a goal, none is extra
        assert set(criteria.communicate_info_by_goal) <= set(task.goals), task.id
        assert all(criteria.communicate_info_by_goal.values()), task.id  # no empty lists
        assert all(len(set(items)) == len(items) for items in criteria.communicate_info_by_goal.values()), task.id


def test_communicate_info_comes_from_outputs_never_from_known_info(domain):
    tasks = seed7(domain).tasks
    for task in tasks:
        known = task.user_scenario.instructions.known_info.lower()
        for value in task.evaluation_criteria.communicate_info:
            needle = re.escape(value.strip().lower())
            assert not re.search(rf"(?<![0-9a-z]){needle}(?![0-9a-z])", known), (task.id, value)
    assert sum(bool(t.evaluation_criteria.communicate_info) for t in tasks) > N // 2


def test_every_task_carries_rubric_items_derived_from_its_goals(domain):
    tasks = seed7(domain).tasks
    assert all(t.evaluation_criteria.rubric for t in tasks)
    assert [gap for t in tasks for gap in rubric_gaps(t)] == []
    committed = load_task_file(snapshot_dir(domain) / "tasks.json").tasks
    assert sum(bool(t.evaluation_criteria.rubric) for t in committed) == N


def test_every_task_is_valid_structurally_and_has_a_digest(domain):
    generated = seed7(domain)
    assert [f for f in validate_tasks(generated) if f.severity == "error"] == []
    assert all(t.evaluation_criteria.expected_state_digest for t in generated.tasks)
    assert all(t.evaluation_criteria.action_sets for t in generated.tasks)


def test_oracle_and_scripted_user_solve_a_sample(domain):
    sample = seed7(domain).tasks[::7][:22]
    assert {t.user_scenario.persona for t in sample} == set(load_personas())  # policy pushes, deflections, drift

    async def run():
        async with open_world(domain) as world:
            return [await run_simulation(t, 0, 0, scripted_agent("oracle"), ScriptedUser(), world) for t in sample]

    trajectories = anyio.run(run)
    run_metrics, sims = compute_run_metrics(trajectories, {t.id: t for t in sample})
    assert all(s.tsr.score == 1.0 for s in sims), [(s.task_id, s.tsr) for s in sims if s.tsr.score != 1.0]
    assert all(s.tsr.state_match is True for s in sims)
    assert run_metrics.tsr.mean == 1.0
    assert run_metrics.tsr.state_match == 1.0


def test_domain_without_missions_is_refused(domain, monkeypatch):
    bare = dataclasses.replace(get_domain(domain), missions={})
    monkeypatch.setattr("shiftbox.generation._generate.get_domain", lambda name: bare)
    with pytest.raises(ValueError, match="no task missions"):
        generate_tasks(domain, snapshot_dir(domain), n=1, seed=1)


def test_a_mission_without_gold_calls_is_refused(domain, monkeypatch):
    """A goal only NL assertions check costs nothing when skipped: the generator won't write one."""
    d = get_domain(domain)

    def talk_only(label):
        return lambda db, rng, subject: mission(label, "chat", "You want to chat.", [], nl=("Chatted",))

    missions = dataclasses.replace(d.missions, builders={g: talk_only(g) for g in d.missions})
    monkeypatch.setattr("shiftbox.generation._generate.get_domain", lambda name: dataclasses.replace(d, missions=missions))
    with pytest.raises(GenerationError, match="without gold calls"):
        generate_tasks(domain, snapshot_dir(domain), n=1, seed=1)
