"""The task model: one scenario (persona, instructions, goal sequence, evaluation criteria).

Native task files are `{"schema_version": 1, ..., "tasks": [...]}`; AgentChangeBench / tau2 task
lists are read as they are (`reference_task_file`, used by `load_task_file` and by
`shiftbox.agentchangebench.import_agentchangebench`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from shiftbox_servers.kit import ACTION_TYPES, DEFAULT_TOOLSET, domain_of

TASK_FILE_SCHEMA_VERSION = 1
ActionType = Literal[ACTION_TYPES]  # Literal[("a", "b")] is Literal["a", "b"]
"""A goal's kind of mission: single, serial, parallel, chat or clarify (the kit's `ACTION_TYPES`, one list)."""
INDEPENDENT_GOALS = "independent goals"
"""What a cross-domain task file's `source` says when its goals were generated independent of each other on
purpose (`shiftbox tasks generate-cross --independent`): the validator then only warns that its tasks have no
cross-domain dependency."""
MISSION_TYPES: tuple[str, ...] = ("single", "serial", "parallel", "serial+parallel", "chat", "clarify")
MissionType = Literal[MISSION_TYPES]  # Literal[("a", "b")] is Literal["a", "b"]
"""A goal's mission type (Multi-Mission Tool Bench's, its multi-call missions split by call structure): stated by the
task (`GoalShifts.mission_types`) or derived by path evaluation (`shiftbox.metrics.mission_type`)."""
MMTB_TYPES: tuple[str, ...] = ("single", "multiple", "clarify", "chat")
"""Multi-Mission Tool Bench's four mission types (its 单 多 反 拒), in the order its prefix table lists them: one tool
call, several, ask for a missing detail first, answer without a tool. Its switching analysis reads a task's goals as a
sequence of these; path evaluation (`shiftbox.metrics`) names them so too."""
MMTBType = Literal[MMTB_TYPES]  # Literal[("a", "b")] is Literal["a", "b"]
MMTB_TYPE_OF: dict[str, MMTBType] = {"single": "single", "serial": "multiple", "parallel": "multiple",
                                     "serial+parallel": "multiple", "clarify": "clarify", "chat": "chat"}
"""A shiftbox action type (or path evaluation's mission type) -> its MMTB mission type: the one rule."""
RelationType = Literal["none", "previous", "long_term"]
"""How a goal relates to the earlier ones: no gold call of it depends on theirs, one depends on the goal just before,
or on one further back (docs/metrics.md)."""
NOTES_ACTION_TYPES = "action types: "
"""Where task files written before `GoalShifts.action_types` existed record the types: at the end of
`description.notes`, `action types: goal=type, goal=type` (the generator's files, v2 and cross-domain v1)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


ExpectedError = Literal["not_found", "precondition_failed", "conflict", "invalid_arguments"]
"""Error kinds a gold call may be expected to fail with: the domain's own answers to a request, never a
transport or capacity failure."""


class ToolCallSpec(_Model):
    """A tool call named in a task (a gold action alternative or an initial-state edit)."""

    function_name: str
    params: dict[str, Any] = Field(default_factory=dict)
    expected_error: ExpectedError | None = Field(
        None, description="the error kind this call is expected to fail with: a reference scenario may make a "
                          "gold call fail on purpose (the user gives a wrong email first); None: it must succeed. "
                          "Only a call that fails with this kind does the action")

    @model_serializer(mode="wrap")
    def _omit_no_expected_error(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Files without expectations stay as they were: `expected_error` is written only when set."""
        data = handler(self)
        if self.expected_error is None:
            data.pop("expected_error", None)
        return data

    def outcome_matches(self, is_error: bool, error_kind: str | None = None) -> bool:
        """A call's outcome is the one this spec expects: success, or a failure of the expected kind (a
        failure whose kind is unknown, e.g. from a reference results file, counts as any kind)."""
        if self.expected_error is None:
            return not is_error
        return is_error and error_kind in (None, "unknown", self.expected_error)


class ActionSet(_Model):
    """One thing the agent must do: any one of `allowed_tools`, for `goal`, after `depends_on`."""

    action_id: str
    goal: str | None = Field(None, description="the goal of the sequence this action serves")
    allowed_tools: list[ToolCallSpec]
    depends_on: list[str] = Field(default_factory=list)
    required_parameters: list[str] | None = Field(
        None, description="params that must match; None means every param given in allowed_tools")


class GoalShifts(_Model):
    required_shifts: int
    goals: list[str]
    action_types: dict[str, ActionType] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="goal -> its action type (single, serial, parallel, chat or clarify), as the generator built its "
                    "mission; path evaluation's mission type takes chat and clarify from it. Files that record the "
                    "types in their notes instead are read as if they were here (`action_types_from_notes`); written "
                    "only when set")
    mission_types: dict[str, MissionType] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="goal -> its mission type as the source benchmark annotates it (an MMTB import: its own type, "
                    "serial+parallel too, which action_types cannot say); path evaluation reads it before deriving "
                    "one; written only when set")
    relations: dict[str, RelationType] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="goal -> how it relates to the earlier goals, when the task says so (a per-mission task, whose "
                    "earlier goals' action sets are gone); path evaluation derives it from the dependencies of the "
                    "goals without one; written only when set")


