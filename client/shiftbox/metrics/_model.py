"""Metric results: per simulation, and aggregated over a run (what `shiftbox metrics --json` prints).

Every aggregate carries its count; a value that could not be computed is None with a reason, never
silently dropped.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .._usage import Usage
from ..tasks import MissionType, MMTBType, RelationType

MetricsMode = Literal["shiftbox", "agentchangebench"]
Turns = float | Literal["never"] | None
"""A GSRT stage statistic in agent turns: "never" when it lands on a stage never reached, None without shifts."""


class TSRScore(BaseModel):
    """Task success with partial credit; channels are None when the task lacks them or they were not judged."""

    score: float | None
    communicate_info: float | None = None
    action: float | None = None
    nl_assertion: float | None = None
    nl_status: Literal["judged", "not_judged", "absent"] = "absent"
    state_match: bool | None = Field(None, description="final digest == expected digest; None if not measured")
    unscored_goals: list[str] = Field(
        default_factory=list, description="goals no check measured (no action set or communicate_info of theirs, "
                                          "no judged NL assertion): score is None and the simulation never a success")


class TUEScore(BaseModel):
    calls: int
    executed: int = Field(description="calls that ran without error (T's numerator)")
    schema_valid: int | None = Field(description="calls whose arguments satisfy the tool's input schema (P's numerator)")
    t: float | None
    p: float | None
    tue: float | None


class TCRRScore(BaseModel):
    calls: int
    redundant: int
    window: int = Field(description="redundant by the window rule")
    batch: int = Field(description="redundant by the batch rule only")
    ratio: float | None
    state_aware_redundant: int | None = None
    state_aware_ratio: float | None = None


class ShiftRecovery(BaseModel):
    """GSRT stages for one shift, in agent turns after the shift message (None = never reached)."""

    shift_index: int
    from_goal: str
    to_goal: str
    message_index: int
    ack: int | None
    tool: int | None
    outcome: int | None
    outcome_measured: bool = True
    outcome_before_shift: bool = Field(
        False, description="every action set of the new goal was already met before the shift: nothing to time")
    recovered: bool
    transferred: bool
    crossed_domains: bool | None = Field(
        None, exclude_if=lambda v: v is None,
        description="a cross-domain conversation's shift: whether it moved to another domain's goal; absent in "
                    "single-domain conversations")


class ShiftReportScore(BaseModel):
    """The agent's own shift reports (log_shift_event) against the ground-truth shifts of one simulation."""

    shifts: int
    reports: int
    matched: int = Field(description="shifts with a matching report (the first report after the shift, before "
                                     "the next)")
    precision: float | None = Field(description="matched / reports; None without reports")
    recall: float | None = Field(description="matched / shifts; None without shifts")
    delays: list[int] = Field(default_factory=list, description="messages from each matched shift to its report")


class ShiftReportAggregate(BaseModel):
    """Shift reports pooled over the simulations whose agent was offered log_shift_event."""

    simulations: int
    shifts: int
    reports: int
    matched: int
    precision: float | None
    recall: float | None
    median_delay: float | None = Field(None, description="median messages from a shift to its matching report")


class RubricItemVerdict(BaseModel):
    """One rubric item of a task: its verdict after the last window, the window that last set it, and the judge's
    notes (VitaBench: the evidence carried from window to window)."""

    item: str
    met: bool | None = Field(description="None when the rubric was not judged")
    window: int | None = Field(None, description="the window (0-based, into RubricScore.windows) whose answer last "
                                                 "changed the item's verdict; None when no window changed it")
    messages: tuple[int, int] | None = Field(None, description="first and last message index of that window")
    reason: str = Field("", description="the judge's notes on the item after the last window it was asked about")
    trail: list[bool] = Field(default_factory=list, description="the item's verdict after each window asked, in order "
                                                                "(a met item may go back to false)")


