"""One conversation as a timeline: each message with its goal-shift, GSRT-stage, error and redundancy badges."""

from __future__ import annotations

import json
from typing import Any

from shiftbox_servers.kit import loads_json

from ..metrics import BATCH, ShiftRecovery, SimulationMetrics, redundancy_labels, shift_windows
from ..trajectory import Message, ToolCallRecord, Trajectory
from ._html_text import STAGE_NAMES, STAGES, e


def _pretty(value: Any) -> str:
    """JSON for arguments/results; a string holding JSON is pretty-printed too."""
    if isinstance(value, str):
        try:
            value = loads_json(value, "a value", finite=False)
        except ValueError:
            return value
        if not isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def json_block(value: Any) -> str:
    """Short JSON on one line (`code`), longer JSON pretty-printed in a scrolling block."""
    compact = value
    if isinstance(value, str):
        try:
            compact = loads_json(value, "a value", finite=False)
        except ValueError:
            return f"<pre>{e(value)}</pre>"
    one_line = json.dumps(compact, ensure_ascii=False, sort_keys=True, default=str)
    if len(one_line) <= 110:
        return f'<pre class="inline">{e(one_line)}</pre>'
    return f"<pre>{e(_pretty(value))}</pre>"


def redundant_calls(traj: Trajectory) -> dict[str, str]:
    """call id -> "repeat" | "batch" for the calls TCRR counts as redundant (shiftbox definitions)."""
    return {call_id: "batch" if why == "batch" else "repeat" for call_id, why in redundancy_labels(traj).items()}


def stage_marks(traj: Trajectory, sm: SimulationMetrics | None
                ) -> tuple[dict[int, list[tuple[str, int, int]]], dict[int, tuple[int, int]]]:
    """message index -> [(stage, shift index, turn)] for stage badges; and -> (shift, turn) for every turn."""
    recoveries = {r.shift_index: r for r in (sm.gsrt if sm else [])}
    marks: dict[int, list[tuple[str, int, int]]] = {}
    relative: dict[int, tuple[int, int]] = {}
    for shift, _, window in shift_windows(traj):
        for k, m in enumerate(window, start=1):
            relative[m.index] = (shift.shift_index, k)
        r = recoveries.get(shift.shift_index)
        if r is None:
            continue
        for stage in STAGES:
            k = getattr(r, stage)
            if k is not None and 1 <= k <= len(window):
                marks.setdefault(window[k - 1].index, []).append((stage, shift.shift_index, k))
    return marks, relative


def _stage_badges(r: ShiftRecovery | None) -> str:
    if r is None:
        return ""
    out = []
    for stage in STAGES:
        k = getattr(r, stage)
        if stage == "outcome" and not r.outcome_measured:
            out.append('<span class="badge never">outcome not measured</span>')
        elif k is None:
            out.append(f'<span class="badge never">{stage}: never</span>')
    if r.transferred:
        out.append('<span class="badge err">transferred</span>')
    return "".join(out)


def message_item(msg: Message, traj: Trajectory, records: dict[str, ToolCallRecord], redundant: dict[str, str],
             marks: dict[int, list[tuple[str, int, int]]], relative: dict[int, tuple[int, int]],
             shifts_at: dict[int, list[Any]], recoveries: dict[int, ShiftRecovery], anchor: str) -> str:
    classes = ["msg", msg.role]
    meta = [f'<span class="role">{e(msg.role)}</span><span class="idx">#{msg.index}</span>']
    body = ""
    if msg.role == "user":
        if msg.goal:
            meta.append(f'<span class="goal">goal: {e(msg.goal)}</span>')
        shifts = shifts_at.get(msg.index, [])
        if shifts:
            classes.append("shift")
        for shift in shifts:
            meta.append(f'<span class="badge shift" title="{e(shift.from_goal)} \u2192 {e(shift.to_goal)}">'
                        f"shift {shift.shift_index}: {e(shift.to_goal)}</span>"
                        f"<span>from {e(shift.from_goal)}</span>"
                        + _stage_badges(recoveries.get(shift.shift_index)))
    elif msg.role == "assistant":
        if msg.agent_turn is not None:
            meta.append(f"<span>turn {msg.agent_turn}</span>")
        if msg.index in relative:
            s, k = relative[msg.index]
            meta.append(f'<span class="rel" title="agent turns after shift {s}">shift {s} +{k}</span>')
        for stage, s, k in marks.get(msg.index, []):
            meta.append(f'<span class="badge {stage}" title="shift {s}: {e(STAGE_NAMES[stage])} '
                        f'{k} agent turn{"s" if k != 1 else ""} after the shift">{stage} +{k}'
                        + (f" (shift {s})" if len(traj.shifts) > 1 else "") + "</span>")
        if msg.index in marks:
            classes.append("staged")
        calls = []
        for call in msg.tool_calls:
            rec = records.get(call.id)
            err = rec is not None and rec.is_error
            status = (f' <span class="badge err">error: {e(rec.error_kind or "tool error")}</span>' if err else "")
            if call.id in redundant:
                why = ("an identical call in this or the previous turns" if redundant[call.id] == "repeat"
                       else f"more than {BATCH} calls to this tool in one turn")
                status += (f' <span class="badge redundant" title="counted by TCRR: {e(why)}">'
                           f"redundant: {redundant[call.id]}</span>")
            calls.append(f'<div class="call{" error" if err else ""}"><code>{e(call.name)}</code>{status}'
                         f"{json_block(call.arguments)}</div>")
        if calls:
            body = f'<div class="calls">{"".join(calls)}</div>'
    else:
        rec = records.get(msg.tool_call_id or "")
        name = rec.name if rec else (msg.tool_call_id or "?")
        meta.append(f"<code>{e(name)}</code>")
        if msg.tool_call_id:
            meta.append(f'<span class="idx">{e(msg.tool_call_id)}</span>')
        if msg.is_error or (rec is not None and rec.is_error):
            classes.append("error")
            kind = rec.error_kind if rec and rec.error_kind else "tool error"
            meta.append(f'<span class="badge err">error: {e(kind)}</span>')
        content = msg.content if msg.content is not None else (rec.result if rec else "")
        return (f'<li class="{" ".join(classes)}" id="{anchor}-m{msg.index}"><div class="meta">{"".join(meta)}'
                f"</div>{json_block(content)}</li>")
    text = f'<div class="text">{e(msg.content)}</div>' if msg.content else ""
    return (f'<li class="{" ".join(classes)}" id="{anchor}-m{msg.index}"><div class="meta">{"".join(meta)}</div>'
            f"{text}{body}</li>")