def action_types_from_notes(notes: str | None) -> dict[str, ActionType]:
    """The migration of the old form: goal -> action type as `NOTES_ACTION_TYPES` records it in the notes (items that
    are no `goal=type` with a known type are left out); {} when the notes do not record them."""
    found = re.search(rf"{NOTES_ACTION_TYPES}(.*)$", notes or "")
    if not found:
        return {}
    items = (item.split("=", 1) for item in found.group(1).split(", "))
    return {pair[0]: pair[1] for pair in items if len(pair) == 2 and pair[1] in ACTION_TYPES}


def action_types_note(action_types: dict[str, str]) -> str:
    """The old form of the types, for notes (`action_types_from_notes` reads it back)."""
    return NOTES_ACTION_TYPES + ", ".join(f"{goal}={kind}" for goal, kind in action_types.items())


class Instructions(_Model):
    reason_for_call: str
    known_info: str = ""
    unknown_info: str = ""
    task_instructions: str = ""


class UserScenario(_Model):
    persona: str | None = None
    instructions: Instructions
    goal_shifts: GoalShifts


class GoldTurn(_Model):
    """One earlier goal's gold exchange, played before the live conversation (the per-mission protocol): the user's
    request, the gold calls made on the episode (one assistant message per dependency level, parallel calls
    together) and the agent's gold answer."""

    goal: str
    request: str
    calls: list[list[ToolCallSpec]] = Field(default_factory=list)
    answer: str
    mmtb_type: MMTBType | None = Field(
        None, exclude_if=lambda v: v is None,
        description="the goal's MMTB mission type in the whole task: the live goal's full type prefix for MMTB's "
                    "switching table; None when unknown (the live goal is then left out of that table)")


class InitialState(_Model):
    """Applied to the episode before the conversation; never shown to the agent as its own calls."""

    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    data: dict[str, Any] | None = Field(None, description="reference initialization data, kept verbatim")
    gold_dialogue: list[GoldTurn] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="the gold conversation of the earlier goals, played on the episode (real tool results) and "
                    "shown to the agent before the live goal starts (`shiftbox run --protocol per-mission` makes "
                    "it); its calls are recorded in `setup_calls`; written only when set")


class EvaluationCriteria(_Model):
    action_sets: list[ActionSet] = Field(default_factory=list)
    communicate_info: list[str] = Field(default_factory=list)
    communicate_info_by_goal: dict[str, list[str]] = Field(
        default_factory=dict,
        description="goal -> the communicate_info items the agent must say for that goal (an item may serve "
                    "several goals: said once, it counts for each); items listed under no goal belong to the task "
                    "as a whole, or to its goal when it has only one (`Task.communicate_info_for`)")
    nl_assertions: list[str] = Field(default_factory=list)
    rubric: list[str] = Field(
        default_factory=list, exclude_if=lambda v: not v,
        description="VitaBench-style rubric items: natural-language checks of the conversation and of the final "
                    "state as its tool results show it, judged over a sliding window of messages "
                    "(`shiftbox.metrics.rubric_score`); written only when set, so files without it are unchanged")
    expected_state_digest: str | None = Field(
        None, description="state digest after replaying the gold calls on a fresh episode")