class RubricScore(BaseModel):
    """A task's rubric judged window by window as VitaBench's evaluator does: every window is shown every item with
    its verdict and notes so far, and may set or take back any of them; the verdicts after the last window count.
    A run ended early (step limit, too many tool errors, an agent error) scores 0 without judging.
    `success` = every item met; None when not judged."""

    status: Literal["judged", "not_judged", "ended_early"]
    ended_by: str | None = Field(None, exclude_if=lambda v: v is None,
                                 description="the termination reason of a run ended early (status ended_early)")
    window_size: int = Field(description="messages per window")
    stride: int = Field(description="messages from one window's start to the next one's")
    windows: list[tuple[int, int]] = Field(description="first and last message index of every window")
    judged_windows: int = Field(description="windows the judge was asked about (all of them when judged; none when "
                                            "the run ended early)")
    items: list[RubricItemVerdict]
    success: bool | None
    usage: Usage = Field(default_factory=Usage, description="the judge's tokens and cost for this rubric")


class RubricAggregate(BaseModel):
    """Rubric results pooled over the scored simulations whose task has rubric items (VitaBench): the pass rate,
    and pass^k, pass@k and avg@k of rubric success per task."""

    simulations: int
    judged: int
    ended_early: int = Field(0, description="simulations ended early: failed without judging (VitaBench's reward 0)")
    passed: int = Field(description="judged simulations with every item met")
    pass_rate: float | None = Field(description="passed / (judged + ended_early); None when there are none")
    items: int = Field(description="rubric items of the judged simulations")
    items_met: int
    item_rate: float | None = Field(description="items_met / items")
    pass_hat_k: dict[int, float] = Field(default_factory=dict, description="rubric success: every one of k trials "
                                                                           "of a task passes, averaged over tasks")
    pass_at_k: dict[int, float] = Field(default_factory=dict, description="at least one of k trials passes")
    avg_at_k: dict[int, float] = Field(default_factory=dict, description="a task's share of passing trials, "
                                                                         "averaged over tasks")


PathError = Literal["wrong_tool", "wrong_arguments", "missing_call", "extra_call", "wrong_order", "premature_call",
                    "tool_for_chat"]
"""The error classes of the lenient goal walk, in the order reports list them (docs/metrics.md)."""
PATH_ERRORS: tuple[str, ...] = ("wrong_tool", "wrong_arguments", "missing_call", "extra_call", "wrong_order",
                                "premature_call", "tool_for_chat")


class GoalPath(BaseModel):
    """shiftbox's lenient goal walk of one goal (not MMTB's path evaluation): how the agent's calls while the goal was
    current walked the goal's valid execution paths."""

    goal: str
    position: int = Field(description="the goal's place in the task's sequence, from 1")
    mission_type: MissionType
    reached: bool = Field(description="the user raised the goal; a goal never reached is not evaluated")
    action_sets: int = Field(description="the goal's gold action sets")
    done_before: int = Field(0, description="action sets already met by calls before the goal began")
    matched: int = Field(0, description="action sets met in a valid order (those done before included)")
    progress: float | None = Field(None, description="matched / action_sets: accomplished progress on the best "
                                                     "surviving path; None without action sets")
    steps: int = Field(0, description="agent turns with tool calls while the goal was current")
    fewest_steps: int = Field(0, description="steps of an optimal path for the action sets not done before")
    valid_order: bool = Field(True, description="no successful call before a call it depends on")
    completed: bool = Field(False, description="every action set met in a valid order")
    success: bool = Field(False, description="completed, valid order, no premature call, no tool for a chat goal")
    optimal: bool = Field(False, description="success in the fewest steps with no other call")
    errors: list[PathError] = Field(default_factory=list)


CallStructure = Literal["serial", "parallel", "serial+parallel"]
MissionEnding = Literal["answered", "unmatched_call", "text_instead_of_call", "empty_reply", "unfinished"]


