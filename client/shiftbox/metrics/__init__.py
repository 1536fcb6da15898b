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
from ._gsrt import shift_windows
from ._judges import (
    Judge,
    NLVerdicts,
    RubricState,
    judge_report,
)
from ._llm_judge import (
    LLMJudge,
    extract_json_object,
)
from ._missions import aggregate_paths, mission_type
from ._mmtb_aggregate import aggregate_missions
from ._mmtb_arguments import rouge_l
from ._mmtb_goals import mission_verdicts, relation_of
from ._mmtb_walk import AgentStep, GoldCall, Mission, walk
from ._model import (
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
from ._passk import pass_hat_k
from ._paths import ExecutionPath, execution_paths, fewest_steps, optimal_paths
from ._ratios import mean_of_present, ratio
from ._retention import Retention, retention
from ._tcrr import BATCH, WINDOW, redundancy_labels
from ._tsr import WEIGHTS
from ._tue import TUE_FORMULA, tue_value
from ._uncertainty import MIN_INTERVAL_TASKS, interval_gap

__all__ = [
    "CatalogView", "HeadlineMetric", "PASS_K", "headline_metrics", "register_metric", "unregister_metric",
    "mean_of_present", "ratio", "MIN_INTERVAL_TASKS", "interval_gap", "usage_by_role",
    "LLMJudge", "extract_json_object",
    "AgentScores", "Comparison", "Interval", "MetricDifference", "compare", "Turns", "score_by_agent",
    "BATCH", "WEIGHTS", "WINDOW", "Breakdown", "GSRTAggregate", "Judge", "judge_report",
    "NLVerdicts", "Retention", "RunMetrics", "ShiftRecovery", "ShiftReportAggregate", "ShiftReportScore",
    "SimulationMetrics", "TCRRAggregate", "TCRRScore",
    "TSRAggregate", "TSRScore", "TUEAggregate", "TUEScore", "aggregate", "aggregate_gsrt",
    "compute_run_metrics",
    "pass_hat_k", "redundancy_labels", "retention", "simulation_metrics",
    "GraphRefusalAggregate", "GraphRefusalScore",
    "TUE_FORMULA", "tue_value", "shift_windows",
    "RubricAggregate", "RubricItemVerdict", "RubricScore",
    "RubricState",
    "ExecutionPath", "GoalPath", "MissionType", "PathAggregate", "PathError",
    "PathSlice", "aggregate_paths", "execution_paths", "fewest_steps", "goal_paths",
    "optimal_paths",
    "AgentStep", "GoldCall", "MMTBType", "Mission", "MissionAggregate", "MissionSlice", "MissionVerdict",
    "aggregate_missions", "mission_type", "mission_verdicts", "relation_of", "rouge_l", "walk",
]
