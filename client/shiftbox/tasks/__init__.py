"""Tasks: the model, loading native and AgentChangeBench task files, validation."""

from ._matching import action_matches, satisfied_actions, spec_matches
from ._model import (
    TASK_FILE_SCHEMA_VERSION,
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

__all__ = [
    "TASK_FILE_SCHEMA_VERSION", "ActionSet", "EvaluationCriteria", "GoalShifts", "InitialState",
    "Instructions", "Task", "action_matches", "satisfied_actions", "spec_matches", "TaskDescription", "TaskFile", "ToolCallSpec", "UserScenario",
]
