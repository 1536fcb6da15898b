"""`--cover types`: task sets planned to cover Multi-Mission Tool Bench's mission type sequences (single, multiple,
clarify, chat) up to four goals, the cells of its switching analysis."""

from __future__ import annotations

import random
from itertools import permutations, product

import anyio
import pytest
from typer.testing import CliRunner

from shiftbox.agents import scripted_agent
from shiftbox.cli import app
from shiftbox.generation import feasible_type_sequences, generate_tasks, probe_types, type_sequences
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.tasks import MMTB_TYPES, load_task_file, type_sequence_coverage, validate_tasks
from shiftbox.users import ScriptedUser
from shiftbox.world import open_world
from shiftbox_servers.kit import MissionSet, Snapshot, get_domain, task_domains
from tests.client.tasks.generation import snapshot_dir
from tests.servers.conftest import domain_test_data

EVERY = set(MMTB_TYPES)


def prefix_coverage(sequences) -> dict[int, int]:
    """Length -> distinct prefixes of that length, counted here without the library's coverage function."""
    prefixes = {tuple(s[:k]) for s in sequences for k in range(1, len(s) + 1)}
    return {k: sum(len(p) == k for p in prefixes) for k in range(1, 5)}


def test_the_type_order_covers_every_shorter_sequence_first():
    order = type_sequences()
    assert len(order) == 256 and set(order) == set(product(MMTB_TYPES, repeat=4))
    # the first 4, 16, 64 sequences already hold every sequence of length 1, 2, 3 as a prefix
    assert prefix_coverage(order[:4])[1] == 4
    assert prefix_coverage(order[:16])[2] == 16
    assert prefix_coverage(order[:64])[3] == 64
    assert prefix_coverage(order) == {1: 4, 2: 16, 3: 64, 4: 256}  # 340 cells in all


def test_missions_able_to_make_every_type_cover_all_340_sequences():
    """Four goals whose builders make every type: every sequence is feasible, so a full set covers 4+16+64+256."""
    capable = {g: set(EVERY) for g in ("a", "b", "c", "d")}
    feasible = feasible_type_sequences(capable)
    assert len(feasible) == 256 and prefix_coverage(feasible) == {1: 4, 2: 16, 3: 64, 4: 256}
    assert len(feasible[("chat",) * 4]) == 24  # 4! orders of four distinct goals


def test_a_domain_with_one_chat_goal_cannot_make_two_chats():
    capable = {"ask": {"chat", "multiple"}, "pay": {"single", "multiple"}, "lock": {"single", "clarify"},
               "look": {"single"}}
    feasible = feasible_type_sequences(capable)
    assert ("chat", "chat", "single", "single") not in feasible
    assert ("clarify", "clarify", "single", "single") not in feasible  # one clarify goal
    # by hand: chat only from ask, clarify only from lock, multi from ask or pay; e.g. chat, multi, clarify, single:
    assert feasible[("chat", "multiple", "clarify", "single")] == [("ask", "pay", "lock", "look")]


def probe(domain: str) -> dict[str, set[str]]:
    db = Snapshot.load(snapshot_dir(domain)).open_copy()
    try:
        return probe_types(get_domain(domain), db, get_domain(domain).missions.subjects(db), random.Random(7))
    finally:
        db.close()


@pytest.mark.parametrize("domain", task_domains())
def test_every_domain_can_make_all_340_type_sequences(domain):
    """Four chat goals and four clarify goals (each domain's MMTB_CHAT_GOALS / MMTB_CLARIFY_GOALS, written out by
    hand in tests/servers/<domain>/conftest.py) let any four-type sequence go to distinct goals (Hall: any k
    positions need k goals)."""
    capable = probe(domain)
    facts = domain_test_data(domain)
    chat, clarify = facts.MMTB_CHAT_GOALS, facts.MMTB_CLARIFY_GOALS
    assert sorted(g for g, t in capable.items() if "chat" in t) == chat
    assert sorted(g for g, t in capable.items() if "clarify" in t) == clarify
    feasible = feasible_type_sequences(capable)
    assert len(feasible) == 256 and prefix_coverage(feasible) == {1: 4, 2: 16, 3: 64, 4: 256}
    # by hand: four chats or four clarifications can only be the four goals in some order
    assert sorted(feasible[("chat",) * 4]) == sorted(permutations(chat))
    assert sorted(feasible[("clarify",) * 4]) == sorted(permutations(clarify))


