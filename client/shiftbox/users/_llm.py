"""The LLM user simulator: any litellm model playing the task's customer, shifting goals by the paper's rules.

Its system prompt holds the persona (traits and example phrasings from the persona catalog), the
task's instructions (reason for call, known/unknown info, task instructions), the goal list in order
and the shift rules: one goal at a time; move on when the current goal's work is done, when the
agent asks whether there is anything else, or after `MAX_USER_TURNS_PER_GOAL` messages on the same
goal; never reveal later goals early; end with ###STOP### only after *seeing* the last action
completed (not right after confirming it: a tau2 lesson); ###TRANSFER### when transferred.

Goal shifts are marked by a control token: the message that begins a goal starts with
`<<GOAL:label>>`. The simulator strips every control token (wherever it appears) before returning
`UserReply.content`, and sets `UserReply.goal` from it, so the harness records the exact message of
each shift and the agent never sees a token. Label resolution: a label of the list at or after the
current goal moves there (the current one: no shift); an earlier label is ignored; an unknown label
means "the next goal". With several tokens in one message the first decides. No token: same goal
(the first message is on the first goal whatever it says).

The model sees the conversation from its side: its own messages are `assistant` (with the goal
token put back where a goal began, so it remembers what it marked), the agent's texts are `user`,
tool calls and results are left out. Everything in the request is derived from the task and the
conversation, so a replay sends the same requests. Empty completions are retried (with a one-line
reminder added) up to `max_empty_retries` times, then the simulator raises.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..errors import LLMBadReply
from ..llm import LLMRequest, LLMSettings, Usage, first_message, parse_llm_options
from ..tasks import Task
from ..trajectory import Message, ToolCallRecord, UserSimulatorInfo
from ._personas import Persona, get_persona
from ._protocol import UserContext, UserReply, UserSimulator
from ._scripted import (
    MAX_USER_TURNS_PER_GOAL,
    domain_goal_requests,
    parse_known_info,
    usable_requests,
)

GOAL_TOKEN = re.compile(r"<<\s*GOAL\b\s*:?\s*([^<>]*?)\s*>>", re.IGNORECASE)
"""`<<GOAL:label>>` (lenient about spaces and case); `<<GOAL>>` matches too, with an empty label."""

OPENING = "(The conversation starts now: write your first message to the customer service agent.)"
EMPTY_REMINDER = "Your previous reply was empty. Write the customer's next message now."
DEFAULT_MAX_EMPTY_RETRIES = 2

USER_PROMPT = """\
You are playing a customer who contacts {domain} customer service, to test a customer service \
agent. You are the customer, never the agent. Write only what the customer says next: one \
message, in plain text, with no stage directions or explanations.

## Your persona
{persona}

## Your situation
Reason for contacting: {reason_for_call}
What you know: {known_info}
What you do not know: {unknown_info}
Instructions: {task_instructions}
{goals}
## Rules
{rules}"""

GOAL_RULES = """\
1. Pursue one goal at a time, in the order listed, starting with goal 1.
2. Move on to the next goal as soon as one of these happens: the agent has done what the current \
goal needs (you have seen the result); the agent asks whether there is anything else it can help \
with; or you have already sent {max_turns} messages about the current goal.
3. Never mention, hint at or ask about a goal before its turn comes.
4. The message that begins a goal - your very first message included - must start with the marker \
<<GOAL:label>>, with the goal's exact label from the list (for example <<GOAL:{first}>>). Use the \
marker only there. The agent never sees it.
"""

COMMON_RULES = """\
{n}. Give only facts from "What you know", and only when they are needed or asked for. If asked \
for something you do not know, say you do not know it. Never invent ids, numbers, names or dates.
{n1}. When the agent asks you to confirm an action, answer it; that does not finish anything. End the \
conversation only after the agent has told you that the last {what} has actually been completed: \
then write a short closing message that ends with ###STOP###.
{n2}. If the agent transfers you to a human agent, reply with ###TRANSFER###.
{n3}. If the agent makes clear that nothing you still need can be handled here, end with \
###OUT-OF-SCOPE###."""

_DISCLOSURE = {
    "when_asked": "Give identifying details only when the agent asks for them, and only the ones asked for.",
    "all_at_once": "When the agent asks for any identifying detail, give everything you know at once.",
}


