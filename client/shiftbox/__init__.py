"""shiftbox: reproducible goal-shift evaluation of MCP agents. The public API (docs/python.md):

    import shiftbox

    plan = shiftbox.plan_run("snapshots/banking/v1/tasks.json", "runs/mine", agent="scripted:oracle")
    result = shiftbox.run_evaluation(plan)
    metrics, per_simulation = shiftbox.score_run(result.out)

Names load on first use, so `import shiftbox` (and the pytest plugin, `shiftbox.pytest`) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

# name -> module that defines it: the one list of the public API (tests/client/test_public_api.py checks it)
_EXPORTS: dict[str, str] = {
    # tasks and trajectories
    "Task": "shiftbox.tasks", "TaskFile": "shiftbox.tasks", "load_task_file": "shiftbox.tasks",
    "Trajectory": "shiftbox.trajectory", "read_trajectories": "shiftbox.trajectory",
    # the plug-in parts: agents and user simulators
    "Agent": "shiftbox.agents", "AgentContext": "shiftbox.agents", "AgentReply": "shiftbox.agents",
    "UserSimulator": "shiftbox.users", "UserContext": "shiftbox.users", "UserReply": "shiftbox.users",
    "agent_from_spec": "shiftbox._registry", "user_from_spec": "shiftbox._registry",
    # running, replaying, scoring, comparing
    "RunConfig": "shiftbox.runs", "RunPlan": "shiftbox.runs", "ExecutionOptions": "shiftbox.runs",
    "ExternalAgent": "shiftbox.runs", "RunResult": "shiftbox.runs",
    "plan_run": "shiftbox.runs", "run_evaluation": "shiftbox.runs", "run_evaluation_async": "shiftbox.runs",
    "score_run": "shiftbox.runs", "compare_run_dirs": "shiftbox.runs", "write_html_report": "shiftbox.runs",
    "replay_fixture": "shiftbox.replay", "ReplayResult": "shiftbox.replay",
    "open_world": "shiftbox.world",
    # RL environments (docs/rl.md)
    "ShiftboxEnv": "shiftbox.rl",
    # metric results
    "RunMetrics": "shiftbox.metrics", "SimulationMetrics": "shiftbox.metrics", "AgentScores": "shiftbox.metrics",
    "Comparison": "shiftbox.metrics", "score_by_agent": "shiftbox.metrics",
    # errors
    "ShiftboxError": "shiftbox.errors", "SpecError": "shiftbox._registry", "RunPlanError": "shiftbox.errors",
    "RunDirError": "shiftbox.errors", "RunFileError": "shiftbox.errors", "RunWorkerError": "shiftbox.errors",
    "RecordWriteError": "shiftbox.errors", "OutputPathError": "shiftbox.errors", "InfrastructureError": "shiftbox.errors",
    "ToolContractError": "shiftbox.errors", "DockerError": "shiftbox.errors", "ReplayDivergence": "shiftbox.errors",
}

__all__ = [  # the keys of _EXPORTS, sorted
    "Agent", "AgentContext", "AgentReply", "AgentScores", "Comparison", "DockerError", "ExecutionOptions",
    "ExternalAgent", "InfrastructureError", "OutputPathError",
    "RecordWriteError", "ReplayDivergence", "ReplayResult", "RunConfig", "RunDirError", "RunFileError", "RunMetrics", "RunPlan",
    "RunPlanError", "RunResult", "RunWorkerError", "ShiftboxEnv", "ShiftboxError", "SimulationMetrics", "SpecError", "Task", "TaskFile",
    "ToolContractError", "Trajectory", "UserContext", "UserReply", "UserSimulator", "agent_from_spec",
    "compare_run_dirs", "load_task_file", "open_world", "plan_run", "read_trajectories", "replay_fixture",
    "run_evaluation", "run_evaluation_async", "score_by_agent", "score_run", "user_from_spec", "write_html_report",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:  # what type checkers and IDEs see; the same names as _EXPORTS
    from ._registry import SpecError, agent_from_spec, user_from_spec
    from .agents import Agent, AgentContext, AgentReply
    from .errors import (
        DockerError,
        InfrastructureError,
        OutputPathError,
        RecordWriteError,
        ReplayDivergence,
        RunDirError,
        RunFileError,
        RunPlanError,
        RunWorkerError,
        ShiftboxError,
        ToolContractError,
    )
    from .metrics import AgentScores, Comparison, RunMetrics, SimulationMetrics, score_by_agent
    from .replay import ReplayResult, replay_fixture
    from .rl import ShiftboxEnv
    from .runs import (
        ExecutionOptions,
        ExternalAgent,
        RunConfig,
        RunPlan,
        RunResult,
        compare_run_dirs,
        plan_run,
        run_evaluation,
        run_evaluation_async,
        score_run,
        write_html_report,
    )
    from .tasks import Task, TaskFile, load_task_file
    from .trajectory import Trajectory, read_trajectories
    from .users import UserContext, UserReply, UserSimulator
    from .world import open_world
