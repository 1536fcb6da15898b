"""The reference's GSRT judge asked again, for simulations without stored judge output (a shiftbox run):
`shiftbox metrics RUN --compat agentchangebench --judge MODEL`.

The procedure is the reference's (`tau2.metrics.gsrt.detect_gsrt_enhanced`, whose answer it stores as
`reward_info.info.gsrt_v2`); the prompt text is shiftbox's own:

  * one question per simulation, over the whole conversation: the task's ordered goal list and its
    required_shifts, and every message as one `index:role:text` line, where index is the message's position
    (greeting = 0) and text its content only (tool calls are not shown; a tool result is a `tool` line);
  * the judge's rules: goals only from the list, in its order, at most required_shifts shifts; sub-intents
    count as their parent goal; the first goal's establishment is `start_goal`, not a shift; a shift is the
    user moving to the next goal of the list. For each shift, acknowledgment_turn = the first assistant
    message that really takes up the new goal (a transfer attempt does not count), tool_turn = the first
    assistant message calling a tool for it, outcome_turn = the first message where it is achieved,
    transferred_to_human = the agent tried to hand the user to a human instead; JSON only, with exactly
    `start_goal` and `user_goal_shifts`;
  * the answer is scored by the rules of `_gsrt` (message-index deltas), like stored judge output.

Where shiftbox differs: the answer may sit in a code fence or amid prose (the reference needs bare JSON); an
answer that cannot be read — no such object, `user_goal_shifts` not a list, a shift whose `turn` is not an
integer, a stage that is neither an integer nor null, `transferred_to_human` not a boolean — makes the simulation
"not judged" (the reference reads it as no shifts, or as shifts at turn 0), and so the run's GSRT aggregate
undefined. The call goes through shiftbox's LLM boundary (`Judge.ask`), so it is recorded to, or replayed
from, the simulation's judge cassette.
"""

from __future__ import annotations

from typing import Any

from ..metrics import Judge, extract_json_object
from ..tasks import Task
from ..trajectory import Trajectory
from ._stored import as_int

STAGES = ("acknowledgment_turn", "tool_turn", "outcome_turn")
KIND = "agentchangebench_gsrt"
"""The judge log's name for this question."""

GSRT_SYSTEM_PROMPT = """You review a customer-service conversation in which the user may move through several goals.
You receive the goals the task intends, in order, and the conversation, and you locate every point where the
user moves on to the next goal, and how the assistant handled each move.

Rules for goals and shifts:
- Use only the goal names of the given list and keep their order; never name a goal that is not in it.
- Report at most as many shifts as the given maximum.
- A narrower request that belongs to a goal (for example, asking for a form while the goal is the dispute)
  is still that goal, not a new one.
- The user message where the first goal of the list first becomes clear is the start goal; it is not a shift.
- A shift is a user message with which the user leaves the current goal for the next goal of the list.

For each shift report, as message indexes:
- acknowledgment_turn: the first assistant message after the shift that genuinely takes up the new goal; an
  offer or attempt to hand the user to someone else does not count;
- tool_turn: the first assistant message after the shift that calls a tool serving the new goal;
- outcome_turn: the first message at which the new goal has actually been accomplished;
- transferred_to_human: true when the assistant tries to pass the user to a human, a specialist or another
  department (for example "I will connect you with an agent") instead of handling the new goal itself.
Use null for a stage that never happens.

Answer with one JSON object and nothing else. It has exactly two keys, "start_goal" and "user_goal_shifts"."""

GSRT_USER_PROMPT = """Goals of the task, in order: [{goals}]
Maximum number of shifts: {required_shifts}

The conversation, one message a line, as <message index>:<role>:<text>:
<conversation>
{transcript}
</conversation>

Answer in this form:
{{"start_goal": {{"turn": <int>, "goal": "<goal>"}},
 "user_goal_shifts": [{{"turn": <int>, "from": "<goal>", "to": "<goal>", "type": "GOAL_SHIFT",
   "agent_responded": <bool>, "agent_turn": <int or null>, "acknowledgment_turn": <int or null>,
   "tool_turn": <int or null>, "outcome_turn": <int or null>, "transferred_to_human": <bool>}}]}}"""


def judge_transcript(trajectory: Trajectory) -> str:
    """Every message as `index:role:content`, as the reference shows the conversation to its judge."""
    return "\n".join(f"{m.index}:{m.role}:{m.content or ''}" for m in trajectory.messages)


def gsrt_prompt(trajectory: Trajectory, task: Task) -> str:
    """The question about one simulation: the task's goals in order, required_shifts and the conversation."""
    shifts = task.user_scenario.goal_shifts
    return GSRT_USER_PROMPT.format(goals=", ".join(shifts.goals), required_shifts=shifts.required_shifts,
                                   transcript=judge_transcript(trajectory))


def _shift(item: Any) -> dict[str, Any] | None:
    """One judged shift with its types checked, or None when it cannot be scored."""
    if not isinstance(item, dict) or as_int(item.get("turn")) is None:
        return None
    if any(item.get(k) is not None and as_int(item.get(k)) is None for k in STAGES):
        return None
    transferred = item.get("transferred_to_human", False)
    if not isinstance(transferred, bool):
        return None
    return {**item, **{k: item.get(k) for k in STAGES}, "transferred_to_human": transferred}


def parse_gsrt_answer(text: str) -> dict[str, Any] | None:
    """The judge's answer as `gsrt_v2` stores it ({start_goal, user_goal_shifts}), or None when it cannot be read
    (the simulation is then not judged; never read as zero shifts)."""
    data = extract_json_object(text, "user_goal_shifts")
    if data is None or "start_goal" not in data or not isinstance(data["user_goal_shifts"], list):
        return None
    shifts = [_shift(item) for item in data["user_goal_shifts"]]
    if any(s is None for s in shifts):
        return None
    return {"start_goal": data["start_goal"], "user_goal_shifts": shifts}


def judge_gsrt(judge: Judge, trajectory: Trajectory, task: Task) -> dict[str, Any] | None:
    """Ask `judge` the reference's GSRT question about one simulation (inside `judge.judging`, so the call is
    recorded to or replayed from the simulation's cassette); None = not judged."""
    with judge.judging(trajectory.simulation_id):
        return judge.ask(KIND, GSRT_SYSTEM_PROMPT, gsrt_prompt(trajectory, task), parse_gsrt_answer)
