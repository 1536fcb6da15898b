"""Execution paths of a goal's gold action sets (Multi-Mission Tool Bench's decision tree).

A goal's action sets and their `depends_on` form a dependency graph. A valid execution path is a
sequence of steps (agent turns), each a non-empty set of action sets whose dependencies were all done
in earlier steps; independent sets may share a step (one agent turn with parallel tool calls) unless the
run allowed one tool call per turn, when every step holds one set. The optimal paths are the valid
paths with the fewest steps: as many as the longest dependency chain with parallel steps, one per set
without. Dependencies on sets outside the graph (another goal's) are not steps of this goal's paths.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from itertools import combinations

Graph = Mapping[str, Collection[str]]
"""action set id -> the ids it depends on (ids outside the mapping are ignored)."""
ExecutionPath = tuple[frozenset[str], ...]
"""The action sets done in each step (agent turn), in order."""


def _inside(graph: Graph) -> dict[str, frozenset[str]]:
    """The graph with only the dependencies on its own nodes."""
    return {node: frozenset(d for d in deps if d in graph and d != node) for node, deps in graph.items()}


def _depth(graph: dict[str, frozenset[str]], done: frozenset[str]) -> int:
    """Steps needed for the longest dependency chain among the nodes not yet done."""
    memo: dict[str, int] = {}

    def chain(node: str) -> int:
        if node not in memo:
            memo[node] = 1 + max((chain(d) for d in graph[node] if d not in done), default=0)
        return memo[node]

    return max((chain(n) for n in graph if n not in done), default=0)


def fewest_steps(graph: Graph, parallel: bool = True) -> int:
    """Steps of an optimal path: the longest dependency chain with parallel steps, else one step per set."""
    if len(graph) <= 1:  # most goals: no set, or one
        return len(graph)
    inside = _inside(graph)
    _check_acyclic(inside)
    return _depth(inside, frozenset()) if parallel else len(inside)


def _check_acyclic(graph: dict[str, frozenset[str]]) -> None:
    done: set[str] = set()
    while len(done) < len(graph):
        ready = {n for n, deps in graph.items() if n not in done and deps <= done}
        if not ready:
            raise ValueError(f"action sets depend on each other in a circle: {sorted(set(graph) - done)}")
        done |= ready


def _steps_from(graph: dict[str, frozenset[str]], done: frozenset[str], parallel: bool,
                budget: int | None) -> Iterator[ExecutionPath]:
    """Every valid continuation from `done`; with a budget, only those finishing within it (pruned early)."""
    if len(done) == len(graph):
        yield ()
        return
    if budget is not None and (budget <= 0 or (_depth(graph, done) if parallel else len(graph) - len(done)) > budget):
        return
    ready = sorted(n for n, deps in graph.items() if n not in done and deps <= done)
    sizes = range(1, len(ready) + 1) if parallel else (1,)
    for size in sizes:
        for step in combinations(ready, size):
            chosen = frozenset(step)
            for rest in _steps_from(graph, done | chosen, parallel, None if budget is None else budget - 1):
                yield (chosen, *rest)


def execution_paths(graph: Graph, parallel: bool = True) -> Iterator[ExecutionPath]:
    """Every valid execution path (lazily: with parallel steps n independent sets have Fubini(n) paths)."""
    inside = _inside(graph)
    _check_acyclic(inside)
    return _steps_from(inside, frozenset(), parallel, None)


def optimal_paths(graph: Graph, parallel: bool = True) -> list[ExecutionPath]:
    """The valid execution paths with the fewest steps (enumerated with that budget, so no other is built)."""
    inside = _inside(graph)
    _check_acyclic(inside)
    return list(_steps_from(inside, frozenset(), parallel, fewest_steps(inside, parallel)))
