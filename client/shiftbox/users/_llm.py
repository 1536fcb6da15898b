"""The LLM user simulator: any litellm model playing the task's customer, shifting goals by the reference protocol.

Option `protocol` (recorded in the simulator's identity):
- `reference` (default): shiftbox's own prompt implementing AgentChangeBench's user protocol. Its system
  prompt holds the persona (traits, example phrasings and its way of changing goals, from the persona
  catalog), the task's instructions, the goal list in order and the shift rules: move on when the agent
  has given a resolution step for the current goal (even if not fully resolved), asks whether there is
  anything else, offers a transfer to a human, has failed to verify you twice, or says it cannot help;
  or after the persona's `patience` messages on one goal (4 for most); ask the agent to pause
  unfinished work when interrupting it; stack requests only as the persona does; end with ###STOP### only
  after *seeing* the last goal's action completed (a tau2 lesson), ###TRANSFER### when actually transferred
  on the last goal, ###OUT-OF-SCOPE### when the last goal cannot be served.
- `completion`: shiftbox's earlier rules (move on only when the goal is done, "anything else?", or after
  4 messages; a transfer or "cannot help" ends the call).
- `agentchangebench`: the reference's own texts, verbatim: `user_policy.md` and the persona's description
  from `user_personas.json`, read from a local copy of the AgentChangeBench repository given with
  `reference=DIR` (shiftbox/users/_reference_texts.py), with the scenario laid out as the reference lays it
  out, plus shiftbox's goal-marker instruction (the harness needs it to record shifts).

Goal shifts are marked by control tokens: the message that begins a goal starts with `<<GOAL:label>>`; a
message that asks for several goals at once (a stacked request) carries one token per goal, in order. The
simulator strips every control token (wherever it appears) before returning `UserReply.content`, and sets
`UserReply.goal` from the first token and `UserReply.stacked` from the others, so the harness records the
exact message of each shift and the agent never sees a token. Label resolution: a label of the list at or
after the current goal moves there (the current one: no shift); an earlier label is ignored; an unknown
label means "the next goal". Later tokens of the same message name stacked goals beyond the first (goals
already asked for are not raised again). No token: same goal (the first message is on the first goal
whatever it says).

The model sees the conversation from its side: its own messages are `assistant` (with the goal tokens put
back where it raised goals, so it remembers what it marked), the agent's texts are `user`, tool calls and
results are left out. Everything in the request is derived from the task and the conversation, so a replay
sends the same requests. Empty completions are retried (with a one-line reminder added) up to
`max_empty_retries` times, then the simulator raises.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ..errors import LLMBadReply
from ..llm import Endpoint, LLMRequest, LLMSettings, Usage, first_message, parse_llm_options
from ..tasks import Task
from ..trajectory import Message, ToolCallRecord, UserSimulatorInfo
from ._personas import Persona, get_persona
from ._protocol import UserContext, UserReply, UserSimulator
from ._reference_texts import ReferenceTexts, check_reference_dir, load_reference_texts
from ._scripted import (
    DEFAULT_PROTOCOL,
    MAX_USER_TURNS_PER_GOAL,
    PROTOCOLS,
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
1. Pursue your goals in the order listed, starting with goal 1, one at a time unless your persona \
stacks requests (see its way of changing goals). Do not bring up a goal earlier than these rules allow.
2. Move on to your next goal as soon as any one of these happens:
   a. the agent has given you a step towards resolving the current goal - an action taken, an answer, \
instructions - even if the goal is not fully resolved yet;
   b. the agent asks whether there is anything else it can help with, or offers further help;
   c. the agent offers to transfer you to a human agent: bring up your next goal instead, before any \
transfer happens;
   d. the agent has failed to verify you twice: it asked you again for identifying details after you \
had given some, two times on this goal;
   e. the agent says it cannot help with the current goal;
   f. you have already sent {patience} messages about the current goal.
   Your persona may change goals sooner or later than this; follow its way of changing goals.
3. When you move on while the agent's work on the current goal is unfinished, you interrupt it: ask the \
agent to pause that work safely (for example: {pauses}), unless your persona simply abandons it.
4. Announce each change the way a real customer would, in your persona's voice (see its examples). Never \
mention goals, lists, numbers or markers.
5. The message that begins a goal - your very first message included - must start with the marker \
<<GOAL:label>>, with the goal's exact label from the list (for example <<GOAL:{first}>>). A message that \
asks for several goals at once starts with one marker per goal, in order. When you later turn to a goal \
you already asked for, start that message with its marker again. Use markers only there; the agent never \
sees them.
"""

