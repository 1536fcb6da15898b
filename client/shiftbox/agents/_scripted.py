"""Scripted agents for offline runs and metric tests: an oracle and flawed variants of it.

The oracle knows the task (it is privileged: `AgentContext.task`) and the goal each user message
serves (`Message.goal`, never shown to LLM agents). On each new goal it acknowledges the goal and
performs that goal's gold action sets in dependency order, then reports what the tools returned
(including the task's communicate_info facts found in the results) and asks whether there is
anything else. The flawed variants change one behaviour each, so their metric values are known in
advance.
"""

from __future__ import annotations

import json
import re
from typing import Any

from shiftbox_servers.kit import TRANSFER_TOOL, domain_of, namespaced

from ..tasks import ActionSet, Task
from ..trajectory import Message, ToolCall
from ._protocol import Agent, AgentContext, AgentReply

IDENTITY_REQUEST = "Before we start, could you confirm your full name and phone number?"
CLARIFY_REQUEST = "Could you tell me the details I need for this request?"
"""The oracle's question on a clarify goal, before its calls (the goal's gold path: ask, call, answer)."""


def _humanize(goal: str) -> str:
    """A goal label in words ('account info'; a namespaced one, 'banking__account_info': 'banking account info')."""
    return re.sub(r"_+", " ", goal)


def _normalize(text: str) -> str:
    return re.sub(r"[$,]", "", text).lower()


class OracleAgent(Agent):
    """Performs the gold action sets goal by goal, acknowledging each new goal at once."""

    name = "scripted:oracle"
    privileged = True

    def __init__(self) -> None:
        self.context: AgentContext | None = None
        self.task: Task | None = None
        self.turn = 0
        self.asked_identity = False
        self.current_goal: str | None = None
        self.pending: list[ActionSet] = []
        self.done: set[str] = set()
        self.goal_results: list[Any] = []
        self.communicated: set[str] = set()
        self.read_only: set[str] = set()
        self.made: list[ToolCall] = []

    async def start(self, context: AgentContext) -> None:
        if context.task is None:
            raise ValueError("the scripted oracle needs the task (AgentContext.task)")
        self.context, self.task = context, context.task
        self.read_only = {t["name"] for t in context.tools if (t.get("annotations") or {}).get("readOnlyHint")}

    # -- the conversation --------------------------------------------------------------------

    async def respond(self, messages: list[Message]) -> AgentReply:
        reply = self._next(messages)
        self.turn += 1
        return reply

    def _next(self, messages: list[Message]) -> AgentReply:
        last = messages[-1]
        if last.role == "tool":
            self.goal_results.append(last.content)
            return self._continue_goal()
        goal = last.goal
        if not self.asked_identity:
            self.asked_identity = True
            return self.ask_identity()
        if goal is not None and goal != self.current_goal:
            return self.on_new_goal(goal, first=self.current_goal is None)
        if self.pending:
            return self._continue_goal()
        return AgentReply(content="That is all taken care of. Is there anything else I can help with?")

    def ask_identity(self) -> AgentReply:
        return AgentReply(content=IDENTITY_REQUEST)

    def on_new_goal(self, goal: str, first: bool) -> AgentReply:
        self.current_goal = goal
        self.pending = [a for a in self.task.action_sets_for(goal) if a.action_id not in self.done]
        self.goal_results = []
        ack = f"Sure, I can help you with {_humanize(goal)}."
        if self.task.action_types.get(goal) == "clarify" and self._needs_a_call():
            return AgentReply(content=f"{ack} {CLARIFY_REQUEST}")  # MMTB's clarify path: ask, then call, then answer
        calls = self._ready_calls()
        if not calls:
            return AgentReply(content=ack + " " + self._summary())
        return AgentReply(content=ack, tool_calls=calls)

    def _needs_a_call(self) -> bool:
        """A pending gold call not made before (with equal arguments) in this conversation: one made already leaves
        the user nothing to clarify (the goal may be resolved as it asks)."""
        made = {(c.name, json.dumps(c.arguments, sort_keys=True)) for c in self.made}
        return any((a.allowed_tools[0].function_name, json.dumps(a.allowed_tools[0].params, sort_keys=True)) not in made
                   for a in self.pending)

    def _continue_goal(self) -> AgentReply:
        calls = self._ready_calls()
        if calls:
            return AgentReply(tool_calls=calls)
        return AgentReply(content=self._summary())

    def _ready_calls(self) -> list[ToolCall]:
        """Next gold calls whose dependencies are done (all of them at once unless one per turn)."""
        ready = [a for a in self.pending if all(d in self.done for d in a.depends_on)] or self.pending[:1]
        if self.context.one_tool_per_turn:
            ready = ready[:1]
        calls = []
        for i, action in enumerate(ready):
            self.pending.remove(action)
            self.done.add(action.action_id)
            calls.extend(self.calls_for(action, i))
        self.made.extend(calls)
        return calls

    def calls_for(self, action: ActionSet, i: int) -> list[ToolCall]:
        spec = action.allowed_tools[0]
        return [ToolCall(id=f"call_{self.turn}_{i}", name=spec.function_name, arguments=dict(spec.params))]

    def _summary(self) -> str:
        facts = self._facts_to_communicate()
        said = f" Here is what I found: {'; '.join(facts)}." if facts else ""
        return f"Done with your {_humanize(self.current_goal or 'request')} request.{said} " \
               "Is there anything else I can help with?"

    def _facts_to_communicate(self) -> list[str]:
        """communicate_info items seen in this goal's results (all remaining ones on the last goal)."""
        items = [c for c in self.task.evaluation_criteria.communicate_info if c not in self.communicated]
        seen = _normalize(" ".join(str(r) for r in self.goal_results))
        last_goal = self.current_goal == self.task.goals[-1]
        facts = [c for c in items if last_goal or _normalize(c) in seen]
        self.communicated.update(facts)
        return facts


