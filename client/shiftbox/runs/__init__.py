"""Runs: plan and execute an evaluation into a run directory, read run directories back, score and compare them."""

from ..errors import RecordWriteError, RunDirError, RunPlanError, RunWorkerError
from ._compare import ComparedRuns, compare_run_dirs
from ._config import (
    AGENT_POLICIES,
    EXECUTORS,
    ExecutionOptions,
    Executor,
    ExternalAgent,
    RunConfig,
    RunMetadata,
    default_workers,
    selected_tasks,
    task_file_digest,
)
from ._evaluate import RunResult, run_evaluation, run_evaluation_async
from ._execute import execute_run
from ._files import (
    RUN_FILE,
    TASKS_FILE,
    prepare_run_dir,
    read_run_metadata,
    run_dirs,
)
from ._one import simulate_one
from ._per_mission import RunProtocol, mission_tasks
from ._plan import RunPlan, check_server_mode, plan_run
from ._preflight import preflight_run
from ._record import (
    CASSETTES,
    FIXTURE_FILE,
    TRANSCRIPTS,
    FixtureInfo,
    fixture_file_name,
    read_fixture_info,
    recorded_snapshot_dirs,
    transcript_calls,
)
from ._reports import write_comparison_report, write_html_report
from ._score import (
    COMPAT_MODES,
    RunScores,
    make_judge,
    measure_run,
    metrics_document,
    score_run,
    score_trajectories,
)
from ._simulations import RunHooks
from ._summary import NotScored, RunSummary, summarize_run

__all__ = [
    "CASSETTES", "COMPAT_MODES", "EXECUTORS", "Executor", "FIXTURE_FILE", "TRANSCRIPTS", "FixtureInfo", "read_fixture_info",
    "AGENT_POLICIES", "fixture_file_name", "recorded_snapshot_dirs", "transcript_calls", "RUN_FILE", "TASKS_FILE", "ComparedRuns", "RunConfig", "RunDirError", "RunHooks",
    "ExecutionOptions", "ExternalAgent", "RunMetadata", "RunPlan", "RunPlanError", "RecordWriteError", "RunResult", "RunWorkerError", "default_workers", "compare_run_dirs",
    "execute_run", "preflight_run", "make_judge", "metrics_document", "plan_run", "prepare_run_dir",
    "read_run_metadata", "run_dirs", "run_evaluation", "run_evaluation_async",
    "RunScores", "measure_run", "score_run", "score_trajectories", "selected_tasks", "task_file_digest", "write_comparison_report", "write_html_report",
    "check_server_mode",
    "simulate_one", "NotScored", "RunSummary", "summarize_run",
    "RunProtocol", "mission_tasks",
]
