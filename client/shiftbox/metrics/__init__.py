"""Metrics: TSR, TUE, TCRR, GSRT, the pass^k family and the VitaBench rubric, computed from saved trajectories."""

from ._aggregate import (
    aggregate,
    aggregate_gsrt,
    compute_run_metrics,
    score_by_agent,
    simulation_metrics,
    usage_by_role,
)
from ._catalog import (
    PASS_K,
    CatalogView,
    HeadlineMetric,
    headline_metrics,
    register_metric,
    unregister_metric,
)
from ._compare import Comparison, MetricDifference, compare
from ._goal_paths import goal_paths
from ._graph_refusals import graph_refusal_score
from ._gsrt import shift_windows
from ._judges import (
    RUBRIC_STRIDE,
    RUBRIC_WINDOW,
    DeterministicDetector,
    Judge,
    NLVerdicts,
    RubricState,
    judge_report,
)
from ._llm_judge import (
    ACK_SYSTEM_PROMPT,
    NL_SYSTEM_PROMPT,
    RUBRIC_SYSTEM_PROMPT,
    LLMJudge,
    extract_json_object,
    parse_acknowledges,
    parse_verdicts,
    render_transcript,
)
from ._missions import MISSION_TYPES, aggregate_paths, mission_type
from ._mmtb_aggregate import aggregate_missions, every_prefix
from ._mmtb_arguments import call_score, rouge_l
from ._mmtb_goals import MMTB_TYPES, mission_verdicts
from ._mmtb_walk import AgentStep, GoldCall, Mission, walk
from ._model import (
    PATH_ERRORS,
    AgentScores,
    Breakdown,
    GoalPath,
    GraphRefusalAggregate,
    GraphRefusalScore,
    GSRTAggregate,
    Interval,
    MissionAggregate,
    MissionSlice,
    MissionType,
    MissionVerdict,
    MMTBType,
    PathAggregate,
    PathError,
    PathSlice,
    RubricAggregate,
    RubricItemVerdict,
    RubricScore,
    RunMetrics,
    ShiftRecovery,
    ShiftReportAggregate,
    ShiftReportScore,
    SimulationMetrics,
    TCRRAggregate,
    TCRRScore,
    TSRAggregate,
    TSRScore,
    TUEAggregate,
    TUEScore,
    Turns,
)
from ._passk import pass_at_k, pass_family, pass_hat_k
from ._paths import ExecutionPath, execution_paths, fewest_steps, optimal_paths
from ._ratios import mean_of_present, ratio
from ._retention import Retention, retention
from ._rubric import rubric_score, rubric_windows
from ._shift_reports import shift_report_score
from ._tcrr import BATCH, WINDOW, redundancy_labels, tcrr_score
from ._tsr import WEIGHTS, action_score, tsr_score
from ._tue import P_WEIGHT, T_WEIGHT, TUE_FORMULA, tue_value
from ._uncertainty import MIN_INTERVAL_TASKS, interval_gap

__all__ = [
    "CatalogView", "HeadlineMetric", "PASS_K", "headline_metrics", "register_metric", "unregister_metric",
    "mean_of_present", "ratio", "MIN_INTERVAL_TASKS", "interval_gap", "usage_by_role",
    "ACK_SYSTEM_PROMPT", "NL_SYSTEM_PROMPT", "LLMJudge", "extract_json_object", "parse_acknowledges", "parse_verdicts", "render_transcript",
    "AgentScores", "Comparison", "Interval", "MetricDifference", "compare", "Turns", "score_by_agent",
    "BATCH", "WEIGHTS", "WINDOW", "Breakdown", "DeterministicDetector", "GSRTAggregate", "Judge", "judge_report",
    "NLVerdicts", "Retention", "RunMetrics", "ShiftRecovery", "ShiftReportAggregate", "ShiftReportScore",
    "shift_report_score", "SimulationMetrics", "TCRRAggregate", "TCRRScore",
    "TSRAggregate", "TSRScore", "TUEAggregate", "TUEScore", "action_score", "aggregate", "aggregate_gsrt",
    "compute_run_metrics", "pass_at_k",
    "pass_family", "pass_hat_k", "redundancy_labels", "retention", "simulation_metrics", "tcrr_score", "tsr_score",
    "GraphRefusalAggregate", "GraphRefusalScore", "graph_refusal_score",
    "P_WEIGHT", "T_WEIGHT", "TUE_FORMULA", "tue_value", "shift_windows",
    "RUBRIC_STRIDE", "RUBRIC_SYSTEM_PROMPT", "RUBRIC_WINDOW", "RubricAggregate", "RubricItemVerdict", "RubricScore",
    "RubricState", "rubric_score", "rubric_windows",
    "ExecutionPath", "GoalPath", "MISSION_TYPES", "MissionType", "PATH_ERRORS", "PathAggregate", "PathError",
    "PathSlice", "aggregate_paths", "execution_paths", "fewest_steps", "goal_paths",
    "mission_type", "optimal_paths",
    "AgentStep", "GoldCall", "MMTB_TYPES", "MMTBType", "Mission", "MissionAggregate", "MissionSlice", "MissionVerdict",
    "aggregate_missions", "call_score", "every_prefix", "mission_verdicts", "rouge_l", "walk",
]