class LateAckAgent(OracleAgent):
    """Flaw: on every goal after the first, spends one turn on the old topic before acknowledging."""

    name = "scripted:late_ack"

    def __init__(self) -> None:
        super().__init__()
        self.stalled: set[str] = set()

    def on_new_goal(self, goal: str, first: bool) -> AgentReply:
        if not first and goal not in self.stalled:
            self.stalled.add(goal)
            return AgentReply(content="Let me first make sure everything from before is complete on my side.")
        return super().on_new_goal(goal, first)


class RedundantAgent(OracleAgent):
    """Flaw: calls every read-only gold tool twice with the same arguments."""

    name = "scripted:redundant"

    def calls_for(self, action: ActionSet, i: int) -> list[ToolCall]:
        calls = super().calls_for(action, i)
        if calls[0].name in self.read_only:
            dup = calls[0].model_copy(update={"id": calls[0].id + "_again"})
            calls.append(dup)
        return calls


class TransferOnShiftAgent(OracleAgent):
    """Flaw: hands the customer to a human as soon as the goal changes."""

    name = "scripted:transfer_on_shift"

    def on_new_goal(self, goal: str, first: bool) -> AgentReply:
        if first:
            return super().on_new_goal(goal, first)
        summary = f"Customer changed topic to {_humanize(goal)}; transferring."
        domain = domain_of(goal)  # across domains, the transfer tool of the new goal's domain
        tool = namespaced(domain, TRANSFER_TOOL) if domain else TRANSFER_TOOL
        return AgentReply(content="I'll transfer you to a colleague who can help with that.",
                          tool_calls=[ToolCall(id=f"call_{self.turn}_0", name=tool, arguments={"summary": summary})])


class WrongParamsAgent(OracleAgent):
    """Flaw: the first call of every goal carries an argument the tool does not accept, then it retries."""

    name = "scripted:wrong_params"

    def __init__(self) -> None:
        super().__init__()
        self.broken: set[str] = set()

    def calls_for(self, action: ActionSet, i: int) -> list[ToolCall]:
        calls = super().calls_for(action, i)
        if self.current_goal not in self.broken:
            self.broken.add(self.current_goal)
            bad = calls[0].model_copy(update={"id": calls[0].id + "_bad",
                                              "arguments": {**calls[0].arguments, "note": "urgent"}})
            calls.insert(0, bad)
        return calls


class FirstDomainOnlyAgent(OracleAgent):
    """Flaw (cross-domain conversations): serves only the domain of the first goal; a goal of another domain
    gets an apology and none of its calls. A single-domain conversation gets the oracle."""

    name = "scripted:first_domain_only"

    def __init__(self) -> None:
        super().__init__()
        self.home: str | None = None

    def on_new_goal(self, goal: str, first: bool) -> AgentReply:
        if first:
            self.home = domain_of(goal)
        if domain_of(goal) == self.home:
            return super().on_new_goal(goal, first)
        self.current_goal, self.pending, self.goal_results = goal, [], []
        return AgentReply(content=f"I'm sorry, I can only help with your {self.home} matters here. "
                                  "Is there anything else I can help with?")


SCRIPTED_AGENTS: dict[str, type[OracleAgent]] = {
    "oracle": OracleAgent,
    "late_ack": LateAckAgent,
    "redundant": RedundantAgent,
    "transfer_on_shift": TransferOnShiftAgent,
    "wrong_params": WrongParamsAgent,
    "first_domain_only": FirstDomainOnlyAgent,
}


def scripted_agent(variant: str, **_: Any) -> OracleAgent:
    """`scripted:<variant>`: oracle or one of its flawed variants."""
    if variant not in SCRIPTED_AGENTS:
        raise ValueError(f"unknown scripted agent {variant!r}; choose one of: {', '.join(SCRIPTED_AGENTS)}")
    return SCRIPTED_AGENTS[variant]()

