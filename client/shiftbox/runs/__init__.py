"""Runs: plan and execute an evaluation into a run directory, read run directories back, score and compare them.

Names load with their module on first use (`shiftbox._lazy`): planning and running a live evaluation never imports
the metrics, reports and comparisons that only scoring and comparing need.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_MODULES: dict[str, tuple[str, ...]] = {  # module -> the names this package exports from it
    "..errors": ("RecordWriteError", "RunDirError", "RunPlanError", "RunWorkerError"),
    "._compare": ("ComparedRuns", "compare_run_dirs"),
    "._config": ("AGENT_POLICIES", "EXECUTORS", "ExecutionOptions", "Executor", "ExternalAgent", "RunConfig",
        "RunMetadata", "default_workers", "selected_tasks", "task_file_digest"),
    "._evaluate": ("RunResult", "run_evaluation", "run_evaluation_async", "run_sync"),
    "._execute": ("execute_run",),
    "._files": ("RUN_FILE", "TASKS_FILE", "prepare_run_dir", "read_run_metadata", "run_dirs"),
    "._one": ("simulate_one",),
    "._per_mission": ("RunProtocol", "mission_tasks"),
    "._plan": ("RunPlan", "check_graph_mode", "check_server_mode", "check_snapshots", "plan_run"),
    "._preflight": ("preflight_run",),
    "._ray": ("stop_kept_actors",),
    "._record": ("CASSETTES", "FIXTURE_FILE", "TRANSCRIPTS", "FixtureInfo", "fixture_file_name", "read_fixture_info",
        "recorded_snapshot_dirs", "transcript_calls"),
    "._reports": ("write_comparison_report", "write_html_report"),
    "._score": ("COMPAT_MODES", "RunScores", "make_judge", "measure_run", "metrics_document", "score_run",
        "score_trajectories"),
    "._simulations": ("RunHooks",),
    "._summary": ("NotScored", "RunSummary", "summarize_run"),
}
__getattr__, __dir__ = lazy_exports(__name__, {name: module for module, names in _MODULES.items() for name in names})

__all__ = [
    "CASSETTES", "COMPAT_MODES", "EXECUTORS", "Executor", "FIXTURE_FILE", "TRANSCRIPTS", "FixtureInfo", "read_fixture_info",
    "AGENT_POLICIES", "fixture_file_name", "recorded_snapshot_dirs", "transcript_calls", "RUN_FILE", "TASKS_FILE", "ComparedRuns", "RunConfig", "RunDirError", "RunHooks",
    "ExecutionOptions", "ExternalAgent", "RunMetadata", "RunPlan", "RunPlanError", "RecordWriteError", "RunResult", "RunWorkerError", "default_workers", "compare_run_dirs",
    "execute_run", "preflight_run", "make_judge", "metrics_document", "plan_run", "prepare_run_dir",
    "read_run_metadata", "run_dirs", "run_evaluation", "run_evaluation_async", "run_sync",
    "RunScores", "measure_run", "score_run", "score_trajectories", "selected_tasks", "task_file_digest", "write_comparison_report", "write_html_report",
    "check_graph_mode", "check_server_mode", "check_snapshots",
    "simulate_one", "NotScored", "RunSummary", "summarize_run",
    "RunProtocol", "mission_tasks", "stop_kept_actors",
]
