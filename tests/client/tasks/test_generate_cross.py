"""The cross-domain task set: every ordered pair of domains, goals alternating, one consistent customer, solved."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections import Counter
from itertools import pairwise, permutations

import anyio

from shiftbox.agents import scripted_agent
from shiftbox.generation import CROSS_GENERATOR_VERSION, generate_cross_tasks, identity_conflict
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.tasks import load_task_file, validate_tasks
from shiftbox.users import ScriptedUser, parse_known_info
from shiftbox.world import open_world
from shiftbox_servers.kit import domain_list, domain_of, get_domain, task_domains
from tests.client.harness import REPO
from tests.client.tasks.generation import rubric_gaps

CROSS = REPO / "tasks" / "cross-domain.json"
DOMAINS = domain_list(load_task_file(CROSS).domain)
"""The domains the committed set joins, in its order (`make tasks` regenerates it over the same ones)."""


@functools.cache
def seed7():
    return generate_cross_tasks(DOMAINS, per_pair=11, seed=7)


def test_the_committed_set_is_the_seed_7_output():
    committed = load_task_file(CROSS)
    assert committed.model_dump_json() == seed7().model_dump_json()
    assert committed.source == f"cross-domain generator v{CROSS_GENERATOR_VERSION} seed=7"
    assert set(DOMAINS) <= set(task_domains()) and len(DOMAINS) >= 3
    assert committed.snapshot == ",".join(f"{d}/{get_domain(d).snapshot_version}" for d in DOMAINS)
    assert generate_cross_tasks(DOMAINS, per_pair=2, seed=8).model_dump_json() != \
        generate_cross_tasks(DOMAINS, per_pair=2, seed=7).model_dump_json()


def test_every_ordered_pair_of_domains_has_its_tasks():
    tasks = seed7().tasks
    assert len(tasks) == 66
    assert Counter(t.domain for t in tasks) == {f"{a},{b}": 11 for a, b in permutations(DOMAINS, 2)}
    # CROSS_LENGTHS (2, 3, 4, 2, 3) over k = 0..10 of each pair: 2 goals 5 times, 3 goals 4 times, 4 goals twice;
    # airline uses no fact, so the 5 two-goal tasks of banking->airline and of retail->airline get 3 goals
    assert Counter(len(t.goals) for t in tasks) == {2: 30 - 10, 3: 24 + 10, 4: 12}


def test_every_dependent_task_has_a_cross_domain_dependency():
    counted = 0
    for t in seed7().tasks:
        deps = t.cross_domain_dependencies()
        assert deps, t.id
        for action_id, read in deps:
            using = next(a for a in t.evaluation_criteria.action_sets if a.action_id == action_id)
            source = next(a for a in t.evaluation_criteria.action_sets if a.action_id == read)
            assert domain_of(using.allowed_tools[0].function_name) != domain_of(source.allowed_tools[0].function_name)
            # the read serves the goal that needs its value, or an earlier goal of the other domain made it already
            assert t.goals.index(source.goal) <= t.goals.index(using.goal), t.id
            assert t.goals.index(using.goal) >= 1  # a later goal: the other domain has had a goal before it
        counted += 1
    assert counted == 66


def _call(action) -> tuple[str, str]:
    spec = action.allowed_tools[0]
    return spec.function_name, json.dumps(spec.params, sort_keys=True)


def test_the_cross_domain_read_is_never_a_repeated_call():
    """The read that gives the other domain its value is made once in the gold path: when an earlier goal already
    made that very call (the airline profile its reservation lookup read, the bank's authentication by phone),
    the using call depends on that action, and no later goal repeats it (MMTB's path evaluation ends a mission at
    a repeated call, so a gold path must have none)."""
    reused = 0
    for t in seed7().tasks:
        sets = t.evaluation_criteria.action_sets
        for _, read in t.cross_domain_dependencies():
            source = next(a for a in sets if a.action_id == read)
            assert [_call(a) for a in sets].count(_call(source)) == 1, (t.id, read)
            reused += domain_of(source.goal) == domain_of(source.allowed_tools[0].function_name)
    assert reused > 0  # some tasks reuse an earlier goal's read


def test_the_independent_variant_has_none_and_is_only_warned_about():
    indep = generate_cross_tasks(DOMAINS, per_pair=1, seed=7, independent=True)
    assert indep.source == "cross-domain generator v1 seed=7 (independent goals)"
    assert all(t.cross_domain_dependencies() == [] for t in indep.tasks)
    findings = [f for f in validate_tasks(indep) if "no cross-domain dependency" in f.problem]
    assert len(findings) == 6 and {f.severity for f in findings} == {"warning"}
    assert load_task_file(REPO / "tasks" / "cross-domain-independent.json").tasks == \
        generate_cross_tasks(DOMAINS, per_pair=11, seed=7, independent=True).tasks


def test_the_validator_refuses_a_cross_domain_task_without_a_dependency():
    task = seed7().tasks[0]
    sets = [a.model_copy(update={"depends_on": [d for d in a.depends_on if domain_of(d) == domain_of(a.action_id)]})
            for a in task.evaluation_criteria.action_sets]
    broken = task.model_copy(update={"evaluation_criteria": task.evaluation_criteria.model_copy(
        update={"action_sets": sets})})
    assert broken.cross_domain_dependencies() == []
    file = seed7().model_copy(update={"tasks": [broken]})
    errors = [f for f in validate_tasks(file) if f.severity == "error"]
    assert len(errors) == 1 and errors[0].task_id == task.id and "no cross-domain dependency" in errors[0].problem
    assert "depends_on" in errors[0].fix


def test_goals_alternate_domains_so_every_shift_crosses():
    for t in seed7().tasks:
        first, second = domain_list(t.domain)
        assert [domain_of(g) for g in t.goals] == [(first, second)[k % 2] for k in range(len(t.goals))], t.id
        assert all(domain_of(a) != domain_of(b) for a, b in pairwise(t.goals))
        crossing = dict(t.cross_domain_dependencies())
        for action in t.evaluation_criteria.action_sets:
            domain = domain_of(action.goal)
            if action.action_id not in crossing.values():  # a read in the other domain serves the goal needing it
                assert all(domain_of(s.function_name) == domain for s in action.allowed_tools)
            home = domain_of(action.allowed_tools[0].function_name)
            assert all(d.startswith(f"{home}__") for d in action.depends_on if d != crossing.get(action.action_id))


def _name(domain: str, customer_id: str) -> str:
    db = sqlite3.connect(REPO / "snapshots" / domain / "v1" / "db.sqlite")
    try:
        if domain == "banking":
            return db.execute("SELECT full_name FROM customers WHERE customer_id = ?", (customer_id,)).fetchone()[0]
        row = db.execute("SELECT first_name, last_name FROM users WHERE user_id = ?", (customer_id,)).fetchone()
        return f"{row[0]} {row[1]}"
    finally:
        db.close()


def test_one_customer_with_one_identity_in_both_domains():
    for t in seed7().tasks:
        known = t.user_scenario.instructions.known_info
        subjects = dict(s.split(":", 1) for s in re.search(r"subjects (.*?);", t.description.notes).group(1).split(", "))
        assert list(subjects) == domain_list(t.domain)
        names = {_name(d, c) for d, c in subjects.items()}
        assert len(names) == 1, (t.id, names)  # the same person in both snapshots
        assert known.startswith(f"You are {names.pop()}.")
        assert len(re.findall(r"\bYou are [A-Z]", known)) == 1  # named once ("You are interested in …" is no name)
        facts = parse_known_info(known)
        assert len(facts.get("dob", ())) <= 1 and len(facts.get("email", ())) <= 1 and len(facts.get("zip", ())) <= 1


def test_a_second_value_of_an_identity_fact_is_a_conflict():
    bank = {"date_of_birth": "1980-07-15", "phone_number": "+15551234567"}
    air = {"dob": "2002-09-03", "user_id": "aisha_martin_1"}
    assert identity_conflict({"banking": bank, "airline": air}, "born 1980-07-15 and 2002-09-03") == "date of birth"
    assert identity_conflict({"banking": bank, "airline": air}, "born 1980-07-15, phone +15551234567") is None


def test_the_set_is_valid():
    findings = validate_tasks(seed7())
    assert [f for f in findings if f.severity == "error"] == []
    assert all(t.evaluation_criteria.expected_state_digest for t in seed7().tasks)
    every = {s.name for s in get_domain(",".join(DOMAINS)).tools}
    assert {s.function_name for t in seed7().tasks for a in t.evaluation_criteria.action_sets
            for s in a.allowed_tools} <= every


def test_every_task_carries_rubric_items_derived_from_its_goals():
    assert all(t.evaluation_criteria.rubric for t in seed7().tasks)
    assert [gap for t in seed7().tasks for gap in rubric_gaps(t)] == []


def test_the_oracle_solves_a_sample_of_every_pair():
    sample = seed7().tasks[::3]  # dependent tasks: the oracle reads the value in one domain and uses it in the other
    assert {t.domain for t in sample} == {f"{a},{b}" for a, b in permutations(DOMAINS, 2)}

    async def run():
        async with open_world(",".join(DOMAINS)) as world:
            return [await run_simulation(t, 0, 0, scripted_agent("oracle"), ScriptedUser(), world) for t in sample]

    trajectories = anyio.run(run)
    run_metrics, sims = compute_run_metrics(trajectories, {t.id: t for t in sample})
    assert all(s.tsr.score == 1.0 for s in sims), [(s.task_id, s.tsr) for s in sims if s.tsr.score != 1.0]
    assert run_metrics.tsr.state_match == 1.0
    assert set(run_metrics.by_domain_crossing) == {"crossed"}