def test_banking_types_set_covers_its_sequences_and_validates():
    domain = "banking"
    n = 16
    tasks = generate_tasks(domain, snapshot_dir(domain), n=n, seed=7, cover="types")
    assert tasks.source == "generator v3 seed=7 cover=types"
    types = [t.mmtb_types() for t in tasks.tasks]
    assert types == type_sequences()[:16]  # every sequence is feasible now, (chat, chat, single, single) too
    assert [len(set(t.goals)) for t in tasks.tasks] == [4] * n  # distinct goals
    # by hand: the 16 sequences are the 16 pairs, each followed by (single, single)
    assert type_sequence_coverage(tasks.tasks) == {1: (4, 4), 2: (16, 16), 3: (16, 64), 4: (16, 256)}
    assert validate_tasks(tasks, snapshot=snapshot_dir(domain)) == []


@pytest.mark.slow
@pytest.mark.parametrize("domain", task_domains())
def test_the_oracle_solves_tasks_with_two_chats_and_two_clarifications(domain):
    """The first 16 sequences hold (chat, chat, ...) and (clarify, clarify, ...): the variants must be solvable."""
    tasks = generate_tasks(domain, snapshot_dir(domain), n=16, seed=7, cover="types").tasks
    sample = [t for t in tasks if t.mmtb_types()[:2] in (("chat", "chat"), ("clarify", "clarify"),
                                                         ("chat", "clarify"), ("clarify", "chat"))]
    assert len(sample) == 4

    async def run():
        async with open_world(domain) as world:
            return [await run_simulation(t, 0, 0, scripted_agent("oracle"), ScriptedUser(), world) for t in sample]

    trajectories = anyio.run(run)
    _, sims = compute_run_metrics(trajectories, {t.id: t for t in sample})
    assert [s.tsr.score for s in sims] == [1.0] * 4, [(s.task_id, s.tsr) for s in sims]
    assert all(s.tsr.state_match is True for s in sims)


def test_the_cli_writes_a_types_set_and_counts_its_coverage(tmp_path):
    out = tmp_path / "types.json"
    res = CliRunner().invoke(app, ["tasks", "generate", "banking", "--cover", "types", "--n", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "MMTB type sequences of 1-4 goals covered: 4/4, 4/16, 4/64, 4/256" in res.output
    assert [t.mmtb_types()[0] for t in load_task_file(out).tasks] == list(MMTB_TYPES)


def test_variants_of_an_unknown_goal_are_refused():
    def build(db, rng, subject):
        return None

    with pytest.raises(ValueError, match=r"variants name goals \['lookup'\], which are not among the goals"):
        MissionSet({"pay": build}, variants={"lookup": (build,)})
    assert MissionSet({"pay": build}, variants={"pay": (build, build)}).every_builder("pay") == (build,) * 3


def test_an_unknown_cover_is_refused():
    with pytest.raises(ValueError, match="cover 'all' is not one of pairs, types"):
        generate_tasks("banking", snapshot_dir("banking"), n=1, seed=7, cover="all")


def test_same_seed_same_types_set_and_another_seed_differs():
    first = generate_tasks("banking", snapshot_dir("banking"), n=4, seed=7, cover="types")
    again = generate_tasks("banking", snapshot_dir("banking"), n=4, seed=7, cover="types")
    other = generate_tasks("banking", snapshot_dir("banking"), n=4, seed=8, cover="types")
    assert first.model_dump_json() == again.model_dump_json() != other.model_dump_json()
    assert [t.mmtb_types() for t in other.tasks] == [t.mmtb_types() for t in first.tasks]  # same plan of types


def test_retail_types_tasks_identify_the_customer_before_acting_on_their_account():
    """A types plan builds a goal's mission again until it has the wanted type; a discarded build must not count as
    the task's identification (retail opens the first customer-specific mission with it)."""
    general = {"list_all_product_types", "get_product_details", "get_item_details", "calculate"}
    tasks = generate_tasks("retail", snapshot_dir("retail"), n=16, seed=7, cover="types").tasks
    unidentified = []
    for task in tasks:
        tools = [a.allowed_tools[0].function_name for a in task.evaluation_criteria.action_sets]
        first = next((k for k, tool in enumerate(tools) if tool not in general), None)
        if first is not None and not tools[first].startswith("find_user_id_by_"):
            unidentified.append(task.id)
    assert unidentified == []
