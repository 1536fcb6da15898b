"""A deterministic stand-in for a competent LLM, playing both the agent and the user simulator.

Plugged into the fake OpenAI server (`fake_openai(ScriptedLLM(tasks))`), it answers each chat
completion from the request alone, so the real LLM code paths (prompts, tool schemas, tool-call
parsing, goal control tokens, record/replay) run end to end offline and produce goal-shifting
conversations worth recording as fixtures. As the user it reads its system prompt (the task's
known_info identifies the task) and moves through the goals with `<<GOAL:label>>` tokens; as the
agent it asks for identification, then performs the gold calls of the goal the user raised, reports
the results and asks whether there is anything else. `ScriptedJudge` plays the LLM judge likewise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from shiftbox_servers.kit import text_lines

from ..tasks import Task, canonical_value
from ..users._scripted import parse_known_info
from .fake_openai import Reply

GOAL_TOKEN = re.compile(r"<<\s*GOAL\s*:\s*([^<>]*?)\s*>>")
MAX_TURNS_ON_GOAL = 3


def _words(goal: str) -> str:
    return goal.replace("_", " ")


def _facts(task: Task) -> list[str]:
    facts = parse_known_info(task.user_scenario.instructions.known_info)
    return [v for kind in ("phone", "email", "customer_id", "name") for v in facts.get(kind, ()) if len(v) >= 5]


class ScriptedLLM:
    """Callable script for `fake_openai`: one deterministic reply per request."""

    def __init__(self, tasks: list[Task]):
        self.tasks = tasks

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        system = messages[0].get("content", "") if messages and messages[0].get("role") == "system" else ""
        if "What you know:" in system:
            return self.user(messages, system)
        return self.agent(messages)

    # -- the user simulator's model ---------------------------------------------------------

    def _task_for_user(self, system: str) -> Task:
        for task in self.tasks:
            known = task.user_scenario.instructions.known_info.strip()
            if known and known in system:
                return task
        raise LookupError("no task's known_info appears in the user simulator's prompt")

    def user(self, messages: list[dict], system: str) -> Reply:
        task = self._task_for_user(system)
        goals = task.goals
        own = [m.get("content") or "" for m in messages if m.get("role") == "assistant"]
        if not own:
            return Reply.text(f"<<GOAL:{goals[0]}>> Hello, I need help with {_words(goals[0])}.")
        labels = [label for text in own for label in GOAL_TOKEN.findall(text)]
        current = goals.index(labels[-1]) if labels and labels[-1] in goals else 0
        since = len(own) - max(i for i, text in enumerate(own) if GOAL_TOKEN.search(text) or i == 0)
        agent = (messages[-1].get("content") or "").lower() if messages[-1].get("role") == "user" else ""
        if "anything else" in agent or since >= MAX_TURNS_ON_GOAL:
            if current + 1 < len(goals):
                nxt = goals[current + 1]
                return Reply.text(f"<<GOAL:{nxt}>> Yes, actually. I also need help with {_words(nxt)}.")
            return Reply.text("No, that is everything. Thank you! ###STOP###")
        if any(w in agent for w in ("phone", "name", "verify", "confirm")):
            facts = parse_known_info(task.user_scenario.instructions.known_info)
            said = [f"my {kind.replace('_', ' ')} is {vals[0]}" for kind, vals in sorted(facts.items())
                    if kind in ("name", "phone", "dob", "customer_id", "email")]
            return Reply.text("Sure: " + ", ".join(said) + ".")
        return Reply.text(f"Could you please help me with {_words(goals[current])}?")

    # -- the agent's model ------------------------------------------------------------------

    def _task_for_agent(self, messages: list[dict]) -> Task | None:
        said = " ".join(m.get("content") or "" for m in messages if m.get("role") == "user")
        for task in self.tasks:
            if any(fact in said for fact in _facts(task)):
                return task
        return None

    def agent(self, messages: list[dict]) -> Reply:
        task = self._task_for_agent(messages)
        if task is None:
            return Reply.text("Hello! To get started, could you tell me your full name and phone number?")
        last_user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        goal = next((g for g in reversed(task.goals) if _words(g) in last_user.lower()), None)
        done = {json.dumps([c["function"]["name"], canonical_value(json.loads(c["function"]["arguments"] or "{}"))],
                           sort_keys=True)
                for m in messages if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])}
        goal = goal or next((g for g in task.goals if self._pending(task, g, done)), task.goals[-1])
        pending = self._pending(task, goal, done)
        if pending:
            calls = [(a.allowed_tools[0].function_name, dict(a.allowed_tools[0].params)) for a in pending]
            intro = None if messages[-1].get("role") == "tool" else f"Sure, let me take care of {_words(goal)}."
            return Reply.tools(*calls, content=intro)
        results = " ".join(m.get("content") or "" for m in messages if m.get("role") == "tool")
        found = [c for c in task.evaluation_criteria.communicate_info if c.lower() in results.lower()]
        facts = f" Here is what I found: {'; '.join(found)}." if found else ""
        return Reply.text(f"Your {_words(goal)} request is done.{facts} Is there anything else I can help with?")

    @staticmethod
    def _pending(task: Task, goal: str, done: set[str]):
        """Gold actions of `goal` not made yet whose dependencies are made (all of them when none is ready)."""
        def key(a):
            s = a.allowed_tools[0]
            return json.dumps([s.function_name, canonical_value(s.params)], sort_keys=True)

        made = {a.action_id for a in task.evaluation_criteria.action_sets if key(a) in done}
        todo = [a for a in task.action_sets_for(goal) if a.action_id not in made]
        ready = [a for a in todo if all(d in made for d in a.depends_on)]
        return ready or todo[:1]


_QUOTED = re.compile(r'"([^"]+)"')
_WINDOW = re.compile(r"<window>\n(.*?)\n</window>", re.DOTALL)
_RUBRIC = re.compile(r"<rubric>\n(.*?)\n</rubric>", re.DOTALL)
_SEEN = "seen: "
_ACK_GOAL = re.compile(r"The user's new goal: (.*)")
_ACK_MESSAGE = re.compile(r"<message>\n(.*?)\n</message>", re.DOTALL)
_CONVERSATION = re.compile(r"<conversation>\n(.*?)\n</conversation>", re.DOTALL)
_MESSAGE_LINE = re.compile(r"^(\d+):(user|assistant|tool):(.*)$", re.MULTILINE)
_GOAL_LIST = re.compile(r"Goals of the task, in order: \[(.*)\]\nMaximum number of shifts: (\d+)")


class ScriptedJudge:
    """Callable script for `fake_openai` playing the LLM judge, deterministically, from the prompt alone.

    A rubric window meets an item once every double-quoted phrase of the item (before the word "unless") has
    appeared in this window's transcript or in the item's notes, which carry the phrases seen so far from window to
    window (case-insensitively; an item without one is never met), and takes it back once a quoted phrase after
    "unless" has appeared (the agent undid it); an acknowledgment question is
    answered yes when the message names the goal's words; every NL assertion is met; the AgentChangeBench GSRT
    question is answered by `gsrt`. Used to record the rubric fixture (bench/record_rubric_fixture.py), its compat
    GSRT cassettes (bench/record_compat_gsrt_fixture.py) and in tests."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        prompt = (body.get("messages") or [{}])[-1].get("content") or ""
        conversation, goal_list = _CONVERSATION.search(prompt), _GOAL_LIST.search(prompt)
        if conversation and goal_list:
            goals = [g.strip() for g in goal_list.group(1).split(",") if g.strip()]
            return Reply.text(json.dumps(self.gsrt(conversation.group(1), goals, int(goal_list.group(2)))))
        window, items = _WINDOW.search(prompt), _RUBRIC.search(prompt)
        if window and items:
            return Reply.text(json.dumps({"verdicts": self.rubric(window.group(1), items.group(1))}))
        goal, message = _ACK_GOAL.search(prompt), _ACK_MESSAGE.search(prompt)
        if goal and message:
            said = _words(goal.group(1).strip()) in message.group(1).lower()
            return Reply.text(json.dumps({"acknowledges": said}))
        count = len(re.findall(r"^\d+\. ", prompt.split("Assertions about", 1)[-1], re.MULTILINE))
        return Reply.text(json.dumps({"verdicts": [{"index": i, "met": True, "reason": "shown"}
                                                   for i in range(1, count + 1)]}))

    @staticmethod
    def rubric(window: str, lines: str) -> list[dict[str, Any]]:
        """Every item's verdict and notes ("seen: phrase; phrase") from the window and the item's earlier notes."""
        text = window.lower()
        verdicts = []
        for line in text_lines(lines):
            state = json.loads(line)
            wanted, _, undo = state["item"].partition(" unless ")
            needed, undone = _QUOTED.findall(wanted), _QUOTED.findall(undo)
            notes = state["notes"]
            seen = [p for p in notes[len(_SEEN):].split("; ") if p] if notes.startswith(_SEEN) else []
            seen += [p for p in needed + undone if p.lower() in text and p not in seen]
            met = bool(needed) and all(p in seen for p in needed) and not any(p in seen for p in undone)
            verdicts.append({"index": state["index"], "met": met, "notes": _SEEN + "; ".join(seen) if seen else ""})
        return verdicts

    @staticmethod
    def gsrt(conversation: str, goals: list[str], required_shifts: int) -> dict[str, Any]:
        """The reference's GSRT judge output for `index:role:text` lines: the start goal is the first user message
        naming the first goal's words; a shift is a user message naming the next goal's (up to required_shifts);
        after it, ack = the first assistant message naming the new goal's words, tool = the first assistant message
        followed by a tool result, outcome = the first assistant message naming them and saying "request is done",
        transferred = an assistant message saying "transfer"."""
        lines = [(int(m[1]), m[2], m[3].lower()) for m in _MESSAGE_LINE.finditer(conversation)]
        said = [(i, text) for i, role, text in lines if role == "assistant"]
        start = next((i for i, role, text in lines if role == "user" and _words(goals[0]) in text), None)
        shifts, current = [], 0
        for i, role, text in lines:
            if role != "user" or current + 1 >= len(goals) or len(shifts) >= required_shifts:
                continue
            new = goals[current + 1]
            if _words(new) not in text:
                continue
            later = [(j, t) for j, t in said if j > i]
            ack = next((j for j, t in later if _words(new) in t and "transfer" not in t), None)
            tool = next((j for j, role, _ in lines if j > i and role == "assistant"
                         and any(k == j + 1 and r == "tool" for k, r, _ in lines)), None)
            outcome = next((j for j, t in later if _words(new) in t and "request is done" in t), None)
            shifts.append({"turn": i, "from": goals[current], "to": new, "type": "GOAL_SHIFT",
                           "agent_responded": bool(later), "agent_turn": later[0][0] if later else None,
                           "acknowledgment_turn": ack, "tool_turn": tool, "outcome_turn": outcome,
                           "transferred_to_human": any("transfer" in t for _, t in later)})
            current += 1
        return {"start_goal": {"turn": start, "goal": goals[0] if goals else None}, "user_goal_shifts": shifts}
