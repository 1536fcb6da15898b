"""The one trajectory format (everything a simulation did), its file (trajectories.jsonl) and when each goal was current."""

from ._file import (
    TRAJECTORIES_FILE,
    RunFileError,
    TrajectoryWriter,
    describe_invalid,
    read_trajectories,
)
from ._model import (
    SHIFT_REPORT_TOOL,
    STOP_TOKENS,
    TRAJECTORY_SCHEMA_VERSION,
    GoalShift,
    Message,
    Role,
    ServerInfo,
    ShiftReport,
    Termination,
    TerminationReason,
    ToolCall,
    ToolCallRecord,
    Trajectory,
    UserSimulatorInfo,
    shift_reports_of,
)
from ._spans import GoalSpan, StackedRule, goal_spans

__all__ = [
    "SHIFT_REPORT_TOOL", "STOP_TOKENS", "TRAJECTORIES_FILE", "TRAJECTORY_SCHEMA_VERSION", "GoalShift", "GoalSpan",
    "Message",
    "Role", "RunFileError", "ServerInfo", "ShiftReport", "Termination", "TerminationReason", "ToolCall",
    "ToolCallRecord", "Trajectory", "TrajectoryWriter", "UserSimulatorInfo", "describe_invalid",
    "StackedRule", "goal_spans", "read_trajectories", "shift_reports_of",
]