class MissionVerdict(BaseModel):
    """Multi-Mission Tool Bench's verdict on one goal of a simulation (its decision tree and argument check)."""

    goal: str
    position: int = Field(description="the goal's place in the task's sequence, from 1")
    mission_type: MMTBType
    structure: CallStructure | None = Field(None, description="MMTB's multi-call class of the gold calls; None for "
                                                               "one call or none")
    relation: RelationType = "none"
    earlier_types: list[MMTBType] | None = Field(
        None, exclude_if=lambda v: v is None,
        description="the types of the goals before it that its simulation does not score (a per-mission run: the "
                    "gold dialogue's), so its type prefix is theirs then its simulation's; absent in a live run")
    reached: bool = Field(description="the user raised the goal; a goal never reached is not evaluated")
    gold_steps: int = Field(description="the gold steps: calls, the question on a clarify goal, the final answer")
    steps: int = Field(0, description="agent steps matched, the final answer included")
    fewest_steps: int = Field(0, description="steps of the shortest valid walk")
    matched: int = Field(0, description="gold steps matched before the first mismatch (progress's numerator)")
    ending: MissionEnding = Field("unfinished", description="the final answer, or what ended the walk")
    arguments_pass: bool | None = Field(None, description="every matched call scores 0.7 or more; None when the walk "
                                                          "did not reach the answer")
    success: bool = Field(False, description="MMTB's accuracy: the walk reached the answer and the arguments pass")
    optimal: bool = Field(False, description="success in the fewest steps")


class MissionSlice(BaseModel):
    """MMTB path accuracy over the goals of one slice (a type, a position, a type prefix, a relation)."""

    goals: int
    correct: int
    accuracy: float | None = Field(description="correct / goals; None without goals")


class MissionAggregate(BaseModel):
    """Multi-Mission Tool Bench's path evaluation over a run's scored simulations (reached goals), as its evaluator
    reports it."""

    goals: int
    not_reached: int = Field(0, description="goals the conversation ended before (not evaluated)")
    accuracy: float | None = Field(description="path accuracy: goals whose walk reached the answer with passing "
                                               "arguments / goals")
    optimal: float | None = Field(description="optimal path rate: optimal goals / goals whose gold calls are "
                                              "parallel or serial+parallel")
    optimal_goals: int = Field(0, description="goals whose gold calls are parallel or serial+parallel")
    optimal_by_structure: dict[str, float | None] = Field(default_factory=dict)
    progress: float | None = Field(description="accomplished progress: gold steps matched / gold steps, pooled over "
                                               "the goals whose gold calls are serial or serial+parallel")
    progress_goals: int = 0
    progress_by_structure: dict[str, float | None] = Field(default_factory=dict)
    endings: dict[str, int] = Field(default_factory=dict, description="how the walks ended -> goals")
    argument_failures: int = Field(0, description="walks that reached the answer but failed the argument check")
    by_type: dict[str, MissionSlice] = Field(default_factory=dict, description="MMTB mission type -> slice")
    by_position: dict[str, MissionSlice] = Field(default_factory=dict, description="\"1\" ... \"4\"")
    by_type_and_position: dict[str, dict[str, MissionSlice]] = Field(default_factory=dict)
    by_structure: dict[str, MissionSlice] = Field(default_factory=dict, description="parallel, serial, "
                                                                                    "serial+parallel -> slice")
    by_relation: dict[str, MissionSlice] = Field(default_factory=dict)
    prefixes: dict[str, MissionSlice] = Field(
        default_factory=dict, description="every full prefix of MMTB mission types up to 4 (4 + 16 + 64 + 256 cells, "
                                          "\"single->chat\"): accuracy of the goals at that place after those types")
    layer_variance: dict[str, float | None] = Field(
        default_factory=dict, description="prefix length L -> sample variance, over the prefixes of length L, of the "
                                          "accuracy of the goal that follows each; None with fewer than two")


class GraphRefusalScore(BaseModel):
    """One simulation's calls refused by the dependency graph (the `--graph-refusal` option, a shiftbox addition)."""

    calls: int
    refused: int = Field(description="calls refused as precondition_failed by the dependency graph")
    share: float | None = Field(description="refused / calls; None without calls")


class GraphRefusalAggregate(BaseModel):
    """Graph refusals pooled over the calls of the simulations whose server enforced the dependency graph."""

    simulations: int
    calls: int
    refused: int
    share: float | None = Field(description="refused / calls, pooled; None without calls")


