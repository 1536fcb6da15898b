"""AgentChangeBench / tau2 task lists read as they are and turned into a native TaskFile (`load_task_file`
accepts such a list; `shiftbox.agentchangebench.import_agentchangebench` also records gold outcomes).

Both gold formats are read: AgentChangeBench `evaluation_criteria.action_sets` (kept as they are)
and tau2 `evaluation_criteria.actions` (one action set per action, with one allowed tool, depending
on the previous action since tau2 actions are an ordered sequence). A task without `goal_shifts`
(tau2's own tasks: only AgentChangeBench adds them) is a single-goal task; its goal is the domain's goal
whose relevant tools include its first state-changing gold call, else the one whose tools include the
most of its gold calls (the first such in the domain's goal table), else "request". Scoring extras
(max_score, scoring_rules, info, annotations) are dropped. A `ticket` is kept in `description.notes`
(appended as "Ticket: ..." after any notes). Initialization actions run in the agent's environment
(`env_type` "assistant") become `initial_state.tool_calls`; the others (the user simulator's own
state, e.g. `update_user`) are kept verbatim in `initial_state.data["initialization_actions"]`,
beside `initialization_data` and `message_history`.

This is the one place the reference task format is converted; it sits in `tasks` because loading a task
file accepts it (and `tasks` must not depend on `shiftbox.agentchangebench`, which builds on it).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from shiftbox_servers.kit import get_domain

from ._json import describe_errors
from ._model import (
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    InitialState,
    Instructions,
    Task,
    TaskDescription,
    TaskFile,
    ToolCallSpec,
    UserScenario,
)

if TYPE_CHECKING:  # the reference's format loads when a reference file is read (a native run never needs it)
    from ._reference_format import RefCriteria, RefInitialState, RefTask

REFERENCE_SNAPSHOTS = {"banking": "banking/acb-v1", "retail": "retail/acb-v1", "airline": "airline/v1"}
"""Snapshot the reference task ids refer to. The airline database is not available upstream; the native
airline snapshot is built to hold the ids AgentChangeBench's airline tasks use."""
REFERENCE_TOOLSETS = ("agentchangebench", "tau2")
"""The domains' copies of the references' tool contracts: AgentChangeBench's (its fork of tau2's tools, with
log_shift_event) and tau2-bench's own. A reference file is served with the first of them its domain has, tau2's
first for tau2's own files (`reference_toolset`)."""
AGENT_ENV = "assistant"
REFERENCE_SOURCE = "agentchangebench"
"""How a reference import's `source` begins (`is_reference_file`)."""
SINGLE_GOAL_FALLBACK = "request"
"""The goal of a task without goal_shifts whose gold calls no goal of the domain lists."""


def is_reference_file(task_file: TaskFile) -> bool:
    """The file was imported from a reference task list (its data is the reference's, not the user's)."""
    return task_file.source.startswith(f"{REFERENCE_SOURCE} ")


def tau2_format_ids(raw: Any) -> list[str]:
    """Ids of the tasks whose gold is tau2's ordered `actions` (not AgentChangeBench `action_sets`)."""
    from ._reference_format import REFERENCE_LIST

    return [r.id for r in REFERENCE_LIST.validate_python(raw)
            if r.evaluation_criteria is not None and r.evaluation_criteria.actions is not None
            and not r.evaluation_criteria.action_sets]


def reference_toolset(toolsets: Collection[str], tau2_file: bool) -> str | None:
    """The tool set a reference file's tasks are written for, of the domain's `toolsets`: `agentchangebench`
    for AgentChangeBench's files (`tau2` when the domain has only that), `tau2` first for tau2's own files (no
    task with goal_shifts); None when the domain has neither (its default tools serve them)."""
    order = REFERENCE_TOOLSETS[::-1] if tau2_file else REFERENCE_TOOLSETS
    return next((name for name in order if name in toolsets), None)


def domain_reference_toolset(domain: str, tau2_file: bool = False) -> str | None:
    """`reference_toolset` of an installed domain's tool sets (None when the domain isn't installed)."""
    try:
        toolsets = get_domain(domain).toolsets
    except KeyError:
        return None
    return reference_toolset(toolsets, tau2_file)


def reference_task_file(raw: Any, path: Path, domain: str | None = None, *,
                        goals_when_missing: Literal["single", "none"] = "single") -> TaskFile:
    """The native TaskFile for an already-parsed reference task list read from `path`.

    A task without `goal_shifts` is a single-goal task (`goals_when_missing="single"`, see the module
    notes), or gets no goals and `required_shifts` 0 (`"none"`: the reference's own defaults, an empty goal
    sequence and max(0, len(goals) - 1) shifts, for reading its results files).
    """
    from ._reference_format import REFERENCE_LIST

    try:
        refs = REFERENCE_LIST.validate_python(raw)
    except ValidationError as exc:
        raise ValueError(f"{path}: not an AgentChangeBench task list: {describe_errors(exc)}") from None
    if not refs:
        raise ValueError(f"{path}: holds no tasks (an empty list); give a task list with tasks")
    named = sorted({r.user_scenario.instructions.domain for r in refs} - {None})
    if domain is None:
        if len(named) != 1:
            found = ", ".join(named) or "no domain"
            raise ValueError(f"{path}: cannot tell the domain (tasks name {found}); pass the domain explicitly")
        domain = named[0]
    elif named and named != [domain]:
        raise ValueError(f"{path}: tasks are for {', '.join(named)}, not {domain!r}")
    goal_tools, read_only = _goal_tools(domain), _read_only_tools(domain)
    tau2_file = all(r.user_scenario.goal_shifts is None for r in refs)
    return TaskFile(
        domain=domain,
        snapshot=REFERENCE_SNAPSHOTS.get(domain),
        source=f"{REFERENCE_SOURCE} {path.parent.name}/{path.name}",
        toolset=domain_reference_toolset(domain, tau2_file),
        tasks=[_task(r, domain, goal_tools, read_only, goals_when_missing) for r in refs],
    )


