"""The per-mission protocol (Multi-Mission Tool Bench's teacher forcing): each goal of a task is a scored unit of its
own, played live after the gold conversation of the goals before it, so a mistake on one goal cannot spoil the next.

A task with goals g1..gn becomes n mission tasks (`mission_tasks`); mission k (`<task id>~m<k>`, k from 1) has:
- the goal list [gk] (no shift), the persona, known_info and initial state of the task, and gk's step of the
  instructions when they number one step per goal;
- `initial_state.gold_dialogue`: for each earlier goal, the user's request (the domain's phrasing of the goal, filled
  from known_info), the goal's gold calls (its action sets' first allowed tool, one assistant message per dependency
  level) and a gold answer stating the goal's communicate_info. The orchestrator plays it on the simulation's fresh
  episode, so the tool results the agent reads are the domain's real ones and the live goal starts from the state the
  gold path leaves;
- gk's relation to the earlier goals (`GoalShifts.relations`, as path evaluation reads it off the whole task) and,
  on each gold turn, its goal's MMTB type: the mission is scored at place k after those types (MMTB's table);
- gk's criteria only: its action sets (dependencies on earlier goals' sets dropped: the gold dialogue made them)
  and the communicate_info attributed to it (the last mission also the items of the whole task, attributed to no
  goal: the live conversation would end there). Action sets of no goal, NL assertions, rubric items and the
  expected state digest describe the whole task and are left out (state match is not scored per mission).
A task without goals stays one unit, as it is.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

from shiftbox_servers.kit import get_domain

from ..tasks import (
    MMTB_TYPE_OF,
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    GoldTurn,
    Task,
    ToolCallSpec,
)
from ..users import parse_known_info, usable_requests

RunProtocol = Literal["live", "per-mission"]
"""How a run plays a task: `live`, one conversation through every goal; `per-mission`, one scored conversation per
goal after the gold conversation of the earlier ones (`mission_tasks`)."""
RUN_PROTOCOLS: tuple[str, ...] = get_args(RunProtocol)
MISSION_SEPARATOR = "~m"
_STEP = re.compile(r"^\s*(\d+)\.\s+(.+?)\s*$", re.MULTILINE)


def mission_task_id(task_id: str, k: int) -> str:
    """Mission k's task id (k from 1): `<task id>~m<k>`; its simulations are `<task id>~m<k>#<trial>`."""
    return f"{task_id}{MISSION_SEPARATOR}{k}"


def tasks_for_protocol(tasks: list[Task], protocol: str) -> list[Task]:
    """The units a run scores, in order: the tasks themselves (live), or each task's missions (per-mission)."""
    if protocol == "live":
        return list(tasks)
    return [mission for task in tasks for mission in mission_tasks(task)]


def mission_tasks(task: Task) -> list[Task]:
    """The task's missions, one per goal (see the module docstring); [task] for a task without goals."""
    goals = task.goals
    if not goals:
        return [task]
    steps = _steps(task.user_scenario.instructions.task_instructions, len(goals))
    turns = [_gold_turn(task, goal) for goal in goals]
    return [_mission(task, k, steps[k] if steps else None, turns[:k]) for k in range(len(goals))]


def _steps(instructions: str, n: int) -> list[str] | None:
    """The instructions' numbered steps 1..n when they number exactly one step per goal, else None."""
    found = _STEP.findall(instructions or "")
    if [int(i) for i, _ in found] != list(range(1, n + 1)):
        return None
    return [text for _, text in found]


def _gold_turn(task: Task, goal: str) -> GoldTurn:
    """The gold exchange of one goal: request, calls by dependency level, answer with its communicate_info."""
    from ..metrics import mission_type  # the metrics package loads only for a per-mission run

    actions = task.action_sets_for(goal)
    own = {a.action_id for a in actions}
    level: dict[str, int] = {}
    for action in actions:  # a dependency listed after its dependent is taken as level 0 (file order decides)
        level[action.action_id] = 1 + max((level.get(d, 0) for d in action.depends_on if d in own), default=-1)
    calls: list[list[ToolCallSpec]] = [[] for _ in range(1 + max(level.values(), default=-1))]
    for action in actions:
        calls[level[action.action_id]].append(action.allowed_tools[0])
    facts = task.communicate_info_for(goal)
    said = f" What I found: {'; '.join(facts)}." if facts else ""
    return GoldTurn(goal=goal, request=_request(task, goal), calls=[c for c in calls if c],
                    answer=f"Your {_words(goal)} request is taken care of.{said}",
                    mmtb_type=MMTB_TYPE_OF[mission_type(task, goal)])


def _request(task: Task, goal: str) -> str:
    """The user's words for a goal: the domain's first phrasing whose placeholders known_info fills, else a plain ask."""
    try:
        phrasings = get_domain(task.domain).goal_requests.get(goal, ())
    except KeyError:  # the domain is not installed: a plain request
        phrasings = ()
    usable = usable_requests(phrasings, parse_known_info(task.user_scenario.instructions.known_info))
    return usable[0] if usable else f"I need help with {_words(goal)}."


def _words(goal: str) -> str:
    return re.sub(r"_+", " ", goal.split("__", 1)[-1])


def _mission(task: Task, k: int, step: str | None, earlier: list[GoldTurn]) -> Task:
    from ..metrics import relation_of  # the metrics package loads only for a per-mission run

    goal = task.goals[k]
    actions = task.action_sets_for(goal)
    own = {a.action_id for a in actions}
    info = task.communicate_info_for(goal)
    if k == len(task.goals) - 1:  # items of the whole task (attributed to no goal): scored where the task ends
        attributed = {i for items in task.evaluation_criteria.communicate_info_by_goal.values() for i in items}
        info = list(dict.fromkeys(info + [i for i in task.evaluation_criteria.communicate_info if i not in attributed]))
    scenario = task.user_scenario
    instructions = scenario.instructions
    if step is not None:
        instructions = instructions.model_copy(update={"reason_for_call": step, "task_instructions": step})
    kind = task.action_types.get(goal)
    stated = scenario.goal_shifts.mission_types.get(goal)
    return task.model_copy(deep=True, update={
        "id": mission_task_id(task.id, k + 1),
        "user_scenario": scenario.model_copy(update={
            "instructions": instructions,
            "goal_shifts": GoalShifts(required_shifts=0, goals=[goal], action_types={goal: kind} if kind else {},
                                      mission_types={goal: stated} if stated else {},
                                      relations={goal: relation_of(task, goal)} if k else {})}),
        "initial_state": task.initial_state.model_copy(update={"gold_dialogue": earlier}),
        "evaluation_criteria": EvaluationCriteria(
            action_sets=[ActionSet(action_id=a.action_id, goal=a.goal, allowed_tools=a.allowed_tools,
                                   depends_on=[d for d in a.depends_on if d in own],
                                   required_parameters=a.required_parameters) for a in actions],
            communicate_info=info, communicate_info_by_goal={goal: info} if info else {},
            expected_state_digest=None),
    })