class SimulationMetrics(BaseModel):
    simulation_id: str
    task_id: str
    trial: int
    domain: str
    persona: str | None
    agent: str
    termination: str
    scored: bool = Field(description="False when the simulation failed for a reason not the agent's")
    tsr: TSRScore
    tue: TUEScore
    tcrr: TCRRScore
    gsrt: list[ShiftRecovery]
    gsrt_judged: bool | None = Field(
        None, exclude_if=lambda v: v is None,
        description="compat mode only: whether the GSRT judge's output exists for this simulation (stored, or asked "
                    "with --judge); False = not judged, so its empty gsrt is no finding")
    success: bool | None = Field(None, description="TSR >= the success threshold")
    shift_reports: ShiftReportScore | None = Field(
        None, exclude_if=lambda v: v is None, description="only when the agent was offered log_shift_event")
    rubric: RubricScore | None = Field(
        None, exclude_if=lambda v: v is None, description="only when the task has rubric items")
    paths: list[MissionVerdict] = Field(default_factory=list,
                                        description="MMTB path evaluation of each goal, in order")
    goal_walks: list[GoalPath] = Field(default_factory=list,
                                       description="shiftbox's lenient goal walk of each goal, in order")
    graph_refusals: GraphRefusalScore | None = Field(
        None, exclude_if=lambda v: v is None, description="only when the server enforced the dependency graph")
    usage: dict[str, Usage] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="LLM tokens and cost per role (agent, user) as the trajectory recorded them; absent without LLMs")


class TSRAggregate(BaseModel):
    n: int
    mean: float | None
    communicate_info: float | None
    action: float | None
    nl_assertion: float | None
    nl_judged: int = 0
    unscored: int = Field(0, description="simulations with a goal nothing measured (no TSR, never a success)")
    state_match: float | None = None
    state_match_n: int = 0


class TUEAggregate(BaseModel):
    calls: int
    t: float | None
    p: float | None
    tue: float | None
    mean_per_simulation: float | None = None


class TCRRAggregate(BaseModel):
    calls: int
    redundant: int
    window: int
    batch: int
    pooled: float | None
    mean: float | None
    state_aware_pooled: float | None = None


class GSRTAggregate(BaseModel):
    shifts: int
    recovery_rate: float | None
    transfer_rate: float | None
    median_ack: Turns
    median_tool: Turns
    median_outcome: Turns
    p90_ack: Turns = None
    p90_tool: Turns = None
    p90_outcome: Turns = None
    never_ack: float | None = Field(None, description="share of shifts never acknowledged")
    never_tool: float | None = None
    never_outcome: float | None = Field(None, description="share of the shifts whose outcome is measured")
    outcome_not_measured: int = Field(0, description="shifts to a goal without action sets, or whose sets were all "
                                                     "met before the shift")


class PathSlice(BaseModel):
    """The lenient goal walk over the reached goals of one slice (a mission type, a position, a transition)."""

    goals: int
    success: float | None = Field(description="accuracy: share of goals whose path succeeded")
    optimal: float | None = Field(description="share of goals done on an optimal path")
    progress: float | None = Field(description="mean accomplished progress of the goals with action sets")


class PathAggregate(BaseModel):
    """shiftbox's lenient goal walk over a run's scored simulations (reached goals); MMTB's is `MissionAggregate`."""

    goals: int
    not_reached: int = Field(0, description="goals the conversation ended before (not evaluated)")
    success: float | None = Field(description="accuracy: share of goals whose path succeeded")
    valid_order: float | None
    optimal: float | None = Field(description="optimal-path rate")
    progress: float | None = Field(description="mean accomplished progress of the goals with action sets")
    errors: dict[str, int] = Field(default_factory=dict, description="error class -> goals with it")
    by_mission_type: dict[str, PathSlice] = Field(default_factory=dict)
    by_position: dict[str, PathSlice] = Field(default_factory=dict, description="\"1\" ... \"4\": place in the sequence")
    by_type_and_position: dict[str, dict[str, PathSlice]] = Field(
        default_factory=dict, description="mission type -> position -> slice")
    by_transition: dict[str, PathSlice] = Field(
        default_factory=dict, description="\"serial->chat\": the mission types of two consecutive goals -> the second "
                                          "goal's slice")


