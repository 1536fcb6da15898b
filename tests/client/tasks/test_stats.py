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
