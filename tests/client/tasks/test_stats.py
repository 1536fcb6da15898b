"""Task-set statistics, counted by hand from the raw reference file."""

from __future__ import annotations

import json
from collections import Counter

from rich.console import Console

from shiftbox.agentchangebench import import_agentchangebench
from shiftbox.tasks import render_stats, task_stats
from shiftbox_servers.banking import GOAL_TOOLS
from tests.conftest import require_acb


def _banking():
    path = require_acb("banking", "tasks.json")
    return json.loads(path.read_text()), task_stats(import_agentchangebench(path))


def test_banking_counts_match_the_raw_file():
    raw, stats = _banking()
    goals = [t["user_scenario"]["goal_shifts"]["goals"] for t in raw]
    assert stats["tasks"] == len(raw) == 50
    assert stats["goal_lengths"] == {str(k): v for k, v in sorted(Counter(len(g) for g in goals).items())}
    personas = Counter(t["user_scenario"]["persona"] for t in raw)
    assert {p: v["count"] for p, v in stats["personas"].items()} == dict(personas)
    assert abs(sum(v["share"] for v in stats["personas"].values()) - 1) < 1e-9
    pairs = Counter(f"{g[i]} -> {g[i + 1]}" for g in goals for i in range(len(g) - 1))
    assert stats["goal_pairs"] == dict(pairs)
    assert list(stats["goal_pairs"]) == sorted(pairs)
    assert stats["goal_pair_coverage"] == {"labels": len(GOAL_TOOLS), "possible": len(GOAL_TOOLS) * (len(GOAL_TOOLS) - 1),
                                           "covered": len({p for p in pairs if p.split(" -> ")[0] != p.split(" -> ")[1]})}
    sets = [len(t["evaluation_criteria"]["action_sets"]) for t in raw]
    assert stats["action_sets"]["total"] == sum(sets)
    assert stats["action_sets"]["per_task"] == {str(k): v for k, v in sorted(Counter(sets).items())}
    assert sum(stats["action_sets"]["per_goal"].values()) == sum(sets)


def test_unknown_personas_and_uninstalled_domains_are_counted_too():
    path = require_acb("retail", "tasks.json")
    raw = json.loads(path.read_text())
    stats = task_stats(import_agentchangebench(path))
    assert stats["personas"] == {"(none)": {"count": len(raw), "share": 1.0}}
    from shiftbox_servers.kit import domain_names, get_domain

    if "retail" in domain_names():   # coverage is over the installed domain's own goal labels
        labels = set(get_domain("retail").goal_tools)
    else:                            # otherwise over every label the tasks use
        labels = {g for t in raw for g in t["user_scenario"]["goal_shifts"]["goals"]}
    assert stats["goal_pair_coverage"]["labels"] == len(labels)


def test_render_shows_every_table():
    _, stats = _banking()
    console = Console(record=True, width=200)
    console.print(render_stats(stats))
    text = console.export_text()
    assert "50 banking tasks" in text and "transactions -> dispute" in text and "MEDIUM_2" in text
    assert f"{stats['goal_pair_coverage']['covered']} of 72 covered" in text


def _cross_task(task_id: str, sets: list[tuple[str, str, list[str]]]):
    """A banking,airline task whose action sets are (action id, tool, depends_on)."""
    from shiftbox.tasks import Task

    return Task.model_validate({
        "id": task_id, "domain": "banking,airline",
        "user_scenario": {"instructions": {"reason_for_call": "x"},
                          "goal_shifts": {"required_shifts": 1,
                                          "goals": ["banking__payments", "airline__reservation_lookup"]}},
        "evaluation_criteria": {"action_sets": [
            {"action_id": a, "allowed_tools": [{"function_name": tool}], "depends_on": deps} for a, tool, deps in sets]}})


def test_cross_domain_dependencies_are_counted_per_set_and_direction():
    """By hand: t1's create depends on an airline read (airline -> banking) and on banking's own identify (not
    crossing); t2's airline read depends on a banking call (banking -> airline) and t2's pay on t2's read
    (airline -> banking); t3 has only same-domain dependencies. 3 crossing dependencies in 2 of 3 tasks."""
    from shiftbox.tasks import TaskFile

    t1 = _cross_task("t1", [("id", "banking__get_customer_by_phone", []),
                            ("read", "airline__get_reservation_details", []),
                            ("create", "banking__create_payment_request", ["id", "read"])])
    t2 = _cross_task("t2", [("id", "banking__get_customer_by_phone", []),
                            ("read", "airline__get_user_details", ["id"]),
                            ("pay", "banking__make_payment", ["read"])])
    t3 = _cross_task("t3", [("user", "airline__get_user_details", []),
                            ("res", "airline__get_reservation_details", ["user"])])
    stats = task_stats(TaskFile(domain="banking,airline", source="hand-built", tasks=[t1, t2, t3]))
    assert stats["cross_domain_dependencies"] == {
        "total": 3, "tasks_with": 2, "by_direction": {"airline -> banking": 2, "banking -> airline": 1}}
    console = Console(record=True, width=200)
    console.print(render_stats(stats))
    assert "another domain): 3 in 2 of 3 tasks" in console.export_text()


def test_a_single_domain_set_has_no_cross_domain_dependency():
    _, stats = _banking()
    assert stats["cross_domain_dependencies"] == {"total": 0, "tasks_with": 0, "by_direction": {}}


def test_the_committed_cross_domain_sets_count_one_dependency_a_task_or_none():
    """The dependent set has one link per task (the generator makes one): 66 in 66 tasks, by direction as its
    notes name them ("needs the amount from airline": airline -> banking); the independent set none."""
    import re

    from shiftbox.tasks import load_task_file
    from tests.conftest import REPO

    dependent = load_task_file(REPO / "tasks" / "cross-domain.json")
    named = Counter()
    for t in dependent.tasks:
        using, source = re.search(r"cross-domain dependency: (\w+?)__\w+ needs the \w+ from (\w+)",
                                  t.description.notes).groups()
        named[f"{source} -> {using}"] += 1
    crossing = task_stats(dependent)["cross_domain_dependencies"]
    assert (crossing["total"], crossing["tasks_with"]) == (66, 66)
    assert crossing["by_direction"] == dict(sorted(named.items()))
    independent = task_stats(load_task_file(REPO / "tasks" / "cross-domain-independent.json"))
    assert independent["cross_domain_dependencies"]["total"] == 0
