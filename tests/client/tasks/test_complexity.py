"""VitaBench's task complexity measures per task set (graph density, observation entropy, reasoning points), each
expected value worked out by hand on a tiny graph and tiny tasks."""

from __future__ import annotations

import math
from types import SimpleNamespace

from rich.console import Console
from typer.testing import CliRunner

from shiftbox.cli import app
from shiftbox.tasks import TaskFile, render_stats, task_stats, write_task_file
from shiftbox.tasks._complexity import (
    observation_entropy,
    reasoning_points,
    task_complexity,
    tool_graph_size,
)
from shiftbox_servers.kit import conditions, dependency_graph, graph_density
from tests.client.metrics.build import action, task


def gold(task_id: str, tools: list[str], info: tuple[str, ...] = ()):
    """A task whose gold calls go to `tools`, in order, and which must tell the user `info`."""
    return task(actions=[action(f"a{i}", "authentication", name, {}) for i, name in enumerate(tools)], info=info,
                task_id=task_id)


def test_density_is_edges_over_ordered_pairs_of_distinct_tools():
    assert graph_density(4, 3) == 3 / 12
    assert graph_density(66, 512) == 512 / (66 * 65)  # VitaBench's own graph: about 0.119
    assert graph_density(1, 0) is None and graph_density(0, 0) is None


def test_observation_entropy_is_the_entropy_of_the_gold_calls_over_their_tools():
    # tools a, a, b, c: shares 1/2, 1/4, 1/4 -> 1/2*1 + 1/4*2 + 1/4*2 = 1.5 bits
    assert observation_entropy(gold("t", ["a", "a", "b", "c"])) == 1.5
    assert observation_entropy(gold("t", ["a", "a"])) == 0.0  # one source: nothing uncertain
    assert observation_entropy(gold("t", ["a", "b", "c"])) == math.log2(3)
    assert observation_entropy(gold("t", [])) is None


def test_reasoning_points_count_action_sets_and_facts_to_tell():
    assert reasoning_points(gold("t", ["a", "b", "a"], info=("120.50", "card ending 4242"))) == 3 + 2
    assert reasoning_points(gold("t", [])) == 0


def test_the_echo_domains_tiny_graph_gives_its_density():
    # echo: echo, put_marker, get_marker; one edge put_marker -> get_marker; density 1 / (3 * 2)
    echo = TaskFile(domain="echo", source="test", tasks=[])
    assert tool_graph_size(echo) == (3, 1)
    assert task_complexity(echo)["tool_graph"] == {"tools": 3, "edges": 1, "density": 1 / 6}


def fake_domain(tools: list[str], graph) -> SimpleNamespace:
    """A domain as the measures read it: its tool set's names and its graph."""
    return SimpleNamespace(toolset=lambda name: [SimpleNamespace(name=t) for t in tools], dependency_graph=graph)


def test_a_cross_domain_set_joins_its_domains_graphs_side_by_side(monkeypatch):
    # shop: 3 tools, edges find -> order, order -> cancel (2); bank: 2 tools, edge lookup -> lock (1)
    shop = fake_domain(["find", "order", "cancel"], dependency_graph({"order": ["find"]}, {
        "find": conditions("found"), "order": conditions("read"), "cancel": conditions("gone", after=["order"])}))
    bank = fake_domain(["lookup", "lock"], dependency_graph({}, {
        "lookup": conditions("known"), "lock": conditions("locked", after=["lookup"])}))
    monkeypatch.setattr("shiftbox.tasks._complexity.get_domain", {"shop": shop, "bank": bank}.__getitem__)
    monkeypatch.setattr("shiftbox.tasks._complexity.domain_list", lambda name: name.split(","))
    cross = TaskFile(domain="shop,bank", source="test", tasks=[])
    # 5 tools, 3 edges, no edge across: 3 / (5 * 4) = 0.15
    assert task_complexity(cross)["tool_graph"] == {"tools": 5, "edges": 3, "density": 3 / 20}


def test_an_uninstalled_domain_has_no_graph_but_its_tasks_still_count():
    tasks = [gold("t1", ["a", "a", "b", "c"], info=("x",)), gold("t2", ["a", "b"]), gold("t3", [])]
    complexity = task_complexity(TaskFile(domain="nowhere", source="test", tasks=tasks))
    assert complexity["tool_graph"] is None
    # points 4 + 1 = 5, 2, 0 -> mean 7 / 3; entropies 1.5, 1.0 (t3 has no gold calls) -> mean 1.25
    assert complexity["reasoning_points"] == {"mean": 7 / 3, "min": 0, "max": 5}
    assert complexity["observation_entropy_bits"] == {"mean": 1.25, "min": 1.0, "max": 1.5}
    assert complexity["per_task"]["t3"] == {"reasoning_points": 0, "observation_entropy_bits": None}


def test_stats_report_the_measures_as_json_and_as_a_table(tmp_path):
    tasks = [gold("t1", ["put_marker", "get_marker"], info=("mark_1",)), gold("t2", ["echo"])]
    for t in tasks:
        t.domain = "echo"
    path = tmp_path / "tasks.json"
    write_task_file(TaskFile(domain="echo", source="test", tasks=tasks), path)
    stats = task_stats(TaskFile(domain="echo", source="test", tasks=tasks))
    # t1: 2 + 1 = 3 points, two tools once each = 1 bit; t2: 1 point, 0 bits
    assert stats["complexity"]["reasoning_points"] == {"mean": 2.0, "min": 1, "max": 3}
    assert stats["complexity"]["observation_entropy_bits"] == {"mean": 0.5, "min": 0.0, "max": 1.0}
    console = Console(record=True, width=200)
    console.print(render_stats(stats))
    text = console.export_text()
    assert "tool graph density" in text and "0.167" in text and "1 edges" in text and "3 tools" in text
    assert "mean 2 " in text and "mean 0.5" in text
    shown = CliRunner().invoke(app, ["tasks", "stats", str(path), "--json"])
    assert shown.exit_code == 0, shown.output
    assert '"density": 0.16666666666666666' in shown.output
