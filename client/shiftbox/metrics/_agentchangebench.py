"""AgentChangeBench / tau2 recorded simulations: import them as trajectories, and score them the way
the AgentChangeBench code does (`--compat agentchangebench`).

Loading (`load_agentchangebench_simulations`)
---------------------------------------------
A results file is `{timestamp, info, tasks[], simulations[]}`. Tasks come from the file's own
`tasks[]`, converted by the task importer (`reference_task_file`); a task without `goal_shifts` (the
benchmark's older format, which the reference's task model allows) is read with no goals and
required_shifts 0 (the reference's own defaults, gsrt.py `_safe_goal_sequence` / `_safe_required_shifts`).
`info.num_trials` is kept for pass^k (`load_agentchangebench_results`). Each simulation becomes one
Trajectory:

- messages keep their order (index = position, greeting = 0, as the reference's `turn_idx`); roles are
  user / assistant / tool; tool calls keep their ids and arguments; a tool message answers the call
  whose id it carries (`tool_call_id`) and `is_error` is its `error` field. `agent_turn` of an
  assistant message is the number of assistant messages before it (greeting = 0).
- `tool_calls` holds one ToolCallRecord per call made in an *assistant* message (user-side tool
  calls, which tau2 allows, stay in the messages only): result = the tool message's text,
  is_error from it, error_kind "unknown" when it failed (the reference has no error kinds), else None.
- shifts come from the stored GSRT judge output (`reward_info.info.gsrt_v2.user_goal_shifts`): shift k
  (from 1) happens at the judge's `turn` (a message index), from goal k-1 to goal k of the task (the
  judge's own tokens when the task has fewer goals). Without judge output there are no shifts, and
  user messages carry no goal; with it, a user message carries the goal active at its index.
- termination from `termination_reason`: user_stop (or user_transfer / out_of_scope when the last user
  message holds ###TRANSFER### / ###OUT-OF-SCOPE###: tau2 records user_stop for all three; in A 9 of 24
  and in B 1 of 13 "user_stop" simulations end on ###TRANSFER###) and agent_stop (-> agent_transfer)
  are blamed on nobody; max_steps, too_many_errors (-> too_many_tool_errors) and agent_error on the agent;
  user_error on the user.
- servers {}, final_state {}, seed / trial from the file, agent / user "agentchangebench:<llm>" from
  `info.agent_info.llm` / `info.user_info.llm`, `source_data` = the simulation's `reward_info` verbatim.

Compatibility rules (`compat_run_metrics`), each checked against the two recorded banking runs
----------------------------------------------------------------------------------------------
Numbers below are for banking_test_run.json (A: gpt-4o as agent and user, 24 simulations, 84 calls)
and banking_gpt-4.1_2025-08-23.json (B: gpt-4.1 as agent and user, 13 simulations, 78 calls).

TSR (per simulation, then the plain mean over simulations)
  * Weights communicate_info 0.25, action 0.45, nl_assertion 0.30, renormalized over the channels the
    task has; a simulation with no channel scores 0.0. (B stores `weights_used` with these weights.)
  * communicate_info: the contents of every assistant message with non-empty content, joined by a
    single space and lowercased; score = share of the task's strings whose lowercase form is a plain
    substring. No number or currency normalization.
  * action: the reference's action sets (tau2 `actions` become one set per action). For each allowed
    tool, only the *first* call of that name anywhere in the conversation (any role) is looked at; it
    scores 0.5, plus 0.5 when every expected param is present with an equal value (plain `==`, no
    canonicalization; `required_parameters` is ignored). Errored calls count like any other. The set
    scores the max over its allowed tools; the channel is the mean over sets.
  * nl_assertion: verdicts are never re-judged: they come from `reward_info.info.tsr_details.
    nl_assertion_details`, else `reward_info.nl_assertions`, used only when their assertion texts equal
    the task's. Score = met / number of task assertions. Without usable verdicts the channel is "not
    judged" and left out of the weights (the reference also drops the channel when its judge fails).
  * Evidence: B stores `info.tsr_details`; all 13 simulations reproduce `overall_tsr` and each channel
    to 1e-9 with exactly these rules, and the means are 0.348718 (TSR), 0.158333 (communicate_info),
    0.262821 (action), 0.602564 (nl_assertion). A stores no `tsr_details` (the reference aggregate then
    fails and prints -1); its values are recomputed with the same rules from the stored NL verdicts
    (A's tasks have no communicate_info).
  * Channel means are taken over the simulations that have the channel.
  * success (pass^k) = the stored `reward_info.reward` within 1e-6 of 1 on either side (the reference's
    `is_successful`, applied by `get_metrics_df` to `Results.to_df().reward`); a simulation with no stored
    reward (a native run) uses its recomputed TSR instead. In B the stored reward equals the TSR; in A
    every stored reward is 0.0 while the recomputed TSR reaches 0.7.
  * pass^k (tau2 `get_tasks_pass_hat_k`): k = 1..min(`info.num_trials`, fewest trials of any task);
    each task's pass^k = C(c, k) / C(n, k) with n = *every* trial it has (not num_trials); the plain
    mean over tasks. No simulations: {} (the reference's aggregate fails and prints {1: -1}).
    pass@k and avg@k are not reported.

TUE (pooled over every tool call of every simulation, any role)
  * T = calls whose tool message has no error (a call without a tool message counts as correct).
    A: 78/84, B: 68/78 (6 and 10 errored calls).
  * P = calls *not* flagged invalid, where a call is flagged only when its tool message is an error whose
    lowercased text contains "invalid parameter", "missing parameter", "parameter error", "bad
    parameter", "invalid argument" or "missing argument". None of the 16 error texts in A and B does
    (they are "Error: DISPUTED", "Customer ... not found", a datetime comparison bug, ...), so P = 1.0.
  * TUE = 0.6 T + 0.4 P. With no calls the reference reports 0.0 for T, P and TUE.

TCRR (the reference's windowed count)
  * Only calls in assistant messages. The turn counter counts every assistant message, greeting
    included, starting at 1 (= shiftbox agent_turn + 1).
  * A call's identity is (name, arguments normalized: keys sorted, dict values recursively, list values
    sorted, or stringified items when unsortable; if the identity is still unhashable, (name,
    str(arguments))).
  * window: a call of turn t is redundant when its identity occurs in turns max(1, t-3) .. t-1
    (the same turn is not looked at).
  * batch: in a turn, calls to one tool beyond the first 2 add (count - 2), independently of the
    window rule — the two counts add up, so one call may be counted twice and the ratio can exceed 1.
  * Aggregate: all calls of all simulations are pooled and grouped by turn number across
    conversations, then counted as one conversation. A: 38/84 = 0.452381 (21 window + 17 batch),
    B: 22/78 = 0.282051 (13 window + 9 batch). Per simulation (each simulation counted alone): A 1/84,
    B 3/78 redundant — reported per simulation and as `mean` (the mean of per-simulation ratios over
    the simulations with calls).

GSRT (judge output stored in `reward_info.info.gsrt_v2`; no judge is called)
  * A shift's time base is the judge's `turn` (a message index); ack / tool / outcome are
    `acknowledgment_turn` / `tool_turn` / `outcome_turn` minus it — message-index differences, not
    agent turns — kept only when the judge's turn is after the shift (B, task 5: tool_turn 7 before the
    shift at 9 -> no tool time). The older judge format in A (`agent_turn` only) has no
    acknowledgment_turn, so the reference finds no acknowledgment there.
  * recovered iff acknowledgment_turn is after the shift and the judge did not mark
    `transferred_to_human`; transferred = that flag.
  * Aggregate: if any simulation lacks judge output (neither `gsrt_v2` nor `gsrt_enhanced` in
    `reward_info.info`), the reference's GSRT aggregate fails and reports -1; here every rate and
    median is None and `shifts` stays a count (B: the simulations of tasks 13 and 14 have none). The
    same with no simulations at all (the reference's aggregate needs a non-empty cache, else -1).
    Otherwise shifts = the judge's shift count; recovery and transfer rates over shifts (0.0 when
    there is none, as the reference prints); medians of the message-index differences (the
    reference's `gsrt.py` aggregate; its `tau2 metrics` aggregate reads a key no judge writes and
    leaves them None); never_* = share of shifts without that stage.

Per-simulation values (the reference reports none) apply the same functions to one simulation, with
None where a ratio has no denominator. Breakdowns: by_domain and by_agent.

Not reproducible: a task with both `action_sets` and tau2 `actions` is scored by the reference on
`action_sets` only; the importer merges both, so such a task would be scored on both here (no task in
A or B has both). NL verdicts and GSRT are only as good as the stored judge outputs.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import Any

from ..tasks import Task
from ..tasks._import_acb import read_json, reference_task_file
from ..trajectory import (
    SHIFT_REPORT_TOOL,
    STOP_TOKENS,
    GoalShift,
    Message,
    Termination,
    ToolCall,
    ToolCallRecord,
    Trajectory,
    shift_reports_of,
)
from ._model import (
    Breakdown,
    GSRTAggregate,
    RunMetrics,
    ShiftRecovery,
    SimulationMetrics,
    TCRRAggregate,
    TCRRScore,
    TSRAggregate,
    TSRScore,
    TUEAggregate,
    TUEScore,
)

WEIGHTS = {"communicate_info": 0.25, "action": 0.45, "nl_assertion": 0.30}
TUE_WEIGHTS = (0.6, 0.4)
WINDOW = 3
BATCH = 2
PARAM_ERROR_PHRASES = ("invalid parameter", "missing parameter", "parameter error", "bad parameter",
                       "invalid argument", "missing argument")
SHIFT_REPORT_DOMAINS = {"banking"}
"""Domains whose reference tool set offers the agent log_shift_event (its shift reports are kept)."""
_TERMINATIONS = {
    "user_stop": ("user_stop", "none"),
    "agent_stop": ("agent_transfer", "none"),
    "max_steps": ("max_steps", "agent"),
    "too_many_errors": ("too_many_tool_errors", "agent"),
    "agent_error": ("agent_error", "agent"),
    "user_error": ("user_error", "user"),
}


# --------------------------------------------------------------------------------------------------
# Loading


@dataclass
class AgentChangeBenchResults:
    """A results file as read: one Trajectory per simulation, the file's tasks, and `info.num_trials`
    (None when the file does not say)."""

    trajectories: list[Trajectory]
    tasks: dict[str, Task]
    num_trials: int | None


def load_agentchangebench_results(path: Path) -> AgentChangeBenchResults:
    """Every simulation of an AgentChangeBench/tau2 results file as a Trajectory, the file's tasks and its
    `info.num_trials` (which caps k in compat pass^k).

    ValueError (naming the file and the simulation) when the file is not such a results file.
    """
    path = Path(path)
    raw = read_json(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("simulations"), list) \
            or not isinstance(raw.get("tasks"), list):
        raise ValueError(f"{path}: not an AgentChangeBench results file (expected a JSON object with "
                         "\"tasks\" and \"simulations\" lists)")
    info = raw.get("info") if isinstance(raw.get("info"), dict) else {}
    domain = (info.get("environment_info") or {}).get("domain_name")
    task_file = reference_task_file(raw["tasks"], path, domain, goals_when_missing="none")
    tasks = {t.id: t for t in task_file.tasks}
    agent = _participant(info.get("agent_info"))
    user = _participant(info.get("user_info"))
    trajectories = []
    for n, sim in enumerate(raw["simulations"]):
        where = f"{path}: simulations[{n}]"
        if not isinstance(sim, dict):
            raise ValueError(f"{where}: not an object")
        task_id = str(sim.get("task_id"))
        if task_id not in tasks:
            raise ValueError(f"{where}: task {task_id!r} is not in the file's tasks[]")
        try:
            trajectories.append(_trajectory(sim, tasks[task_id], task_file.domain, agent, user))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} ({sim.get('id')}): {exc}") from None
    return AgentChangeBenchResults(trajectories, tasks, _int(info.get("num_trials")))


def load_agentchangebench_simulations(path: Path) -> tuple[list[Trajectory], dict[str, Task]]:
    """Every simulation of an AgentChangeBench/tau2 results file as a Trajectory, and the file's tasks
    (`load_agentchangebench_results` without `info.num_trials`)."""
    results = load_agentchangebench_results(path)
    return results.trajectories, results.tasks


def _participant(data: Any) -> str:
    llm = data.get("llm") if isinstance(data, dict) else None
    return f"agentchangebench:{llm}" if llm else "agentchangebench"


def _judge_shifts(reward_info: Any) -> list[dict] | None:
    """The judge's user_goal_shifts, or None when the simulation has no GSRT judge output."""
    info = reward_info.get("info") if isinstance(reward_info, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("gsrt_v2"), dict):
        return None
    shifts = info["gsrt_v2"].get("user_goal_shifts")
    return [s for s in shifts if isinstance(s, dict)] if isinstance(shifts, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _trajectory(sim: dict, task: Task, domain: str, agent: str, user: str) -> Trajectory:
    raw_messages = sim.get("messages") or []
    goals = list(task.goals)
    judged = _judge_shifts(sim.get("reward_info"))
    shifts = []
    for k, s in enumerate(judged or [], start=1):
        turn = _int(s.get("turn"))
        if turn is None:
            continue
        from_goal = goals[k - 1] if k < len(goals) else str(s.get("from", ""))
        to_goal = goals[k] if k < len(goals) else str(s.get("to", ""))
        shifts.append(GoalShift(shift_index=k, from_goal=from_goal, to_goal=to_goal, message_index=turn))

    messages: list[Message] = []
    records: list[ToolCallRecord] = []
    results = {m.get("id"): m for m in raw_messages if isinstance(m, dict) and m.get("role") == "tool"}
    assistant_turns = 0
    for index, m in enumerate(raw_messages):
        role = m.get("role")
        if role not in ("user", "assistant", "tool"):
            raise ValueError(f"messages[{index}] has role {role!r} (expected user, assistant or tool)")
        content = m.get("content")
        content = content if content is None or isinstance(content, str) else json.dumps(content)
        calls = [ToolCall(id=str(c.get("id") or f"m{index}c{j}"), name=c["name"],
                          arguments=_arguments(c.get("arguments")))
                 for j, c in enumerate(m.get("tool_calls") or [])]
        message = Message(index=index, role=role, content=content, tool_calls=calls)
        if role == "assistant":
            message.agent_turn = assistant_turns
            for call in calls:
                answer = results.get(call.id)
                failed = bool(answer.get("error")) if answer else False
                records.append(ToolCallRecord(
                    call_id=call.id, message_index=index, agent_turn=assistant_turns, domain=domain,
                    name=call.name, arguments=call.arguments,
                    result=answer.get("content") if answer else None, is_error=failed,
                    error_kind="unknown" if failed else None))
            assistant_turns += 1
        elif role == "tool":
            message.tool_call_id = str(m.get("id")) if m.get("id") is not None else None
            message.is_error = bool(m.get("error"))
        elif judged is not None and goals:
            active = sum(s.message_index <= index for s in shifts)
            message.goal = goals[min(active, len(goals) - 1)]
        messages.append(message)

    reason = str(sim.get("termination_reason"))
    if reason not in _TERMINATIONS:
        raise ValueError(f"termination_reason {reason!r} is not one of {', '.join(_TERMINATIONS)}")
    mapped, blame = _TERMINATIONS[reason]
    if reason == "user_stop":
        last_user = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
        mapped = next((r for token, r in STOP_TOKENS.items() if token in last_user), mapped)
    duration = sim.get("duration")
    reward_info = sim.get("reward_info")
    offered = domain in SHIFT_REPORT_DOMAINS or any(c.name == SHIFT_REPORT_TOOL for c in records)
    return Trajectory(
        simulation_id=str(sim.get("id")), task_id=task.id, trial=int(sim.get("trial") or 0), domain=domain,
        seed=int(sim.get("seed") or 0), agent=agent, user=user, persona=task.user_scenario.persona,
        goals=goals, servers={}, messages=messages, tool_calls=records, shifts=shifts,
        shift_reports=shift_reports_of(records) if offered else None,
        termination=Termination(reason=mapped, detail=f"termination_reason {reason}", blame=blame),
        final_state={},
        timing={"wall_s": float(duration)} if isinstance(duration, int | float) else {},
        source_data=reward_info if isinstance(reward_info, dict) else None,
    )


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {"_raw": value}
    return value if isinstance(value, dict) else {"_value": value}


# --------------------------------------------------------------------------------------------------
# Per-simulation rules


def _assistant_text(trajectory: Trajectory) -> str:
    return " ".join(m.content for m in trajectory.messages if m.role == "assistant" and m.content).lower()


def _all_calls(trajectory: Trajectory) -> list[ToolCall]:
    return [c for m in trajectory.messages for c in m.tool_calls]


def _tool_results(trajectory: Trajectory) -> dict[str, Message]:
    return {m.tool_call_id: m for m in trajectory.messages if m.role == "tool" and m.tool_call_id is not None}


def compat_communicate_info(trajectory: Trajectory, required: list[str]) -> float | None:
    if not required:
        return None
    text = _assistant_text(trajectory)
    return sum(s.lower() in text for s in required) / len(required)


def compat_action(trajectory: Trajectory, task: Task) -> float | None:
    sets = task.evaluation_criteria.action_sets
    if not sets:
        return None
    calls = _all_calls(trajectory)
    total = 0.0
    for action in sets:
        best = 0.0
        for allowed in action.allowed_tools:
            first = next((c for c in calls if c.name == allowed.function_name), None)
            if first is None:
                continue
            exact = all(k in first.arguments and first.arguments[k] == v for k, v in allowed.params.items())
            best = max(best, 0.5 + (0.5 if exact else 0.0))
        total += best
    return total / len(sets)


def stored_nl_verdicts(trajectory: Trajectory, assertions: list[str]) -> list[bool] | None:
    """The reference's stored verdicts for exactly these assertions, or None."""
    data = trajectory.source_data or {}
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    details = (info.get("tsr_details") or {}).get("nl_assertion_details") if isinstance(
        info.get("tsr_details"), dict) else None
    for candidate in (details, data.get("nl_assertions")):
        if isinstance(candidate, list) and all(isinstance(v, dict) for v in candidate) \
                and [v.get("nl_assertion") for v in candidate] == assertions:
            return [bool(v.get("met")) for v in candidate]
    return None


def compat_tsr(trajectory: Trajectory, task: Task) -> TSRScore:
    criteria = task.evaluation_criteria
    channels: dict[str, float] = {}
    communicate = compat_communicate_info(trajectory, criteria.communicate_info)
    if communicate is not None:
        channels["communicate_info"] = communicate
    action = compat_action(trajectory, task)
    if action is not None:
        channels["action"] = action
    nl_status = "absent"
    if criteria.nl_assertions:
        verdicts = stored_nl_verdicts(trajectory, criteria.nl_assertions)
        nl_status = "not_judged" if verdicts is None else "judged"
        if verdicts is not None:
            channels["nl_assertion"] = sum(verdicts) / len(criteria.nl_assertions)
    weight = sum(WEIGHTS[k] for k in channels)
    score = sum(WEIGHTS[k] / weight * v for k, v in channels.items()) if weight else 0.0
    return TSRScore(score=score, communicate_info=channels.get("communicate_info"),
                    action=channels.get("action"), nl_assertion=channels.get("nl_assertion"),
                    nl_status=nl_status)


def _call_flags(trajectory: Trajectory) -> list[tuple[bool, bool]]:
    """(correct, params_valid) for every tool call of the conversation, any role."""
    results = _tool_results(trajectory)
    flags = []
    for call in _all_calls(trajectory):
        answer = results.get(call.id)
        failed = bool(answer and answer.is_error)
        text = (answer.content or "").lower() if answer else ""
        invalid = failed and bool(text) and any(p in text for p in PARAM_ERROR_PHRASES)
        flags.append((not failed, not invalid))
    return flags


def _tue(flags: list[tuple[bool, bool]], empty: float | None) -> tuple[int, int, int, float | None,
                                                                       float | None, float | None]:
    calls = len(flags)
    executed = sum(c for c, _ in flags)
    valid = sum(v for _, v in flags)
    if not calls:
        return 0, 0, 0, empty, empty, empty
    t, p = executed / calls, valid / calls
    return calls, executed, valid, t, p, TUE_WEIGHTS[0] * t + TUE_WEIGHTS[1] * p


def compat_tue(trajectory: Trajectory) -> TUEScore:
    calls, executed, valid, t, p, tue = _tue(_call_flags(trajectory), None)
    return TUEScore(calls=calls, executed=executed, schema_valid=valid, t=t, p=p, tue=tue)


def _normalized(params: dict[str, Any]) -> tuple:
    items = []
    for key, value in sorted(params.items()):
        if isinstance(value, dict):
            items.append((key, _normalized(value)))
        elif isinstance(value, list):
            try:
                items.append((key, tuple(sorted(value))))
            except TypeError:
                items.append((key, tuple(str(v) for v in value)))
        else:
            items.append((key, value))
    return tuple(items)


def _identity(name: str, arguments: dict[str, Any]) -> tuple:
    try:
        identity = (name, _normalized(arguments))
        hash(identity)
    except TypeError:
        identity = (name, str(arguments))
    return identity


def turn_calls(trajectory: Trajectory) -> list[tuple[int, ToolCall]]:
    """(reference assistant-turn number, call) for calls in assistant messages; greeting = turn 1."""
    out, turn = [], 0
    for m in trajectory.messages:
        if m.role == "assistant":
            turn += 1
            out.extend((turn, c) for c in m.tool_calls)
    return out


def windowed_redundancy(calls: Iterable[tuple[int, ToolCall]], window: int = WINDOW,
                        batch: int = BATCH) -> tuple[int, int, int]:
    """(calls, window-rule count, batch-rule count) — the reference's count; the two add up."""
    by_turn: dict[int, list[ToolCall]] = defaultdict(list)
    total = 0
    for turn, call in calls:
        by_turn[turn].append(call)
        total += 1
    by_window = by_batch = 0
    for turn in sorted(by_turn):
        seen = {_identity(c.name, c.arguments)
                for prev in range(max(1, turn - window), turn) for c in by_turn.get(prev, ())}
        by_window += sum(_identity(c.name, c.arguments) in seen for c in by_turn[turn])
        counts: dict[str, int] = defaultdict(int)
        for c in by_turn[turn]:
            counts[c.name] += 1
        by_batch += sum(n - batch for n in counts.values() if n > batch)
    return total, by_window, by_batch


def compat_tcrr(trajectory: Trajectory) -> TCRRScore:
    calls, by_window, by_batch = windowed_redundancy(turn_calls(trajectory))
    redundant = by_window + by_batch
    return TCRRScore(calls=calls, redundant=redundant, window=by_window, batch=by_batch,
                     ratio=redundant / calls if calls else None)


def has_judge_output(trajectory: Trajectory) -> bool:
    """The reference's test for cached GSRT data: `gsrt_v2` or `gsrt_enhanced` in reward_info.info."""
    info = (trajectory.source_data or {}).get("info")
    return isinstance(info, dict) and bool(info) and ("gsrt_v2" in info or "gsrt_enhanced" in info)


def compat_gsrt(trajectory: Trajectory) -> list[ShiftRecovery]:
    out = []
    for k, shift in enumerate(_judge_shifts(trajectory.source_data) or [], start=1):
        turn = _int(shift.get("turn")) or 0

        def after(key: str, turn: int = turn, shift: dict = shift) -> int | None:
            value = _int(shift.get(key))
            return value - turn if value is not None and value > turn else None

        ack = after("acknowledgment_turn")
        transferred = bool(shift.get("transferred_to_human"))
        out.append(ShiftRecovery(
            shift_index=k, from_goal=str(shift.get("from") or ""), to_goal=str(shift.get("to") or ""),
            message_index=turn, ack=ack, tool=after("tool_turn"), outcome=after("outcome_turn"),
            recovered=ack is not None and not transferred, transferred=transferred))
    return out


def stored_reward(trajectory: Trajectory) -> float | None:
    """The reference's stored `reward_info.reward` of an imported simulation, or None."""
    value = (trajectory.source_data or {}).get("reward")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def is_successful(reward: float) -> bool:
    """The reference's `is_successful`: the reward within 1e-6 of 1, on either side."""
    return 1 - 1e-6 <= reward <= 1 + 1e-6


def compat_simulation_metrics(trajectory: Trajectory, task: Task) -> SimulationMetrics:
    tsr = compat_tsr(trajectory, task)
    reward = stored_reward(trajectory)
    return SimulationMetrics(
        simulation_id=trajectory.simulation_id, task_id=trajectory.task_id, trial=trajectory.trial,
        domain=trajectory.domain, persona=trajectory.persona, agent=trajectory.agent,
        termination=trajectory.termination.reason, scored=True, tsr=tsr, tue=compat_tue(trajectory),
        tcrr=compat_tcrr(trajectory), gsrt=compat_gsrt(trajectory),
        success=is_successful(reward if reward is not None else tsr.score or 0.0))


# --------------------------------------------------------------------------------------------------
# Aggregation


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _median(values: list[int]) -> float | None:
    return float(statistics.median(values)) if values else None


def _share(count: int, total: int) -> float | None:
    return count / total if total else None


def _gsrt_aggregate(trajectories: list[Trajectory], sims: list[SimulationMetrics]) -> GSRTAggregate:
    shifts = [r for s in sims for r in s.gsrt]
    if not trajectories or not all(has_judge_output(t) for t in trajectories):
        # undefined, as in the reference (which prints -1); the count stays a count
        return GSRTAggregate(shifts=len(shifts), recovery_rate=None, transfer_rate=None, median_ack=None,
                             median_tool=None, median_outcome=None)
    n = len(shifts)
    return GSRTAggregate(
        shifts=n,
        recovery_rate=sum(r.recovered for r in shifts) / n if n else 0.0,
        transfer_rate=sum(r.transferred for r in shifts) / n if n else 0.0,
        median_ack=_median([r.ack for r in shifts if r.ack is not None]),
        median_tool=_median([r.tool for r in shifts if r.tool is not None]),
        median_outcome=_median([r.outcome for r in shifts if r.outcome is not None]),
        never_ack=_share(sum(r.ack is None for r in shifts), n),
        never_tool=_share(sum(r.tool is None for r in shifts), n),
        never_outcome=_share(sum(r.outcome is None for r in shifts), n),
    )


def _pooled_tcrr(trajectories: list[Trajectory]) -> tuple[int, int, int]:
    return windowed_redundancy(c for t in trajectories for c in turn_calls(t))


def _breakdown(trajectories: list[Trajectory], sims: list[SimulationMetrics]) -> Breakdown:
    calls, by_window, by_batch = _pooled_tcrr(trajectories)
    tue = _tue([f for t in trajectories for f in _call_flags(t)], 0.0)[5]
    return Breakdown(simulations=len(sims), tsr=_mean(s.tsr.score for s in sims), tue=tue,
                     tcrr=(by_window + by_batch) / calls if calls else 0.0,
                     gsrt=_gsrt_aggregate(trajectories, sims))


def _pass_hat_k(sims: list[SimulationMetrics], num_trials: int | None) -> dict[int, float]:
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for s in sims:
        outcomes[s.task_id].append(bool(s.success))
    if not outcomes:
        return {}
    max_k = min(len(v) for v in outcomes.values())
    if num_trials is not None:
        max_k = min(max_k, num_trials)
    return {k: sum(comb(sum(v), k) / comb(len(v), k) for v in outcomes.values()) / len(outcomes)
            for k in range(1, max_k + 1)}


def compat_run_metrics(trajectories: list[Trajectory], tasks: dict[str, Task], *,
                       num_trials: int | None = None) -> tuple[RunMetrics, list[SimulationMetrics]]:
    """Score trajectories as the AgentChangeBench code does (see the module docstring for every rule).

    Stored judge outputs (NL verdicts, GSRT) and stored rewards (success, pass^k) are read from
    `trajectory.source_data`; nothing is judged. `num_trials` is the results file's `info.num_trials`
    (caps k in pass^k; None: no cap beyond the fewest trials of any task).
    """
    missing = sorted({t.task_id for t in trajectories} - set(tasks))
    if missing:
        raise ValueError(f"no task for simulations of {', '.join(missing)}")
    sims = [compat_simulation_metrics(t, tasks[t.task_id]) for t in trajectories]
    flags = [f for t in trajectories for f in _call_flags(t)]
    calls, executed, valid, t_value, p_value, tue_value = _tue(flags, 0.0)
    tcrr_calls, by_window, by_batch = _pooled_tcrr(trajectories)
    redundant = by_window + by_batch

    notes = ["mode agentchangebench: scored with the AgentChangeBench reference rules (see "
             "shiftbox.metrics._agentchangebench); TCRR is pooled across simulations by turn number"]
    stored_tsr = sum(isinstance(((t.source_data or {}).get("info") or {}).get("tsr_details"), dict)
                     for t in trajectories)
    if stored_tsr < len(trajectories):
        notes.append(f"TSR: {len(trajectories) - stored_tsr} of {len(trajectories)} simulations store no "
                     "info.tsr_details, so the reference's own aggregate reports -1; TSR here is "
                     "recomputed with the reference's per-simulation rules")
    not_judged = sum(s.tsr.nl_status == "not_judged" for s in sims)
    if not_judged:
        notes.append(f"nl_assertion: {not_judged} simulations have no stored verdicts for their task's "
                     "assertions; the channel is left out of their TSR (no judge is called)")
    unjudged = [t.simulation_id for t in trajectories if not has_judge_output(t)]
    if unjudged:
        notes.append(f"GSRT: {len(unjudged)} of {len(trajectories)} simulations have no judge output "
                     "(reward_info.info.gsrt_v2), so every GSRT aggregate is undefined (the reference prints -1): "
                     "rates and medians are None; `shifts` counts the judged shifts of the other simulations")
    old_format = sum("acknowledgment_turn" not in s for t in trajectories
                     for s in _judge_shifts(t.source_data) or [])
    if not trajectories:
        notes.append("GSRT: no simulations, so every GSRT aggregate is undefined (the reference prints -1)")
    no_goals = sorted({t.task_id for t in trajectories if not tasks[t.task_id].goals})
    if no_goals:
        notes.append(f"tasks without goal_shifts (the older task format): {len(no_goals)}; their goals are "
                     "unknown, so their shifts come only from stored judge output")
    unrewarded = sum(stored_reward(t) is None for t in trajectories)
    if unrewarded:
        notes.append(f"pass^k: {unrewarded} of {len(trajectories)} simulations store no reward_info.reward; "
                     "their success is the recomputed TSR within 1e-6 of 1")
    counts: dict[str, int] = defaultdict(int)
    for t in trajectories:
        counts[t.task_id] += 1
    if num_trials is not None and counts and num_trials < min(counts.values()):
        notes.append(f"pass^k: k stops at info.num_trials = {num_trials}, below the fewest trials of any "
                     f"task ({min(counts.values())}); each task's pass^k still uses all its trials")
    if old_format:
        notes.append(f"GSRT: {old_format} shifts come from the older judge format (agent_turn, no "
                     "acknowledgment_turn / tool_turn / outcome_turn); the reference reads no "
                     "acknowledgment from them, so they count as not recovered")

    by_domain: dict[str, list[int]] = defaultdict(list)
    by_agent: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(trajectories):
        by_domain[t.domain].append(i)
        by_agent[t.agent].append(i)

    def slice_of(indices: list[int]) -> Breakdown:
        return _breakdown([trajectories[i] for i in indices], [sims[i] for i in indices])

    run = RunMetrics(
        mode="agentchangebench",
        simulations=len(sims),
        scored_simulations=len(sims),
        tool_calls=calls,
        tsr=TSRAggregate(
            n=len(sims), mean=_mean(s.tsr.score for s in sims),
            communicate_info=_mean(s.tsr.communicate_info for s in sims),
            action=_mean(s.tsr.action for s in sims), nl_assertion=_mean(s.tsr.nl_assertion for s in sims),
            nl_judged=sum(s.tsr.nl_status == "judged" for s in sims)),
        tue=TUEAggregate(calls=calls, t=t_value, p=p_value, tue=tue_value,
                         mean_per_simulation=_mean(s.tue.tue for s in sims)),
        tcrr=TCRRAggregate(calls=tcrr_calls, redundant=redundant, window=by_window, batch=by_batch,
                           pooled=redundant / tcrr_calls if tcrr_calls else 0.0,
                           mean=_mean(s.tcrr.ratio for s in sims)),
        gsrt=_gsrt_aggregate(trajectories, sims),
        success_threshold=1.0,
        pass_hat_k=_pass_hat_k(sims, num_trials),
        by_domain={k: slice_of(v) for k, v in sorted(by_domain.items())},
        by_agent={k: slice_of(v) for k, v in sorted(by_agent.items())},
        notes=notes,
    )
    return run, sims
