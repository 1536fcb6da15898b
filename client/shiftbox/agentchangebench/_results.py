"""AgentChangeBench / tau2 results files read as trajectories (`load_agentchangebench_results`).

A results file is `{timestamp, info, tasks[], simulations[]}`. Tasks come from the file's own
`tasks[]`, converted by the task importer (`reference_task_file`); a task without `goal_shifts` (the
benchmark's older format, which the reference's task model allows) is read with no goals and
required_shifts 0 (the reference's own defaults, gsrt.py `_safe_goal_sequence` / `_safe_required_shifts`).
`info.num_trials` is kept for pass^k. Each simulation becomes one Trajectory:

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
  and in B 1 of 13 "user_stop" simulations end on ###TRANSFER###; A and B as in the package notes) and
  agent_stop (-> agent_transfer) are blamed on nobody; max_steps, too_many_errors (-> too_many_tool_errors)
  and agent_error on the agent; user_error on the user.
- servers {}, final_state {}, seed / trial from the file, agent / user "agentchangebench:<llm>" from
  `info.agent_info.llm` / `info.user_info.llm`, `source_data` = the simulation's `reward_info` verbatim.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import loads_json

from ..tasks import Task, read_json, reference_task_file
from ..trajectory import (
    SHIFT_REPORT_TOOL,
    STOP_TOKENS,
    GoalShift,
    Message,
    ServerInfo,
    Termination,
    ToolCall,
    ToolCallRecord,
    Trajectory,
    shift_reports_of,
)
from ._stored import as_int, judge_shifts

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
            trajectories.append(_trajectory(sim, tasks[task_id], task_file.domain, agent, user,
                                            task_file.toolset_for()))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where} ({sim.get('id')}): {exc}") from None
    return AgentChangeBenchResults(trajectories, tasks, as_int(info.get("num_trials")))


def load_agentchangebench_simulations(path: Path) -> tuple[list[Trajectory], dict[str, Task]]:
    """Every simulation of an AgentChangeBench/tau2 results file as a Trajectory, and the file's tasks
    (`load_agentchangebench_results` without `info.num_trials`)."""
    results = load_agentchangebench_results(path)
    return results.trajectories, results.tasks


def _participant(data: Any) -> str:
    llm = data.get("llm") if isinstance(data, dict) else None
    return f"agentchangebench:{llm}" if llm else "agentchangebench"


def _goal_shifts(judged: list[dict] | None, goals: list[str]) -> list[GoalShift]:
    """Shift k (from 1) at the judge's `turn`, from goal k-1 to goal k (the judge's tokens past the goals)."""
    shifts = []
    for k, s in enumerate(judged or [], start=1):
        turn = as_int(s.get("turn"))
        if turn is None:
            continue
        from_goal = goals[k - 1] if k < len(goals) else str(s.get("from", ""))
        to_goal = goals[k] if k < len(goals) else str(s.get("to", ""))
        shifts.append(GoalShift(shift_index=k, from_goal=from_goal, to_goal=to_goal, message_index=turn))
    return shifts


def _messages(raw_messages: list, domain: str, goals: list[str], shifts: list[GoalShift] | None
              ) -> tuple[list[Message], list[ToolCallRecord]]:
    """The conversation and the assistant's call records; user messages carry their goal when `shifts`
    (the judge's) is given."""
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
        elif shifts is not None and goals:
            active = sum(s.message_index <= index for s in shifts)
            message.goal = goals[min(active, len(goals) - 1)]
        messages.append(message)
    return messages, records


def _termination(reason: str, messages: list[Message]) -> Termination:
    if reason not in _TERMINATIONS:
        raise ValueError(f"termination_reason {reason!r} is not one of {', '.join(_TERMINATIONS)}")
    mapped, blame = _TERMINATIONS[reason]
    if reason == "user_stop":
        last_user = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
        mapped = next((r for token, r in STOP_TOKENS.items() if token in last_user), mapped)
    return Termination(reason=mapped, detail=f"termination_reason {reason}", blame=blame)


def _trajectory(sim: dict, task: Task, domain: str, agent: str, user: str, toolset: str) -> Trajectory:
    goals = list(task.goals)
    judged = judge_shifts(sim.get("reward_info"))
    shifts = _goal_shifts(judged, goals)
    messages, records = _messages(sim.get("messages") or [], domain, goals, shifts if judged is not None else None)
    termination = _termination(str(sim.get("termination_reason")), messages)
    duration = sim.get("duration")
    reward_info = sim.get("reward_info")
    offered = domain in SHIFT_REPORT_DOMAINS or any(c.name == SHIFT_REPORT_TOOL for c in records)
    return Trajectory(
        simulation_id=str(sim.get("id")), task_id=task.id, trial=int(sim.get("trial") or 0), domain=domain,
        seed=int(sim.get("seed") or 0), agent=agent, user=user, persona=task.user_scenario.persona,
        goals=goals, servers={domain: _reference_server(domain, toolset)}, messages=messages, tool_calls=records, shifts=shifts,
        shift_reports=shift_reports_of(records) if offered else None,
        termination=termination,
        final_state={},
        timing={"wall_s": float(duration)} if isinstance(duration, int | float) else {},
        source_data=reward_info if isinstance(reward_info, dict) else None,
    )


def _reference_server(domain: str, toolset: str) -> ServerInfo:
    """What served a recorded reference simulation: the reference's own server, whose contract shiftbox's tool set
    `toolset` reproduces (so its schemas, not the native ones, judge the calls' arguments)."""
    return ServerInfo(name=f"{domain} (recorded by the reference)", version="reference", snapshot="",
                      snapshot_sha256="", toolset=toolset)


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = loads_json(value, "tool call arguments", finite=False)
        except ValueError:
            return {"_raw": value}
    return value if isinstance(value, dict) else {"_value": value}
