"""Multi-Mission Tool Bench's verdict on each goal of a conversation: the goal as a mission (`_mmtb_walk.Mission`), the
agent's replies while it was current as the steps walked, then the argument check (`_mmtb_arguments`).

A goal is current from the user message that raised it up to the next shift (`shiftbox.trajectory.goal_spans`,
stacked="turned_to"); its steps are the agent's replies after that user message. Its gold calls are its action sets
(the tools each allows, with their params as the gold arguments), less those met by calls before the goal began,
each after the goal's own sets it depends on; a clarify goal starts with the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tasks import MMTB_TYPE_OF, Task
from ..trajectory import SHIFT_REPORT_TOOL, Message, Trajectory
from ._goal_paths import PathInputs
from ._missions import mission_type
from ._mmtb_arguments import arguments_pass
from ._mmtb_walk import AgentStep, GoldCall, Mission, walk
from ._model import MissionType, MissionVerdict, RelationType


def mission_of(task: Task, goal: str, kind: MissionType, met_before: set[str] = frozenset()) -> Mission:
    """The goal's gold steps: its action sets not met before it began, in task order, each after the goal's own sets
    it depends on; a clarify goal starts with the question."""
    actions = [a for a in task.action_sets_for(goal) if a.action_id not in met_before]
    keys = {a.action_id for a in actions}
    calls = []
    for action in actions:
        tools: dict[str, list[dict[str, Any]]] = {}
        for spec in action.allowed_tools:
            tools.setdefault(spec.function_name, []).append(dict(spec.params))
        calls.append(GoldCall(action.action_id, tools, frozenset(d for d in action.depends_on if d in keys)))
    return Mission(tuple(calls), clarify=kind == "clarify")


def relation_of(task: Task, goal: str) -> RelationType:
    """How the goal relates to the earlier ones: as the task says (`GoalShifts.relations`), else derived: `long_term`
    when a set of it depends on a set of a goal two or more places back, `previous` on the goal just before, else
    `none`."""
    said = task.user_scenario.goal_shifts.relations.get(goal)
    if said is not None:
        return said
    owner = {a.action_id: a.goal for a in task.evaluation_criteria.action_sets}
    place = {g: i for i, g in enumerate(task.goals)}
    here = place[goal]
    back = {here - place[owner[d]] for a in task.action_sets_for(goal) for d in a.depends_on
            if owner.get(d) in place and place[owner[d]] < here}
    if any(b >= 2 for b in back):
        return "long_term"
    return "previous" if back else "none"


def agent_steps(messages: Sequence[Message]) -> list[AgentStep]:
    """The agent's replies after the span's first user message, each its calls (shift reports left out) or its text."""
    first_user = next((m.index for m in messages if m.role == "user"), None)
    steps = []
    for m in messages:
        if m.role != "assistant" or first_user is None or m.index < first_user:
            continue
        calls = tuple((c.name, c.arguments) for c in m.tool_calls if c.name != SHIFT_REPORT_TOOL)
        if not calls and m.tool_calls and not m.content:
            continue  # only a shift report: no step of the mission
        steps.append(AgentStep(text=m.content, calls=calls))
    return steps


def verdict(mission: Mission, steps: Sequence[AgentStep], schemas: Mapping[str, Mapping[str, Any]] | None,
            parallel: bool = True) -> dict[str, Any]:
    """The walk and argument check of one mission: the fields of `MissionVerdict` they decide."""
    result = walk(mission, steps)
    passed = arguments_pass(result.calls, [c.tools for c in mission.calls], schemas) if result.answered else None
    fewest = mission.fewest_steps(parallel)
    success = bool(passed)
    return {"gold_steps": mission.length, "steps": result.steps, "fewest_steps": fewest, "matched": result.items,
            "ending": result.ending, "arguments_pass": passed, "success": success,
            "optimal": success and result.steps <= fewest, "structure": mission.structure()}


def structure_of(task: Task, goal: str, mission: Mission) -> str | None:
    """The goal's call structure: the multi-call type the task states (`GoalShifts.mission_types`), else MMTB's
    layering of its gold calls (`Mission.structure`)."""
    stated = task.user_scenario.goal_shifts.mission_types.get(goal)
    return stated if stated in ("serial", "parallel", "serial+parallel") else mission.structure()


def mission_verdicts(trajectory: Trajectory, task: Task, schemas: Mapping[str, Mapping[str, Any]] | None,
                     inputs: PathInputs | None = None) -> list[MissionVerdict]:
    """Every goal of the task in order: reached goals walked and checked, the others marked not reached.
    `schemas`: tool name -> its JSON schema, resolved (`_mmtb_arguments.resolve`); None when the domain is not
    installed (each call is then checked against its gold call's parameters only).

    A task with a gold dialogue (the per-mission protocol) is scored from the user message after it (one user message
    per gold turn), its goals placed after the gold turns' goals, with their types as the earlier types. `inputs`: the
    trajectory's matched calls and goal spans, when already made (`goal_paths` walks the same)."""
    inputs = inputs or PathInputs.of(trajectory, task)
    matched, spans = inputs.matched, inputs.spans
    gold = task.initial_state.gold_dialogue
    users = [m.index for m in trajectory.messages if m.role == "user"]
    live = (users[len(gold)] if len(users) > len(gold) else len(trajectory.messages)) if gold else 0
    earlier = [t.mmtb_type for t in gold] if gold else None
    out = []
    for i, goal in enumerate(task.goals):
        kind = mission_type(task, goal)
        base = {"goal": goal, "position": len(gold) + i + 1, "mission_type": MMTB_TYPE_OF[kind],
                "relation": relation_of(task, goal),
                "earlier_types": None if earlier is None or None in earlier else earlier}
        if i >= len(spans) or max(spans[i].start, live) >= spans[i].end:
            mission = mission_of(task, goal, kind)
            out.append(MissionVerdict(**base, reached=False, gold_steps=mission.length,
                                      structure=structure_of(task, goal, mission)))
            continue
        start, end = max(spans[i].start, live), spans[i].end
        before = {a for call, met in zip(matched.calls, matched.hits, strict=True) if call.message_index < start
                  for a in met}
        mission = mission_of(task, goal, kind, before)
        messages = [m for m in trajectory.messages if start <= m.index < end]
        walked = verdict(mission, agent_steps(messages), schemas, not trajectory.one_tool_per_turn)
        out.append(MissionVerdict(**base, reached=True, **{**walked, "structure": structure_of(task, goal, mission)}))
    return out