COMPLETION_RULES = """\
1. Pursue one goal at a time, in the order listed, starting with goal 1.
2. Move on to the next goal as soon as one of these happens: the agent has done what the current \
goal needs (you have seen the result); the agent asks whether there is anything else it can help \
with; or you have already sent {patience} messages about the current goal.
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
{n2}. {transfer}
{n3}. {out_of_scope}"""

TRANSFER_RULE = {
    "reference": "If the agent actually transfers you to a human agent while you are on your last goal, reply with "
                 "###TRANSFER###.",
    "completion": "If the agent transfers you to a human agent, reply with ###TRANSFER###.",
}
OUT_OF_SCOPE_RULE = {
    "reference": "If the agent makes clear that your last goal cannot be handled here, end with ###OUT-OF-SCOPE###.",
    "completion": "If the agent makes clear that nothing you still need can be handled here, end with "
                  "###OUT-OF-SCOPE###.",
}

MARKER_ADDENDUM = """\

## Goal markers (required by the evaluation harness)
Your goals, in order: {goals}. The message in which you first bring up a goal - your very first message \
included - must start with the marker <<GOAL:label>> with that goal's exact label (for example \
<<GOAL:{first}>>); a message that brings up several goals starts with one marker per goal, in order. The \
harness removes the markers before the agent sees your message, so they do not expose your goal sequence.
"""

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
    """Where a message with these goal labels leaves the user: its first label decides (module docstring)."""
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


def stacked_goal_indices(goals: list[str], index: int, labels: list[str]) -> list[int]:
    """The goals a message's labels after the first raise beyond goal `index` (a stacked request), in order."""
    stacked: list[int] = []
    for label in labels[1:]:
        last = stacked[-1] if stacked else index
        j = next_goal_index(goals, last, [label])
        if j > last:
            stacked.append(j)
    return stacked


def _quotes(templates: tuple[str, ...]) -> str:
    return "; ".join(f'"{p}"' for p in templates)


def persona_text(persona: Persona, goal_change: bool = True) -> str:
    """The persona section: traits, example phrasings and (goal_change) its way of changing goals."""
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
    if goal_change:
        lines.append(f"Your way of changing goals: {persona.goal_change.behaviour}")
        lines.extend(_goal_change_lines(persona))
    if persona.announces_shifts:
        lines.append(f"How you move to a new topic, for example: {_quotes(persona.transition_phrases)}")
    else:
        lines.append("When you move to a new goal, never announce it (no 'also', 'one more thing', "
                     "'by the way' or the like): simply start talking about the new request.")
    lines.append(f"How you end, for example: {_quotes(persona.closings)}")
    return "\n".join(lines)


def _goal_change_lines(persona: Persona) -> list[str]:
    """The persona's goal-change switches as instructions (the scripted user follows the same data exactly)."""
    change = persona.goal_change
    lines = []
    if change.moves_on_at == "resolution":
        lines.append("A first step is not enough for you: wait until the current goal is resolved before moving "
                     "on (the agent asking whether there is anything else, offering a transfer, saying it cannot "
                     "help or failing to verify you twice still move you on).")
    if change.stall_limit is not None:
        lines.append(f"If {change.stall_limit} of the agent's replies on a goal neither do anything for it nor ask "
                     "you anything, switch to your next goal at once.")
    if change.stack > 1:
        lines.append(f"When you move on, ask for your next {change.stack} goals together in one message.")
    if change.patience != MAX_USER_TURNS_PER_GOAL:
        lines.append(f"You move on after {change.patience} messages on the same goal at most.")
    if change.repeated_asks != "answer":
        then = " and drop the current goal for your next one" if change.repeated_asks == "refuse_and_move_on" else ""
        lines.append(f"Refuse to repeat details you already gave{then}, for example: {_quotes(change.refusals)}")
    if change.pause_phrases:
        lines.append(f"How you interrupt unfinished work, for example: {_quotes(change.pause_phrases)}")
    else:
        lines.append("When you leave unfinished work, you simply leave it: you never ask the agent to pause it.")
    return lines


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