def _goal_tools(domain: str) -> Mapping[str, tuple[str, ...]]:
    try:
        return get_domain(domain).goal_tools
    except KeyError:
        return {}


def _read_only_tools(domain: str) -> set[str]:
    try:
        tools = get_domain(domain).tools
    except KeyError:
        return set()
    return {spec.name for spec in tools if spec.annotations.read_only_hint}


def single_goal(tool_names: list[str], goal_tools: Mapping[str, Iterable[str]], read_only: set[str]) -> str:
    """The goal of a task without goal_shifts, from its gold calls' tool names in order: the goal whose
    relevant tools include the first state-changing call; else the goal whose tools include the most of the
    calls' tools (the first such in `goal_tools`); else `SINGLE_GOAL_FALLBACK`."""
    for name in tool_names:
        if name not in read_only:
            goal = next((g for g, tools in goal_tools.items() if name in tools), None)
            if goal is not None:
                return goal
    used = set(tool_names)
    counts = {goal: len(used & set(tools)) for goal, tools in goal_tools.items()}
    best = max(counts.values(), default=0)
    return next(g for g, n in counts.items() if n == best) if best else SINGLE_GOAL_FALLBACK


def assign_goals(action_tools: Iterable[Iterable[str]], goals: list[str],
                 goal_tools: Mapping[str, Iterable[str]]) -> list[str | None]:
    """The goal of each action set (given by its tool names), in order.

    A pointer starts at the first goal. An action set belongs to the earliest goal at or after the
    pointer whose relevant tools (`goal_tools[goal]`) include one of its tools, and the pointer
    moves there; otherwise it stays with the pointer's goal. A goal missing from `goal_tools` (every
    goal when the domain isn't installed) claims nothing, so its sets stay with the current goal.
    """
    pointer, assigned = 0, []
    for tools in action_tools:
        names = set(tools)
        for k in range(pointer, len(goals)):
            if names & set(goal_tools.get(goals[k], ())):
                pointer = k
                break
        assigned.append(goals[pointer] if goals else None)
    return assigned


def _action_sets(criteria: RefCriteria) -> list[ActionSet]:
    sets = [ActionSet(action_id=a.action_id, required_parameters=a.required_parameters,
                      depends_on=a.depends_on or [],
                      allowed_tools=[ToolCallSpec(function_name=t.function_name, params=t.params or {})
                                     for t in a.allowed_tools])
            for a in criteria.action_sets or []]
    previous: list[str] = []
    for a in criteria.actions or []:
        sets.append(ActionSet(action_id=a.action_id, depends_on=previous,
                              allowed_tools=[ToolCallSpec(function_name=a.name, params=a.arguments or {})]))
        previous = [a.action_id]
    return sets


def _initial_state(ref: RefInitialState | None) -> InitialState:
    if ref is None:
        return InitialState()
    actions = ref.initialization_actions or []
    data = {k: getattr(ref, k) for k in ("initialization_data", "message_history") if k in ref.model_fields_set}
    kept = [a.model_dump() for a in actions if a.env_type != AGENT_ENV]
    if kept:
        data["initialization_actions"] = kept
    calls = [ToolCallSpec(function_name=a.func_name, params=a.arguments or {})
             for a in actions if a.env_type == AGENT_ENV]
    return InitialState(tool_calls=calls, data=data or None)


def _task(ref: RefTask, domain: str, goal_tools: Mapping[str, tuple[str, ...]], read_only: set[str],
          goals_when_missing: Literal["single", "none"]) -> Task:
    from ._reference_format import RefCriteria, RefDescription, RefGoalShifts

    criteria = ref.evaluation_criteria or RefCriteria()
    sets = _action_sets(criteria)
    shifts = ref.user_scenario.goal_shifts
    if shifts is None:
        names = [a.allowed_tools[0].function_name for a in sets if a.allowed_tools]
        goals = [single_goal(names, goal_tools, read_only)] if goals_when_missing == "single" else []
        shifts = RefGoalShifts(required_shifts=0, goals=goals)
    goals = shifts.goals
    for action, goal in zip(sets, assign_goals(([t.function_name for t in a.allowed_tools] for a in sets),
                                               goals, goal_tools), strict=True):
        action.goal = goal
    description = TaskDescription(**(ref.description or RefDescription()).model_dump())
    if ref.ticket:
        description.notes = "\n".join(filter(None, [description.notes, f"Ticket: {ref.ticket}"]))
    ins = ref.user_scenario.instructions
    return Task(
        id=ref.id,
        domain=domain,
        description=description,
        user_scenario=UserScenario(
            persona=ref.user_scenario.persona,
            instructions=Instructions(reason_for_call=ins.reason_for_call or "", known_info=ins.known_info or "",
                                      unknown_info=ins.unknown_info or "",
                                      task_instructions=ins.task_instructions or ""),
            goal_shifts=GoalShifts(**shifts.model_dump()),
        ),
        initial_state=_initial_state(ref.initial_state),
        evaluation_criteria=EvaluationCriteria(action_sets=sets, communicate_info=criteria.communicate_info or [],
                                               nl_assertions=criteria.nl_assertions or []),
    )
