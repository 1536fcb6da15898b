"""Hand-built trajectories for metric tests: only what a metric reads, nothing the harness adds."""

from __future__ import annotations

from shiftbox.tasks import ActionSet, Task, ToolCallSpec
from shiftbox.trajectory import (
    GoalShift,
    Message,
    Termination,
    ToolCall,
    ToolCallRecord,
    Trajectory,
)


def task(goals=("authentication",), actions=(), info=(), nl=(), expected=None, task_id="t1") -> Task:
    return Task.model_validate({
        "id": task_id, "domain": "banking",
        "user_scenario": {"persona": "EASY_1", "instructions": {"reason_for_call": "x"},
                          "goal_shifts": {"required_shifts": len(goals) - 1, "goals": list(goals)}},
        "evaluation_criteria": {"action_sets": [a.model_dump() for a in actions], "communicate_info": list(info),
                                "nl_assertions": list(nl), "expected_state_digest": expected},
    })


def action(action_id: str, goal: str, name: str, params: dict, required=None) -> ActionSet:
    return ActionSet(action_id=action_id, goal=goal, allowed_tools=[ToolCallSpec(function_name=name, params=params)],
                     required_parameters=required)


class Builder:
    """Append messages in order; assistant messages get consecutive agent turns."""

    def __init__(self):
        self.messages: list[Message] = []
        self.calls: list[ToolCallRecord] = []
        self.shifts: list[GoalShift] = []
        self.turn = 0

    def user(self, text="hi", goal=None, shift_from=None):
        m = Message(index=len(self.messages), role="user", content=text, goal=goal)
        self.messages.append(m)
        if shift_from:
            self.shifts.append(GoalShift(shift_index=len(self.shifts) + 1, from_goal=shift_from, to_goal=goal,
                                         message_index=m.index))
        return self

    def agent(self, text=None, calls=(), errors=()):
        """calls: (name, args) pairs; errors: indexes of calls that failed (kind not_found)."""
        index = len(self.messages)
        tool_calls = [ToolCall(id=f"c{index}_{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)]
        self.messages.append(Message(index=index, role="assistant", content=text, tool_calls=tool_calls,
                                     agent_turn=self.turn))
        for i, c in enumerate(tool_calls):
            failed = i in errors
            self.calls.append(ToolCallRecord(call_id=c.id, message_index=index, agent_turn=self.turn, domain="banking",
                                             name=c.name, arguments=c.arguments, result={}, is_error=failed,
                                             error_kind="not_found" if failed else None))
        self.turn += 1
        return self

    def tool(self, text="{}", failed=False):
        """A tool result message answering the last assistant message's calls (one message per result)."""
        last = next(m for m in reversed(self.messages) if m.role == "assistant")
        answered = sum(m.role == "tool" and m.index > last.index for m in self.messages)
        call = last.tool_calls[answered]
        self.messages.append(Message(index=len(self.messages), role="tool", content=text, tool_call_id=call.id,
                                     is_error=failed))
        return self

    def build(self, task_id="t1", trial=0, reason="user_stop", blame="none", final=None, persona="EASY_1") -> Trajectory:
        return Trajectory(simulation_id=f"{task_id}#{trial}", task_id=task_id, trial=trial, domain="banking", seed=0,
                          agent="test", user="test", persona=persona, goals=[], servers={}, messages=self.messages,
                          tool_calls=self.calls, shifts=self.shifts,
                          termination=Termination(reason=reason, blame=blame),
                          final_state={"banking": final} if final else {})