def system_prompt(task: Task, persona: Persona, protocol: str = DEFAULT_PROTOCOL,
                  reference: ReferenceTexts | None = None) -> str:
    """The system prompt for this task: shiftbox's own (`reference`, `completion`) or the reference's texts."""
    if protocol == "agentchangebench":
        if reference is None:
            raise ValueError("protocol=agentchangebench needs the reference texts (reference=DIR)")
        return reference_prompt(task, reference)
    instructions = task.user_scenario.instructions
    goals = list(task.goals)
    rules = ""
    if goals:
        template = GOAL_RULES if protocol == "reference" else COMPLETION_RULES
        patience = persona.goal_change.patience if protocol == "reference" else MAX_USER_TURNS_PER_GOAL
        pauses = _quotes(persona.goal_change.pause_phrases) or '"can we put that on hold for now?"'
        rules = template.format(patience=patience, first=goals[0], pauses=pauses)
    n = (6 if protocol == "reference" else 5) if goals else 1
    rules += COMMON_RULES.format(n=n, n1=n + 1, n2=n + 2, n3=n + 3,
                                 what="goal's action" if goals else "action you needed",
                                 transfer=TRANSFER_RULE[protocol], out_of_scope=OUT_OF_SCOPE_RULE[protocol])
    return USER_PROMPT.format(
        domain=task.domain, persona=persona_text(persona, goal_change=protocol == "reference"),
        reason_for_call=instructions.reason_for_call.strip() or "(see your goals)",
        known_info=instructions.known_info.strip() or "nothing in particular",
        unknown_info=instructions.unknown_info.strip() or "nothing in particular",
        task_instructions=instructions.task_instructions.strip() or "none",
        goals=goals_text(task), rules=rules)


def reference_prompt(task: Task, reference: ReferenceTexts) -> str:
    """The reference's user policy verbatim, the goal-marker addendum, and the scenario laid out as the reference
    lays out a user scenario (persona description, instructions, goal shifts)."""
    instructions = task.user_scenario.instructions
    tab = "\t"

    def indent(text: str, depth: int = 1) -> str:
        return "\n".join(tab * depth + line if line else line for line in text.splitlines())

    scenario = []
    persona = reference.persona(task.user_scenario.persona)
    if persona:
        scenario += ["Persona:", indent(persona)]
    lines = [f"Domain: {task.domain}", f"Reason for call:\n{indent(instructions.reason_for_call)}",
             f"Known info:\n{indent(instructions.known_info)}", f"Unknown info:\n{indent(instructions.unknown_info)}",
             f"Task instructions:\n{indent(instructions.task_instructions)}"]
    scenario += ["Instructions:", indent("\n".join(lines))]
    goals = list(task.goals)
    if goals:
        shifts = task.user_scenario.goal_shifts
        scenario += ["Goal Shifts:", indent(repr({"required_shifts": shifts.required_shifts, "goals": goals}))]
    addendum = MARKER_ADDENDUM.format(goals=", ".join(goals), first=goals[0]) if goals else ""
    return f"{reference.policy.strip()}\n{addendum}\n<scenario>\n" + "\n".join(scenario) + "\n</scenario>"


def simulator_view(messages: list[Message], stacked: dict[int, list[str]] | None = None) -> list[dict[str, Any]]:
    """The conversation from the simulator's side (roles flipped, tools left out, same roles merged); `stacked`:
    the goals a user message (by index) stacked after its own, whose tokens are put back too."""
    out: list[dict[str, Any]] = [{"role": "user", "content": OPENING}]
    previous_goal: str | None = None
    first_user = True
    stacked = stacked or {}
    for m in messages:
        if m.role == "user":
            text = m.content or ""
            if m.goal is not None and (first_user or m.goal != previous_goal):
                tokens = "".join(f"<<GOAL:{g}>> " for g in [m.goal, *stacked.get(m.index, [])])
                text = f"{tokens}{text}"
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


def prompt_sha256(protocol: str = DEFAULT_PROTOCOL, reference: ReferenceTexts | None = None) -> str:
    """sha256 of the templates the system prompt and the opening are made from (and of the reference's texts,
    for protocol=agentchangebench)."""
    if protocol == "agentchangebench":
        parts = [OPENING, MARKER_ADDENDUM, reference.sha256() if reference else ""]
    elif protocol == "completion":
        parts = [OPENING, USER_PROMPT, COMPLETION_RULES, COMMON_RULES, TRANSFER_RULE[protocol],
                 OUT_OF_SCOPE_RULE[protocol]]
    else:
        parts = [OPENING, USER_PROMPT, GOAL_RULES, COMMON_RULES, TRANSFER_RULE[protocol], OUT_OF_SCOPE_RULE[protocol]]
    parts += [f"{k}={v}" for k, v in sorted(_DISCLOSURE.items())]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


LLM_PROTOCOLS = (*PROTOCOLS, "agentchangebench")


