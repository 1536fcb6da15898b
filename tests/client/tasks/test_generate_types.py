"""`--cover types`: task sets planned to cover Multi-Mission Tool Bench's mission type sequences (single, multiple,
clarify, chat) up to four goals, the cells of its switching analysis."""

from __future__ import annotations

import random
from itertools import product

import pytest
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.generation import (
    GENERATOR_VERSION,
    feasible_type_sequences,
    generate_tasks,
    probe_types,
    type_sequences,
)
from shiftbox.tasks import MMTB_TYPES, load_task_file, type_sequence_coverage, validate_tasks
from shiftbox_servers.kit import Snapshot, get_domain
from tests.client.tasks.generation import snapshot_dir

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


def test_banking_types_set_covers_its_feasible_sequences_and_validates():
    domain = "banking"
    snap = Snapshot.load(snapshot_dir(domain))
    db = snap.open_copy()
    try:
        capable = probe_types(get_domain(domain), db, get_domain(domain).missions.subjects(db), random.Random(7))
    finally:
        db.close()
    # banking's builders: one goal makes chat (insights), three make clarify (cards, transactions, dispute)
    assert sorted(g for g, t in capable.items() if "chat" in t) == ["insights"]
    assert sorted(g for g, t in capable.items() if "clarify" in t) == ["cards", "dispute", "transactions"]
    n = 16
    tasks = generate_tasks(domain, snapshot_dir(domain), n=n, seed=7, cover="types")
    assert tasks.source == f"generator v{GENERATOR_VERSION} seed=7 cover=types"
    types = [t.mmtb_types() for t in tasks.tasks]
    # the first 16 feasible sequences in order: the first 16 of all but (chat, chat, single, single), then the 17th
    expected = [s for s in type_sequences()[:17] if s != ("chat", "chat", "single", "single")]
    assert types == expected
    assert [len(set(t.goals)) for t in tasks.tasks] == [4] * n  # distinct goals
    # by hand: 2-prefixes are the 15 pairs but (chat, chat); 3-prefixes those 15 followed by single, and
    # (single, single, multi) of the 17th sequence
    assert type_sequence_coverage(tasks.tasks) == {1: (4, 4), 2: (15, 16), 3: (16, 64), 4: (16, 256)}
    assert validate_tasks(tasks, snapshot_dir=snapshot_dir(domain)) == []


def test_the_cli_writes_a_types_set_and_counts_its_coverage(tmp_path):
    out = tmp_path / "types.json"
    res = CliRunner().invoke(app, ["tasks", "generate", "banking", "--cover", "types", "--n", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "MMTB type sequences of 1-4 goals covered: 4/4, 4/16, 4/64, 4/256" in res.output
    assert [t.mmtb_types()[0] for t in load_task_file(out).tasks] == list(MMTB_TYPES)


def test_an_unknown_cover_is_refused():
    with pytest.raises(ValueError, match="cover 'all' is not one of pairs, types"):
        generate_tasks("banking", snapshot_dir("banking"), n=1, seed=7, cover="all")


def test_same_seed_same_types_set_and_another_seed_differs():
    first = generate_tasks("banking", snapshot_dir("banking"), n=4, seed=7, cover="types")
    again = generate_tasks("banking", snapshot_dir("banking"), n=4, seed=7, cover="types")
    other = generate_tasks("banking", snapshot_dir("banking"), n=4, seed=8, cover="types")
    assert first.model_dump_json() == again.model_dump_json() != other.model_dump_json()
    assert [t.mmtb_types() for t in other.tasks] == [t.mmtb_types() for t in first.tasks]  # same plan of types
