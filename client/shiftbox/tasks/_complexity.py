"""VitaBench's task complexity measures for a task set: the density of the tool dependency graph its tools
form, and per task the observation entropy and the reasoning points (docs/tasks.md says how each is read).

Source: the VitaBench paper (arXiv 2509.26490, section 2, "task complexity"); its code computes none of them,
so where the paper names a quantity without a procedure shiftbox's reading is stated (and listed as a departure).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from shiftbox_servers.kit import domain_list, get_domain, graph_density

from ._model import Task, TaskFile

SOURCE = "VitaBench (arXiv 2509.26490), section 2; shiftbox's reading of entropy and reasoning points: docs/tasks.md"


def tool_graph_size(task_file: TaskFile) -> tuple[int, int] | None:
    """(tools, edges) of the dependency graph over the tools the task set is served with: each domain's tool set
    (the file's), a cross-domain set joining its domains' graphs side by side; None when a domain isn't installed."""
    toolset = task_file.toolset_for()
    tools = edges = 0
    try:
        domains = [get_domain(name) for name in domain_list(task_file.domain)]
    except KeyError:
        return None
    for domain in domains:
        served = {spec.name for spec in domain.toolset(toolset)}
        tools += len(served)
        edges += sum(u in served and v in served for u, v in domain.dependency_graph.edges())
    return tools, edges


def gold_tools(task: Task) -> list[str]:
    """The tool of each gold call the agent makes: the first allowed tool of every action set, in order."""
    return [a.allowed_tools[0].function_name for a in task.evaluation_criteria.action_sets if a.allowed_tools]


def observation_entropy(task: Task) -> float | None:
    """Shannon entropy in bits of where the task's gold observations come from: the share of its gold calls
    made to each tool (0 when one tool gives them all); None for a task without gold calls."""
    counts = Counter(gold_tools(task))
    n = sum(counts.values())
    if not n:
        return None
    return -sum(c / n * math.log2(c / n) for c in counts.values()) + 0.0  # + 0.0: never -0.0


def reasoning_points(task: Task) -> int:
    """The separate things the agent must work out and get right: one per action set (which tool, which
    arguments) and one per fact it must find and tell the user (communicate_info)."""
    criteria = task.evaluation_criteria
    return len(criteria.action_sets) + len(criteria.communicate_info)


def _summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"mean": None, "min": None, "max": None}
    return {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def task_complexity(task_file: TaskFile) -> dict[str, Any]:
    """The task set's complexity measures; JSON-ready (per task in file order, then summaries)."""
    size = tool_graph_size(task_file)
    per_task = {t.id: {"reasoning_points": reasoning_points(t), "observation_entropy_bits": observation_entropy(t)}
                for t in task_file.tasks}
    entropies = [v["observation_entropy_bits"] for v in per_task.values() if v["observation_entropy_bits"] is not None]
    return {
        "source": SOURCE,
        "tool_graph": None if size is None else
        {"tools": size[0], "edges": size[1], "density": graph_density(*size)},
        "reasoning_points": _summary([v["reasoning_points"] for v in per_task.values()]),
        "observation_entropy_bits": _summary(entropies),
        "per_task": per_task,
    }