class LLMUser(UserSimulator):
    """`litellm:<model>`: a model plays the task's customer; goal shifts come from its control tokens."""

    def __init__(self, settings: LLMSettings, max_empty_retries: int = DEFAULT_MAX_EMPTY_RETRIES,
                 protocol: str = DEFAULT_PROTOCOL, reference: str | Path | None = None):
        if max_empty_retries < 0:
            raise ValueError("max_empty_retries must be >= 0")
        if protocol not in LLM_PROTOCOLS:
            raise ValueError(f"unknown shift protocol {protocol!r} for the LLM user; choose one of: "
                             f"{', '.join(LLM_PROTOCOLS)}")
        if reference is not None and protocol != "agentchangebench":
            raise ValueError("reference=DIR is read only with protocol=agentchangebench")
        self.reference_dir = check_reference_dir(str(reference) if reference else None) \
            if protocol == "agentchangebench" else None
        self.settings = settings
        self.max_empty_retries = max_empty_retries
        self.protocol = protocol
        self.name = f"litellm:{settings.model}"
        self.task: Task | None = None
        self.seed: int | None = None
        self.system_prompt = ""
        self.reference: ReferenceTexts | None = None
        self.goals: list[str] = []
        self.patience = MAX_USER_TURNS_PER_GOAL
        self.index = -1
        self.raised = -1
        self.turns_on_goal = 0
        self.stacked: dict[int, list[str]] = {}
        self.usage = Usage()
        """Running totals over this simulator's calls."""

    async def start(self, context: UserContext) -> None:
        self.task, self.seed = context.task, context.seed
        self.goals = list(context.task.goals)
        persona = get_persona(context.task.user_scenario.persona)
        if self.reference_dir is not None:
            self.reference = load_reference_texts(self.reference_dir, context.task.domain)
        self.system_prompt = system_prompt(context.task, persona, self.protocol, self.reference)
        self.patience = persona.goal_change.patience if self.protocol == "reference" else MAX_USER_TURNS_PER_GOAL
        self.index = self.raised = -1
        self.turns_on_goal = 0
        self.stacked = {}

    def endpoints(self) -> list[Endpoint]:
        return [self.settings.endpoint("user")]

    def identity(self) -> UserSimulatorInfo:
        from ._personas import catalog_identity

        version, digest = catalog_identity()
        return UserSimulatorInfo(kind="litellm", model=self.settings.model,
                                 prompt_sha256=prompt_sha256(self.protocol, self.reference),
                                 personas_version=version, personas_sha256=digest, protocol=self.protocol)

    @property
    def goal(self) -> str | None:
        return self.goals[self.index] if self.goals and self.index >= 0 else None

    def _reminder(self) -> str | None:
        if not self.goals or self.index < 0 or self.turns_on_goal < self.patience:
            return None
        if self.index + 1 < len(self.goals):
            return (f"Reminder: you have sent {self.turns_on_goal} messages about '{self.goal}'. Move on to "
                    f"your next goal now, starting with <<GOAL:{self.goals[self.index + 1]}>>.")
        return (f"Reminder: you have sent {self.turns_on_goal} messages about '{self.goal}', your last goal. "
                "If the agent has completed it, end with ###STOP###; otherwise you may end now with ###STOP###.")

    def request(self, messages: list[Message], empty_replies: int = 0) -> LLMRequest:
        chat: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt},
                                      *simulator_view(messages, self.stacked)]
        reminder = self._reminder()
        if reminder:
            chat.append({"role": "system", "content": reminder})
        if empty_replies:
            chat.append({"role": "system", "content": EMPTY_REMINDER})
        return LLMRequest.of_role("user", self.settings.model, chat, None, self.settings.params(self.seed))

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
                return self._reply(text, labels, len(messages))
        raise LLMBadReply(f"user simulator {self.name}: the model returned an empty message "
                          f"{self.max_empty_retries + 1} times", "empty_reply")

    def _reply(self, text: str, labels: list[str], at: int) -> UserReply:
        index = next_goal_index(self.goals, self.index, labels)
        stacked = [j for j in stacked_goal_indices(self.goals, index, labels) if j > self.raised]
        self.turns_on_goal = 1 if index != self.index else self.turns_on_goal + 1
        self.index = index
        self.raised = max([self.raised, index, *stacked])
        if stacked:
            self.stacked[at] = [self.goals[j] for j in stacked]
        return UserReply(content=text, goal=self.goal, stacked=self.stacked.get(at, []))


def llm_user(model: str | None, options: dict[str, str]) -> LLMUser:
    settings, own = parse_llm_options("litellm user simulator", model, options,
                                      specific={"max_empty_retries": int, "protocol": str, "reference": str})
    return LLMUser(settings, **own)