class Breakdown(BaseModel):
    """The headline figures for one slice (a domain, a persona, a goal pair), defined as the headline's:
    TSR the mean over simulations, TUE and TCRR pooled over calls."""

    simulations: int
    tsr: float | None
    tue: float | None = Field(description="pooled over the slice's calls, as the headline TUE")
    tcrr: float | None = Field(description="pooled over the slice's calls, as the headline TCRR")
    gsrt: GSRTAggregate


class Interval(BaseModel):
    """A 95% bootstrap confidence interval (percentile method), seeded so reruns print the same one."""

    low: float
    high: float


class RunMetrics(BaseModel):
    """One agent's metrics over a run (headlines are never pooled across agents)."""

    mode: MetricsMode
    agent: str | None = Field(None, description="the agent scored; None for a compat-mode file of several")
    simulations: int
    scored_simulations: int
    excluded: dict[str, int] = Field(default_factory=dict, description="termination reason -> unscored count")
    tool_calls: int
    tsr: TSRAggregate
    tue: TUEAggregate
    tcrr: TCRRAggregate
    gsrt: GSRTAggregate
    other_headlines: dict[str, float | None] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="metric -> pooled value of the registered headline metrics without a field of their own "
                    "(shiftbox.metrics.register_metric); absent without them")
    shift_reports: ShiftReportAggregate | None = Field(
        None, exclude_if=lambda v: v is None,
        description="the agent's own shift reports against the ground truth; only with the parity tool set")
    rubric: RubricAggregate | None = Field(
        None, exclude_if=lambda v: v is None, description="VitaBench rubric pass rate; only when a task has rubric items")
    graph_refusals: GraphRefusalAggregate | None = Field(
        None, exclude_if=lambda v: v is None,
        description="share of calls the dependency graph refused; only with --graph-refusal (a shiftbox option, not VitaBench's)")
    success_threshold: float = 1.0
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    avg_at_k: dict[int, float] = Field(default_factory=dict)
    by_domain: dict[str, Breakdown] = Field(default_factory=dict)
    by_persona: dict[str, Breakdown] = Field(default_factory=dict)
    by_goal_pair: dict[str, Breakdown] = Field(default_factory=dict)
    by_agent: dict[str, Breakdown] = Field(default_factory=dict, description="compat mode only")
    by_domain_crossing: dict[str, Breakdown] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="cross-domain conversations' shifts, 'crossed' (to another domain's goal) or 'same_domain': GSRT "
                    "over those shifts, the other figures over the simulations with such a shift; absent without "
                    "cross-domain simulations")
    paths: MissionAggregate | None = Field(
        None, exclude_if=lambda v: v is None,
        description="Multi-Mission Tool Bench path evaluation and its reports (default definitions only)")
    goal_walks: PathAggregate | None = Field(
        None, exclude_if=lambda v: v is None,
        description="shiftbox's lenient goal walk over the live conversation (default definitions only)")
    intervals: dict[str, Interval] = Field(
        default_factory=dict, description="metric -> 95% bootstrap interval over tasks (each "
                                          "headline metric: tsr, tue, tcrr, recovery, ...; pass^k)")
    bootstrap: dict[str, int] = Field(default_factory=dict, description="resamples and seed of the intervals")
    rerun_agreement: float | None = Field(
        None, description="share of tasks whose trials all end the same way (success or not); None with one trial")
    rerun_agreement_n: int = Field(0, description="tasks with two trials or more")
    judge: dict | None = Field(None, description="judge name and its token use and cost (apart from agent and user)")
    usage: dict[str, Usage] = Field(
        default_factory=dict, exclude_if=lambda v: not v,
        description="LLM tokens and cost per role (agent, user, judge), summed over every simulation, scored or not "
                    "(a failed simulation's calls cost too); absent when no LLM was called")
    notes: list[str] = Field(default_factory=list, description="what was not measured, and why")


class AgentScores(BaseModel):
    """One agent's run metrics with the per-simulation scores behind them."""

    agent: str
    metrics: RunMetrics
    simulations: list[SimulationMetrics]
