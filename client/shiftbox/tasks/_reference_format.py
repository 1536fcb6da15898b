"""The AgentChangeBench / tau2 task format as the reference files write it (read leniently: unknown keys are
ignored), before it is turned into native tasks."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator


class _Ref(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RefToolCall(_Ref):
    function_name: str
    params: dict[str, Any] | None = None


class RefActionSet(_Ref):
    action_id: str
    allowed_tools: list[RefToolCall]
    required_parameters: list[str] | None = None
    depends_on: list[str] | None = None


class RefAction(_Ref):
    action_id: str
    name: str
    arguments: dict[str, Any] | None = None


class RefInitAction(_Ref):
    model_config = ConfigDict(extra="allow")
    env_type: str
    func_name: str
    arguments: dict[str, Any] | None = None


class RefInitialState(_Ref):
    initialization_data: Any = None
    initialization_actions: list[RefInitAction] | None = None
    message_history: Any = None


class RefCriteria(_Ref):
    action_sets: list[RefActionSet] | None = None
    actions: list[RefAction] | None = None
    communicate_info: list[str] | None = None
    nl_assertions: list[str] | None = None


class RefInstructions(_Ref):
    domain: str | None = None
    reason_for_call: str | None = None
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str | None = None


class RefGoalShifts(_Ref):
    required_shifts: int
    goals: list[str]


class RefScenario(_Ref):
    persona: str | None = None
    instructions: RefInstructions
    goal_shifts: RefGoalShifts | None = Field(None, description="absent in tau2's own tasks")


class RefDescription(_Ref):
    purpose: str | None = None
    relevant_policies: str | None = None
    notes: str | None = None


class RefTask(_Ref):
    id: str
    description: RefDescription | None = None
    ticket: str | None = None
    user_scenario: RefScenario
    initial_state: RefInitialState | None = None
    evaluation_criteria: RefCriteria | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_string(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


REFERENCE_LIST = TypeAdapter(list[RefTask])
"""A reference task list: a JSON array of tasks."""
