"""Tasks: the model, loading native and AgentChangeBench task files, validation and stats (generation: `shiftbox.generation`)."""

from ._import_acb import assign_goals, import_agentchangebench
from ._load import load_task_file
from ._matching import (
    action_matches,
    canonical_value,
    params_match,
    satisfied_actions,
    spec_matches,
)
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
from ._stats import render_stats, task_stats
from ._validate import Finding, validate_tasks

__all__ = [
    "TASK_FILE_SCHEMA_VERSION", "ActionSet", "EvaluationCriteria", "Finding", "GoalShifts", "InitialState",
    "Instructions", "Task", "TaskDescription", "TaskFile", "ToolCallSpec", "UserScenario", "action_matches", "canonical_value", "params_match",
    "assign_goals", "import_agentchangebench", "load_task_file", "render_stats", "satisfied_actions",
    "spec_matches", "task_stats", "validate_tasks",
]
