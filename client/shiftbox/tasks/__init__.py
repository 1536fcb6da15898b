"""Tasks: the model, loading native and AgentChangeBench task files, validation and stats (generation: `shiftbox.generation`).

Importing a reference task list with its gold outcomes, and everything else about AgentChangeBench runs, is
`shiftbox.agentchangebench`."""

from ._imported import import_domain_tasks, imported_task
from ._json import describe_errors, read_json
from ._load import load_task_file, task_file_from_json, task_file_json, write_task_file
from ._matching import (
    action_matches,
    canonical_value,
    params_match,
    satisfied_actions,
    spec_matches,
)
from ._model import (
    INDEPENDENT_GOALS,
    MISSION_TYPES,
    MMTB_TYPE_OF,
    MMTB_TYPES,
    NOTES_ACTION_TYPES,
    TASK_FILE_SCHEMA_VERSION,
    ActionSet,
    ActionType,
    EvaluationCriteria,
    GoalShifts,
    GoldTurn,
    InitialState,
    Instructions,
    MissionType,
    MMTBType,
    RelationType,
    Task,
    TaskDescription,
    TaskFile,
    ToolCallSpec,
    UserScenario,
    action_types_from_notes,
    action_types_note,
)
from ._reference import (
    REFERENCE_SNAPSHOTS,
    REFERENCE_TOOLSETS,
    assign_goals,
    domain_reference_toolset,
    is_reference_file,
    reference_task_file,
    reference_toolset,
    single_goal,
    tau2_format_ids,
)
from ._stats import render_stats, task_stats, type_sequence_coverage
from ._validate import (
    Finding,
    finding_order,
    is_reference_snapshot,
    record_gold_outcomes,
    repeated_task_ids,
    validate_tasks,
)

__all__ = [
    "INDEPENDENT_GOALS", "MISSION_TYPES", "MissionType", "MMTB_TYPE_OF", "MMTB_TYPES", "MMTBType", "RelationType", "NOTES_ACTION_TYPES", "TASK_FILE_SCHEMA_VERSION", "ActionSet", "ActionType",
    "action_types_from_notes", "action_types_note", "EvaluationCriteria", "Finding", "GoalShifts", "GoldTurn", "InitialState",
    "Instructions", "Task", "TaskDescription", "TaskFile", "ToolCallSpec", "UserScenario", "action_matches", "canonical_value", "params_match",
    "REFERENCE_SNAPSHOTS", "REFERENCE_TOOLSETS", "assign_goals", "domain_reference_toolset", "is_reference_file", "reference_task_file",
    "reference_toolset", "single_goal", "tau2_format_ids",
    "describe_errors", "finding_order", "import_domain_tasks", "imported_task", "is_reference_snapshot", "load_task_file", "task_file_from_json", "read_json",
    "record_gold_outcomes", "render_stats", "repeated_task_ids", "satisfied_actions",
    "spec_matches", "task_stats", "task_file_json", "type_sequence_coverage", "validate_tasks", "write_task_file",
]