class TaskDescription(_Model):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class Task(_Model):
    id: str
    domain: str
    description: TaskDescription = Field(default_factory=TaskDescription)
    user_scenario: UserScenario
    initial_state: InitialState = Field(default_factory=InitialState)
    evaluation_criteria: EvaluationCriteria = Field(default_factory=EvaluationCriteria)

    @model_validator(mode="after")
    def _action_types_from_notes(self) -> Task:
        """A task file from before the field: the types its notes record."""
        shifts = self.user_scenario.goal_shifts
        if not shifts.action_types:
            shifts.action_types = action_types_from_notes(self.description.notes)
        return self

    @model_serializer(mode="wrap")
    def _types_once(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The field is left out when the notes already record the same types, so files from before it are written
        back byte-identical (and their digest, `runs.task_file_digest`, is unchanged)."""
        data = handler(self)
        shifts = data.get("user_scenario", {}).get("goal_shifts", {})
        if "action_types" in shifts and self.action_types == action_types_from_notes(self.description.notes):
            del shifts["action_types"]
        return data

    @property
    def goals(self) -> list[str]:
        return self.user_scenario.goal_shifts.goals

    @property
    def action_types(self) -> dict[str, ActionType]:
        """Goal -> action type (`GoalShifts.action_types`); {} for a task that records none (hand-written, imported)."""
        return self.user_scenario.goal_shifts.action_types

    def mmtb_types(self) -> tuple[MMTBType, ...] | None:
        """The goals' MMTB mission types in order (`MMTB_TYPE_OF` of each action type); None when a goal has none."""
        types = self.action_types
        if not all(g in types for g in self.goals):
            return None
        return tuple(MMTB_TYPE_OF[types[g]] for g in self.goals)

    def action_sets_for(self, goal: str) -> list[ActionSet]:
        return [a for a in self.evaluation_criteria.action_sets if a.goal == goal]

    def communicate_info_for(self, goal: str) -> list[str]:
        """The communicate_info items attributed to `goal`: those `communicate_info_by_goal` lists under it
        (and in communicate_info); for a task with one goal, every item not attributed to another goal."""
        criteria = self.evaluation_criteria
        if goal not in self.goals:
            return []
        listed = criteria.communicate_info_by_goal
        mine = set(listed.get(goal, ()))
        if self.goals == [goal]:
            elsewhere = {item for g, items in listed.items() if g != goal for item in items}
            return [item for item in criteria.communicate_info if item in mine or item not in elsewhere]
        return [item for item in criteria.communicate_info if item in mine]

    def cross_domain_dependencies(self) -> list[tuple[str, str]]:
        """(action id, the action of another domain it depends on): a call that needs a value the agent can
        only read in the other domain. An action's domain is that of its tools' namespaced names."""
        sets = self.evaluation_criteria.action_sets
        domains = {a.action_id: {domain_of(t.function_name) for t in a.allowed_tools} for a in sets}
        return [(a.action_id, dep) for a in sets for dep in a.depends_on
                if dep in domains and domains[dep] and domains[a.action_id] and None not in domains[dep]
                and domains[dep].isdisjoint(domains[a.action_id])]

    def unchecked_goals(self) -> list[str]:
        """Goals nothing deterministic measures (no action set tagged with them, no communicate_info attributed
        to them): only an NL assertion, if any, speaks for them, so without a judge they cost nothing."""
        return [g for g in dict.fromkeys(self.goals) if not self.action_sets_for(g) and not self.communicate_info_for(g)]


class TaskFile(_Model):
    """A native task file: tasks plus where they came from and which snapshot they are written for."""

    schema_version: int = TASK_FILE_SCHEMA_VERSION
    domain: str
    snapshot: str | None = Field(None, description="snapshot id the task ids refer to, e.g. banking/acb-v1")
    source: str = Field(description="e.g. 'agentchangebench banking/tasks.json' or 'generator v2 seed=7'")
    toolset: str | None = Field(
        None, exclude_if=lambda v: v is None,
        description="the tool set the tasks are written for (a reference import: the domain's copy of the "
                    "reference's tool contract, e.g. agentchangebench); runs, validation and gold recording use "
                    "it unless told otherwise. None: the domain's default tools; written only when set")
    tasks: list[Task]

    def toolset_for(self, requested: str | None = None) -> str:
        """The tool set to serve these tasks with: the one asked for, else the file's own, else the default."""
        return requested or self.toolset or DEFAULT_TOOLSET
