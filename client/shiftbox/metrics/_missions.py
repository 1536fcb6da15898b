"""Mission types (Multi-Mission Tool Bench) of a task's goals, and shiftbox's lenient goal walk (`goal_walks`) pooled
by mission type, position in the sequence and transition (the mission types of two consecutive goals).

A goal's mission type comes from its action sets' dependency graph: one set is `single`, a chain
`serial`, sets all independent `parallel`, anything else `serial+parallel`. The graph cannot tell a
chat or clarification goal from a tool goal (shiftbox's chat goals are grounded in one read, its
clarification goals end in the gold call), so the goal's action type (`Task.action_types`, the
generator's label) decides those two; a goal without action sets is `chat`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from ..tasks import MISSION_TYPES, Task
from ._model import PATH_ERRORS, GoalPath, MissionType, PathAggregate, PathSlice, SimulationMetrics
from ._paths import fewest_steps
from ._uncertainty import mean_of_present, ratio

LABELLED = ("chat", "clarify")
"""Mission types only the generator's label shows (the graph looks like a tool goal's)."""


def goal_graph(task: Task, goal: str) -> dict[str, list[str]]:
    """The goal's action sets -> their dependencies among the goal's own sets."""
    actions = task.action_sets_for(goal)
    ids = {a.action_id for a in actions}
    return {a.action_id: [d for d in a.depends_on if d in ids] for a in actions}


def mission_type(task: Task, goal: str, graph: Mapping[str, list[str]] | None = None) -> MissionType:
    """The goal's mission type: the task's statement of it (`GoalShifts.mission_types`), else its chat/clarify action
    type, else the shape of its dependency graph (`graph`: `goal_graph`, when already at hand)."""
    stated = task.user_scenario.goal_shifts.mission_types.get(goal)
    if stated is not None:
        return stated
    label = task.action_types.get(goal)
    if label in LABELLED:
        return label  # type: ignore[return-value]
    graph = goal_graph(task, goal) if graph is None else graph
    if not graph:
        return "chat"
    if len(graph) == 1:
        return "single"
    depth = fewest_steps(graph)
    if depth == len(graph):
        return "serial"
    return "parallel" if depth == 1 else "serial+parallel"


def _slice(paths: list[GoalPath]) -> PathSlice:
    n = len(paths)
    return PathSlice(goals=n, success=ratio(sum(p.success for p in paths), n),
                     optimal=ratio(sum(p.optimal for p in paths), n),
                     progress=mean_of_present(p.progress for p in paths))


def _ordered(groups: dict[str, list[GoalPath]]) -> dict[str, PathSlice]:
    rank = {t: i for i, t in enumerate(MISSION_TYPES)}
    return {k: _slice(groups[k]) for k in sorted(groups, key=lambda k: (rank.get(k, len(rank)), k))}


def aggregate_paths(sims: Iterable[SimulationMetrics]) -> PathAggregate:
    """Path evaluation of the simulations' reached goals, overall and by mission type, position and transition."""
    reached: list[GoalPath] = []
    not_reached = 0
    by_type: dict[str, list[GoalPath]] = defaultdict(list)
    by_position: dict[str, list[GoalPath]] = defaultdict(list)
    by_cell: dict[str, dict[str, list[GoalPath]]] = defaultdict(lambda: defaultdict(list))
    by_transition: dict[str, list[GoalPath]] = defaultdict(list)
    for sim in sims:
        previous: GoalPath | None = None
        for path in sim.goal_walks:
            if not path.reached:
                not_reached += 1
                continue
            reached.append(path)
            by_type[path.mission_type].append(path)
            by_position[str(path.position)].append(path)
            by_cell[path.mission_type][str(path.position)].append(path)
            if previous is not None:
                by_transition[f"{previous.mission_type}->{path.mission_type}"].append(path)
            previous = path
    n = len(reached)
    errors = {kind: sum(kind in p.errors for p in reached) for kind in PATH_ERRORS}
    by_transition_rank = {f"{a}->{b}": (i, j) for i, a in enumerate(MISSION_TYPES) for j, b in enumerate(MISSION_TYPES)}
    return PathAggregate(
        goals=n, not_reached=not_reached, success=ratio(sum(p.success for p in reached), n),
        valid_order=ratio(sum(p.valid_order for p in reached), n), optimal=ratio(sum(p.optimal for p in reached), n),
        progress=mean_of_present(p.progress for p in reached),
        errors={k: v for k, v in errors.items() if v},
        by_mission_type=_ordered(by_type),
        by_position={k: _slice(by_position[k]) for k in sorted(by_position, key=int)},
        by_type_and_position={t: {k: _slice(cells[k]) for k in sorted(cells, key=int)}
                              for t, cells in ((t, by_cell[t]) for t in _ordered(by_type))},
        by_transition={k: _slice(by_transition[k])
                       for k in sorted(by_transition, key=lambda k: (by_transition_rank.get(k, (99, 99)), k))},
    )
