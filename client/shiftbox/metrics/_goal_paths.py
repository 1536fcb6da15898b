"""shiftbox's lenient goal walk (`goal_walks`; not MMTB's path evaluation, which is `_mmtb_goals.py`): the agent's
calls while a goal was current, walked down the goal's valid execution paths (`_paths.py`).

A goal is current from the user message that raised it (the first message, or its shift) up to the
next shift; a goal raised by a stacked request together with the one before it is current from the
user message that turns to it (`shiftbox.trajectory.goal_spans`, stacked="turned_to"). Calls are matched to the goal's action sets with the one matching rule
(`shiftbox.tasks.satisfied_actions`: successful calls, or a failure of the expected kind); a set met
before the goal began stays met and needs no step. Walking the calls in order, a call that meets an
open set whose dependencies (in this goal or another) were met in an earlier agent turn advances the
path; every other call is classed as an error. docs/metrics.md defines each figure and error class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..tasks import ActionSet, Task, params_match, satisfied_actions
from ..trajectory import (
    SHIFT_REPORT_TOOL,
    GoalSpan,
    Message,
    ToolCallRecord,
    Trajectory,
    goal_spans,
)
from ._missions import goal_graph, mission_type
from ._model import PATH_ERRORS, GoalPath, MissionType
from ._paths import fewest_steps
from ._tsr import normalize_text

PATH_BREAKING = ("wrong_order", "premature_call", "tool_for_chat")
"""Errors that fail a goal even when all its action sets were met."""


def _made(call: ToolCallRecord) -> tuple[str, dict, bool, str | None]:
    return call.name, call.arguments, call.is_error, call.error_kind


@dataclass(frozen=True)
class MatchedCalls:
    """A trajectory's calls (shift reports left out), matched once against every action set of the task: the sets
    each call meets, and the message index of the first call meeting each set."""

    calls: list[ToolCallRecord]
    hits: list[set[str]]
    first_met: dict[str, int]

    @classmethod
    def of(cls, trajectory: Trajectory, task: Task) -> MatchedCalls:
        calls = [c for c in trajectory.tool_calls if c.name != SHIFT_REPORT_TOOL]
        by_tool: dict[str, list[ActionSet]] = {}
        for action in task.evaluation_criteria.action_sets:
            for name in dict.fromkeys(spec.function_name for spec in action.allowed_tools):
                by_tool.setdefault(name, []).append(action)
        hits = [satisfied_actions(by_tool.get(c.name, ()), [_made(c)]) for c in calls]
        first: dict[str, int] = {}
        for call, met in zip(calls, hits, strict=True):
            for action_id in sorted(met):
                first.setdefault(action_id, call.message_index)
        return cls(calls, hits, first)


@dataclass(frozen=True)
class PathInputs:
    """What both path evaluations walk (`goal_paths`, and MMTB's `mission_verdicts`): the calls matched, and the goals'
    spans as path evaluation reads them (`stacked="turned_to"`); made once per simulation for both."""

    matched: MatchedCalls
    spans: list[GoalSpan]

    @classmethod
    def of(cls, trajectory: Trajectory, task: Task) -> PathInputs:
        return cls(MatchedCalls.of(trajectory, task),
                   goal_spans(trajectory.messages, trajectory.shifts, goals=task.goals, stacked="turned_to"))


@dataclass
class _Walk:
    """One goal's walk: the action sets met on the path (-> message index), errors and what explains a miss."""

    actions: dict[str, ActionSet]
    kind: MissionType
    met_elsewhere: dict[str, int]
    clarified_at: float
    messages: Sequence[Message] = ()
    """The messages while the goal was current."""
    accepted: dict[str, float] = field(default_factory=dict)
    errors: set[str] = field(default_factory=set)
    explained: set[str] = field(default_factory=set)
    turns: set[int] = field(default_factory=set)

    def ready(self, action_id: str, at: int) -> bool:
        """Every dependency of the set was met in an earlier agent turn (on this goal's path, or anywhere for
        another goal's set)."""
        for dep in self.actions[action_id].depends_on:
            when = self.accepted.get(dep) if dep in self.actions else self.met_elsewhere.get(dep, math.inf)
            if when is None or when >= at:
                return False
        return True

    def told(self, call: ToolCallRecord) -> bool:
        """The user had already given the detail a clarification would ask for: every text value the goal's gold
        calls of this tool must match appears in what the user said before the call."""
        said = " ".join(normalize_text(m.content or "") for m in self.messages
                        if m.role == "user" and m.index < call.message_index)
        values = [v for a in self.actions.values() for s in a.allowed_tools if s.function_name == call.name
                  for k, v in s.params.items()
                  if isinstance(v, str) and (a.required_parameters is None or k in a.required_parameters)]
        return bool(values) and all(normalize_text(v).strip() in said for v in values)

    def step(self, call: ToolCallRecord, met: set[str]) -> None:
        """One call, given the action sets of the task it meets (`MatchedCalls.hits`)."""
        at = call.message_index
        self.turns.add(at)
        gold_tools = {s.function_name for a in self.actions.values() for s in a.allowed_tools}
        if self.kind == "clarify" and call.name in gold_tools and at < self.clarified_at and not self.told(call):
            self.errors.add("premature_call")
        hits = met & self.actions.keys()
        new = sorted(a for a in hits if a not in self.accepted)
        ready = [a for a in new if self.ready(a, at)]
        for action_id in ready:
            self.accepted[action_id] = at
        if ready:
            return
        if new:  # met only before its dependencies
            self.errors.add("wrong_order")
            self.explained.update(new)
            return
        if hits:  # repeats a set already met
            self.errors.add("extra_call")
            return
        self.miss(call, gold_tools)

    def miss(self, call: ToolCallRecord, gold_tools: set[str]) -> None:
        """A call that meets no set: wrong arguments for an open set's tool, else a wrong tool or an extra call."""
        open_sets = [a for a in self.actions.values() if a.action_id not in self.accepted]
        targets = [a for a in open_sets if any(s.function_name == call.name for s in a.allowed_tools)]
        if targets:
            fits = any(params_match(s, call.arguments, a.required_parameters)
                       for a in targets for s in a.allowed_tools if s.function_name == call.name)
            if not fits or call.error_kind == "invalid_arguments":
                self.errors.add("wrong_arguments")
                self.explained.update(a.action_id for a in targets)
            else:  # the right call, failed: a wasted attempt
                self.errors.add("extra_call")
        elif self.kind == "chat" and call.name not in gold_tools:
            self.errors.add("tool_for_chat")
        elif open_sets and call.name not in gold_tools:
            self.errors.add("wrong_tool")
        else:
            self.errors.add("extra_call")


def clarified_at(messages: Sequence[Message]) -> float:
    """The first user reply, while a goal was current, to an agent message that asked something (has a "?");
    infinity when there is none. `messages` are the goal's, from the user message that raised it."""
    asked = False
    for m in messages:
        if m.role == "assistant" and "?" in (m.content or ""):
            asked = True
        elif m.role == "user" and asked:
            return m.index
    return math.inf


def goal_path(task: Task, goal: str, position: int, matched: MatchedCalls, span: tuple[int, int],
              messages: Sequence[Message], parallel: bool) -> GoalPath:
    """One reached goal's path evaluation: the calls made while it was current (message indexes in `span`, the end
    excluded) walked down its paths, sets met by earlier calls counted as done; `messages` are the span's."""
    graph = goal_graph(task, goal)
    kind = mission_type(task, goal, graph)
    actions = {a.action_id: a for a in task.action_sets_for(goal)}
    start, end = span
    before = {a for call, met in zip(matched.calls, matched.hits, strict=True) if call.message_index < start
              for a in met if a in actions}
    walk = _Walk(actions, kind, matched.first_met, clarified_at(messages), messages,
                 accepted={a: -math.inf for a in before})
    for call, met in zip(matched.calls, matched.hits, strict=True):
        if start <= call.message_index < end:
            walk.step(call, met)
    open_sets = set(actions) - set(walk.accepted)
    if open_sets - walk.explained and "wrong_tool" not in walk.errors:
        walk.errors.add("missing_call")
    errors = [e for e in PATH_ERRORS if e in walk.errors]
    least = fewest_steps({k: v for k, v in graph.items() if k not in before}, parallel)
    completed = not open_sets
    success = completed and not set(errors) & set(PATH_BREAKING)
    return GoalPath(
        goal=goal, position=position, mission_type=kind, reached=True, action_sets=len(actions),
        done_before=len(before), matched=len(walk.accepted),
        progress=len(walk.accepted) / len(actions) if actions else None,
        steps=len(walk.turns), fewest_steps=least, valid_order="wrong_order" not in errors, completed=completed,
        success=success, optimal=success and not errors and len(walk.turns) <= least, errors=errors)


def goal_paths(trajectory: Trajectory, task: Task, inputs: PathInputs | None = None) -> list[GoalPath]:
    """Every goal of the task in order: reached goals evaluated, the others marked not reached (`inputs`: the
    trajectory's, when already made)."""
    inputs = inputs or PathInputs.of(trajectory, task)
    matched, spans = inputs.matched, inputs.spans
    parallel = not trajectory.one_tool_per_turn
    out = []
    for i, goal in enumerate(task.goals):
        if i >= len(spans):
            out.append(GoalPath(goal=goal, position=i + 1, mission_type=mission_type(task, goal),
                                reached=False, action_sets=len(task.action_sets_for(goal))))
            continue
        span = (spans[i].start, spans[i].end)
        messages = [m for m in trajectory.messages if span[0] <= m.index < span[1]]
        out.append(goal_path(task, goal, i + 1, matched, span, messages, parallel))
    return out
