"""What a task set covers (goal lengths, personas, ordered goal pairs, action sets, cross-domain dependencies)
and how complex it is (VitaBench's measures, `_complexity`), as data and as tables."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise, permutations
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from shiftbox_servers.kit import domain_of, get_domain

from ._complexity import task_complexity
from ._model import MMTB_TYPES, Task, TaskFile

NO_PERSONA = "(none)"
NO_GOAL = "(none)"


def goal_labels(task_file: TaskFile) -> list[str]:
    """The domain's goal labels when it is installed, else the labels the tasks use."""
    try:
        return sorted(get_domain(task_file.domain).goal_tools)
    except KeyError:
        return sorted({g for t in task_file.tasks for g in t.goals})


def task_stats(task_file: TaskFile) -> dict[str, Any]:
    """Counts over the file's tasks; JSON-ready (string keys, sorted)."""
    tasks = task_file.tasks
    n = len(tasks)
    personas = Counter(t.user_scenario.persona or NO_PERSONA for t in tasks)
    pairs = Counter(f"{a} -> {b}" for t in tasks for a, b in pairwise(t.goals))
    labels = goal_labels(task_file)
    possible = {f"{a} -> {b}" for a, b in permutations(labels, 2)}
    sets = [a for t in tasks for a in t.evaluation_criteria.action_sets]
    crossing = {t.id: _directions(t) for t in tasks}
    return {
        "domain": task_file.domain,
        "source": task_file.source,
        "tasks": n,
        "goal_lengths": _sorted(Counter(len(t.goals) for t in tasks)),
        "personas": {p: {"count": c, "share": c / n} for p, c in sorted(personas.items())},
        "goal_pairs": dict(sorted(pairs.items())),
        "goal_pair_coverage": {"labels": len(labels), "possible": len(possible),
                               "covered": len(possible & set(pairs))},
        "action_sets": {
            "total": len(sets),
            "per_task": _sorted(Counter(len(t.evaluation_criteria.action_sets) for t in tasks)),
            "per_goal": dict(sorted(Counter(a.goal or NO_GOAL for a in sets).items())),
        },
        "complexity": task_complexity(task_file),
        "cross_domain_dependencies": {
            "total": sum(len(d) for d in crossing.values()),
            "tasks_with": sum(1 for d in crossing.values() if d),
            "by_direction": dict(sorted(Counter(x for d in crossing.values() for x in d).items())),
        },
    }


def type_sequence_coverage(tasks: list[Task], longest: int = 4) -> dict[int, tuple[int, int]]:
    """Length -> (MMTB type sequences the tasks' goal prefixes cover, all 4**length of them), for lengths 1 to
    `longest`: the cells of MMTB's switching analysis (accuracy for every prefix of mission types)."""
    seen = {seq[:k] for t in tasks if (seq := t.mmtb_types()) for k in range(1, len(seq) + 1)}
    return {k: (sum(len(s) == k for s in seen), len(MMTB_TYPES) ** k) for k in range(1, longest + 1)}


def _directions(task: Task) -> list[str]:
    """Each cross-domain dependency of the task as "domain read -> domain using" (its actions' tools' domains)."""
    home = {a.action_id: domain_of(a.allowed_tools[0].function_name)
            for a in task.evaluation_criteria.action_sets if a.allowed_tools}
    return [f"{home[read]} -> {home[using]}" for using, read in task.cross_domain_dependencies()]


def _sorted(counts: Counter[int]) -> dict[str, int]:
    return {str(k): counts[k] for k in sorted(counts)}


def _table(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> Table:
    table = Table(*header, title=title, title_justify="left")
    for row in rows:
        table.add_row(*(str(c) for c in row))
    return table


def render_stats(stats: dict[str, Any]) -> RenderableType:
    """The stats as rich tables (what `shiftbox tasks stats` prints)."""
    cover = stats["goal_pair_coverage"]
    sets = stats["action_sets"]
    crossing = stats["cross_domain_dependencies"]
    return Group(
        f"{stats['tasks']} {stats['domain']} tasks from {stats['source']}; {sets['total']} action sets",
        _table("goals per task", ("goals", "tasks"), list(stats["goal_lengths"].items())),
        _table("personas", ("persona", "tasks", "share"),
               [(p, v["count"], f"{v['share']:.0%}") for p, v in stats["personas"].items()]),
        _table(f"ordered goal pairs: {cover['covered']} of {cover['possible']} covered "
               f"({cover['labels']} goal labels)", ("pair", "times"), list(stats["goal_pairs"].items())),
        _table("action sets per task", ("action sets", "tasks"), list(sets["per_task"].items())),
        _table("action sets per goal", ("goal", "action sets"), list(sets["per_goal"].items())),
        f"cross-domain dependencies (a call that needs a value read in another domain): {crossing['total']} in "
        f"{crossing['tasks_with']} of {stats['tasks']} tasks",
        _table("cross-domain dependencies by domain", ("read -> use", "dependencies"),
               list(crossing["by_direction"].items())),
        _complexity_table(stats["complexity"]),
    )


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}".rstrip("0").rstrip(".")


def _complexity_table(complexity: dict[str, Any]) -> Table:
    graph = complexity["tool_graph"]
    rows: list[tuple[Any, ...]] = [("tool graph density", "n/a (domain not installed)", "", "")] if graph is None else [
        ("tool graph density", _number(graph["density"]), f"{graph['edges']} edges", f"{graph['tools']} tools")]
    for name, key in (("reasoning points per task", "reasoning_points"),
                      ("observation entropy per task (bits)", "observation_entropy_bits")):
        s = complexity[key]
        rows.append((name, f"mean {_number(s['mean'])}", f"min {_number(s['min'])}", f"max {_number(s['max'])}"))
    return _table("task complexity (VitaBench's measures; docs/tasks.md)", ("measure", "value", "", ""), rows)