def strip_control_tokens(text: str) -> tuple[str, list[str]]:
    """The text without any `<<GOAL:...>>` token (whitespace tidied) and the labels found, in order."""
    labels = [m.group(1) for m in GOAL_TOKEN.finditer(text)]
    if not labels:
        return text.strip(), []
    cleaned = GOAL_TOKEN.sub(" ", text)
    cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
    cleaned = re.sub(r"[ \t]*\n[ \t]*", "\n", cleaned)
    return cleaned.strip(), labels


def normalize_label(label: str) -> str:
    return re.sub(r"[\s-]+", "_", label.strip().strip("'\"`").strip().lower())


def next_goal_index(goals: list[str], current: int, labels: list[str]) -> int:
    """Where a message with these goal labels leaves the user (see the module docstring)."""
    if not goals:
        return current
    start = max(current, 0)
    if labels:
        wanted = normalize_label(labels[0])
        ahead = [j for j in range(start, len(goals)) if normalize_label(goals[j]) == wanted]
        if ahead:
            return ahead[0]
        if any(normalize_label(g) == wanted for g in goals):  # an earlier goal: stay
            return start
        return min(current + 1, len(goals) - 1)
    return start


def _quotes(templates: tuple[str, ...]) -> str:
    return "; ".join(f'"{p}"' for p in templates)


def persona_text(persona: Persona) -> str:
    lines = [persona.summary,
             f"Tone: {persona.tone}. Verbosity: {persona.verbosity}. Cooperation: {persona.cooperation}.",
             _DISCLOSURE[persona.disclosure]]
    if persona.answers_after_asks > 1:
        lines.append(f"The first {persona.answers_after_asks - 1} time(s) the agent asks for an identifying "
                     "detail, deflect vaguely instead of giving it, for example: "
                     f"{_quotes(persona.deflections)} (with the detail named); give it when asked again.")
    if persona.policy_push:
        lines.append("Once, the first time the agent asks you for details or for a confirmation, push against "
                     f"its rules instead of answering, for example: {_quotes(persona.policy_push)}; "
                     "after that, cooperate.")
    if persona.announces_shifts:
        lines.append(f"How you move to a new topic, for example: {_quotes(persona.transition_phrases)}")
    else:
        lines.append("When you move to a new goal, never announce it (no 'also', 'one more thing', "
                     "'by the way' or the like): simply start talking about the new request.")
    lines.append(f"How you end, for example: {_quotes(persona.closings)}")
    return "\n".join(lines)


def goals_text(task: Task) -> str:
    """The numbered goal list, each with an example request (the domain's phrasings, filled from
    known_info) when one fits."""
    if not task.goals:
        return ""
    facts = parse_known_info(task.user_scenario.instructions.known_info)
    requests = domain_goal_requests(task.domain)
    lines = ["", "## Your goals, in this order"]
    for i, goal in enumerate(task.goals, 1):
        examples = usable_requests(requests.get(goal, ()), facts)
        example = f' - for example: "{examples[0]}"' if examples else ""
        lines.append(f"{i}. {goal}{example}")
    return "\n".join(lines) + "\n"


def system_prompt(task: Task, persona: Persona) -> str:
    instructions = task.user_scenario.instructions
    goals = list(task.goals)
    rules = GOAL_RULES.format(max_turns=MAX_USER_TURNS_PER_GOAL, first=goals[0]) if goals else ""
    n = 5 if goals else 1
    rules += COMMON_RULES.format(n=n, n1=n + 1, n2=n + 2, n3=n + 3,
                                 what="goal's action" if goals else "action you needed")
    return USER_PROMPT.format(
        domain=task.domain, persona=persona_text(persona),
        reason_for_call=instructions.reason_for_call.strip() or "(see your goals)",
        known_info=instructions.known_info.strip() or "nothing in particular",
        unknown_info=instructions.unknown_info.strip() or "nothing in particular",
        task_instructions=instructions.task_instructions.strip() or "none",
        goals=goals_text(task), rules=rules)


def simulator_view(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation from the simulator's side (roles flipped, tools left out, same roles merged)."""
    out: list[dict[str, Any]] = [{"role": "user", "content": OPENING}]
    previous_goal: str | None = None
    first_user = True
    for m in messages:
        if m.role == "user":
            text = m.content or ""
            if m.goal is not None and (first_user or m.goal != previous_goal):
                text = f"<<GOAL:{m.goal}>> {text}"
            previous_goal, first_user = m.goal, False
            role = "assistant"
        elif m.role == "assistant" and m.content:
            role, text = "user", m.content
        else:
            continue
        if out[-1]["role"] == role:
            out[-1] = {"role": role, "content": f"{out[-1]['content']}\n\n{text}"}
        else:
            out.append({"role": role, "content": text})
    return out


def prompt_sha256() -> str:
    """sha256 of the templates the system prompt and the opening are made from."""
    parts = [OPENING, USER_PROMPT, GOAL_RULES, COMMON_RULES, *(f"{k}={v}" for k, v in sorted(_DISCLOSURE.items()))]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


class LLMUser(UserSimulator):
    """`litellm:<model>`: a model plays the task's customer; goal shifts come from its control tokens."""

    def __init__(self, settings: LLMSettings, max_empty_retries: int = DEFAULT_MAX_EMPTY_RETRIES):
        if max_empty_retries < 0:
            raise ValueError("max_empty_retries must be >= 0")
        self.settings = settings
        self.max_empty_retries = max_empty_retries
        self.name = f"litellm:{settings.model}"
        self.task: Task | None = None
        self.seed: int | None = None
        self.system_prompt = ""
        self.goals: list[str] = []
        self.index = -1
        self.turns_on_goal = 0
        self.usage = Usage()
        """Running totals over this simulator's calls."""

    async def start(self, context: UserContext) -> None:
        self.task, self.seed = context.task, context.seed
        self.goals = list(context.task.goals)
        self.system_prompt = system_prompt(context.task, get_persona(context.task.user_scenario.persona))
        self.index, self.turns_on_goal = -1, 0

    def identity(self) -> UserSimulatorInfo:
        from ._personas import catalog_identity

        version, digest = catalog_identity()
        return UserSimulatorInfo(kind="litellm", model=self.settings.model, prompt_sha256=prompt_sha256(),
                                 personas_version=version, personas_sha256=digest)

    @property
    def goal(self) -> str | None:
        return self.goals[self.index] if self.goals and self.index >= 0 else None

    def _reminder(self) -> str | None:
        if not self.goals or self.index < 0 or self.turns_on_goal < MAX_USER_TURNS_PER_GOAL:
            return None
        if self.index + 1 < len(self.goals):
            return (f"Reminder: you have sent {self.turns_on_goal} messages about '{self.goal}'. Move on to "
                    f"your next goal now, starting with <<GOAL:{self.goals[self.index + 1]}>>.")
        return (f"Reminder: you have sent {self.turns_on_goal} messages about '{self.goal}', your last goal. "
                "If the agent has completed it, end with ###STOP###; otherwise you may end now with ###STOP###.")

    def request(self, messages: list[Message], empty_replies: int = 0) -> LLMRequest:
        chat: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}, *simulator_view(messages)]
        reminder = self._reminder()
        if reminder:
            chat.append({"role": "system", "content": reminder})
        if empty_replies:
            chat.append({"role": "system", "content": EMPTY_REMINDER})
        return LLMRequest(role="user", model=self.settings.model, messages=chat,
                          params=self.settings.params(self.seed))

    async def respond(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        if self.task is None:
            raise RuntimeError("LLMUser.respond() called before start()")
        for attempt in range(self.max_empty_retries + 1):
            response = await self.settings.complete(self.request(messages, attempt),
                                                    what=f"user simulator {self.name}")
            self.usage += Usage.of_response(response)
            raw = first_message(response).get("content")
            text, labels = strip_control_tokens(raw if isinstance(raw, str) else "")
            if text:
                return self._reply(text, labels)
        raise LLMBadReply(f"user simulator {self.name}: the model returned an empty message "
                          f"{self.max_empty_retries + 1} times", "empty_reply")

    def _reply(self, text: str, labels: list[str]) -> UserReply:
        index = next_goal_index(self.goals, self.index, labels)
        self.turns_on_goal = 1 if index != self.index else self.turns_on_goal + 1
        self.index = index
        return UserReply(content=text, goal=self.goal)


def llm_user(model: str | None, options: dict[str, str]) -> LLMUser:
    settings, own = parse_llm_options("litellm user simulator", model, options,
                                      specific={"max_empty_retries": int})
    return LLMUser(settings, **own)
