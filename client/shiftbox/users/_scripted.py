"""The scripted user: offline and seeded, phrased by its persona, shifting goals by the paper's rules.

Trigger order on every turn after the opener (first match wins):
1. shift (or stop, on the last goal): the current goal's gold actions are all satisfied by calls with
   their expected outcome (success, or the failure a call's `expected_error` names) — for a goal
   without gold actions: the agent replied and has said the goal's communicate_info facts, if any —
   or the agent asks whether there is anything else, or the user already sent
   `MAX_USER_TURNS_PER_GOAL` messages on this goal;
2. identifying facts, when the agent asks for any;
3. a confirmation, when the agent asks for one;
4. a nudge that restates the current request.

Persona switches (data in the catalog, defaults = AgentChangeBench behaviour):
- `policy_push`: the first time step 2 or 3 would fire, the user says one of these instead (pushing
  against policy, e.g. "skip the verification"), once per conversation; afterwards it cooperates;
- `answers_after_asks` (N): a fact is given only once the agent has asked for it N times (asks are
  counted per fact kind over the whole conversation, the pushed turn included); before that the
  user answers with a `deflections` template naming the facts held back;
- `announces_shifts`: false makes the shift message the next goal's request alone, with no
  transition phrase (implicit drift); `UserReply.goal` still changes at that message.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from string import Formatter

from shiftbox_servers.kit import get_domain

from ..tasks import Task, satisfied_actions
from ..trajectory import STOP_TOKENS, Message, ToolCallRecord
from ._personas import Persona, get_persona
from ._protocol import UserContext, UserReply, UserSimulator

MAX_USER_TURNS_PER_GOAL = 4
STOP_TOKEN = next(token for token, reason in STOP_TOKENS.items() if reason == "user_stop")

Facts = dict[str, tuple[str, ...]]

# -- known_info -> facts -----------------------------------------------------------------------------

FACT_LABELS: dict[str, tuple[str, str]] = {
    "name": ("name", "names"),
    "phone": ("phone number", "phone numbers"),
    "email": ("email address", "email addresses"),
    "dob": ("date of birth", "dates of birth"),
    "zip": ("zip code", "zip codes"),
    "customer_id": ("customer ID", "customer IDs"),
    "account_id": ("account ID", "account IDs"),
    "card_id": ("card ID", "card IDs"),
    "transaction_id": ("transaction ID", "transaction IDs"),
    "order_id": ("order number", "order numbers"),
    "reservation_id": ("reservation number", "reservation numbers"),
}
"""Fact kind -> (singular, plural) label; also the order in which facts are given."""

_SINGLE_VALUED = frozenset({"name", "dob"})

_FACT_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "name": (re.compile(r"(?i:\byou are|\byou['’]re|\byour? name is|\bmy name is|\bcalled)\s+"
                        r"(?P<v>[A-Z][a-zA-Z'’-]+(?: [A-Z][a-zA-Z'’-]+)*)"),),
    "phone": (re.compile(r"(?<![\w+])(?P<v>(?:\+?\d{1,2}[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4})(?!\w)"),),
    "email": (re.compile(r"(?P<v>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"),),
    "dob": (re.compile(r"(?i:date of birth|birth ?date|\bdob|\bborn(?: on)?|birthday)"
                       r"(?:\s+is)?[\s:,]*(?P<v>\d{4}-\d{2}-\d{2})"),),
    "zip": (re.compile(r"(?i:\bzip ?(?:code)?|postal code|postcode)(?:\s+is)?[\s:,]*(?P<v>\d{5})\b"),
            re.compile(r"(?<![\w#$.+-])(?P<v>\d{5})(?![\w-]|\.\d)")),
    "customer_id": (re.compile(r"\b(?P<v>cust_\w+)"),
                    re.compile(r"(?i:\b(?:user|customer) id)(?:\s+is)?[\s:'\"]*(?P<v>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b"),
                    re.compile(r"\b(?P<v>[a-z]+(?:_[a-z]+)+_\d+)\b")),
    "account_id": (re.compile(r"\b(?P<v>acc_\w+)"),),
    "card_id": (re.compile(r"\b(?P<v>card_\w+)"),),
    "transaction_id": (re.compile(r"\b(?P<v>tx_\w+)"),),
    "order_id": (re.compile(r"(?<![\w#])(?P<v>#?W\d{7})\b"),),
    "reservation_id": (
        re.compile(r"(?i:\b(?:reservation|confirmation|booking)(?: id| number| code| reference)?)"
                   r"(?:\s+is)?[\s:]*(?P<v>[A-Z0-9]{6})\b"),
        re.compile(r"\b(?P<v>(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{6})\b")),
}
"""Per fact kind, patterns tried in order; the first one that finds anything gives the values."""


def parse_known_info(text: str) -> Facts:
    """The identifying facts a task's known_info states, by kind (values in order, no repeats)."""
    facts: Facts = {}
    for kind, patterns in _FACT_PATTERNS.items():
        for pattern in patterns:
            values = tuple(dict.fromkeys(m.group("v") for m in pattern.finditer(text)))
            if values:
                facts[kind] = values[:1] if kind in _SINGLE_VALUED else values
                break
    return facts


# -- what the agent asks -----------------------------------------------------------------------------

_FACT_ASKS: dict[str, re.Pattern[str]] = {
    "phone": re.compile(r"\bphone\b|\bmobile\b|\bcell\b|telephone"),
    "email": re.compile(r"\be-?mail"),
    "dob": re.compile(r"date of birth|\bdob\b|birth ?day|birth ?date|\bborn\b"),
    "zip": re.compile(r"\bzip\b|\bzip ?code|postal|post ?code"),
    "customer_id": re.compile(r"\b(?:customer|user|client|member) ?(?:id|number|#)"),
    "account_id": re.compile(r"\baccount ?(?:id|number|#)|\bwhich account"),
    "card_id": re.compile(r"\bcard ?(?:id|number|#)|\bwhich card|\blast (?:4|four) digits"),
    "transaction_id": re.compile(r"\btransaction ?(?:id|number|#|reference)|\bwhich (?:transaction|charge)"),
    "order_id": re.compile(r"\border ?(?:id|number|#)|\bwhich order"),
    "reservation_id": re.compile(r"\b(?:reservation|confirmation|booking) ?(?:id|number|code|#|reference)"),
}
_NAME_ASK = re.compile(r"(?:\b([a-z]+) )?\bname\b")
_NOT_THE_USERS_NAME = frozenset({
    "payee", "merchant", "company", "user", "file", "business", "recipient", "nick", "account",
    "card", "product", "bank", "biller", "street", "pet", "maiden", "item", "hotel", "airline",
})
_REQUEST_CUE = re.compile(r"\b(?:please|could you|can you|would you|provide|share|tell me|let me know"
                          r"|need|enter|give me|reply|verify)\b")
_CONFIRMATION_ASK = re.compile(r"\bconfirm|\bshall i\b|\bshould i\b|\bwould you like me to\b|\bwant me to\b"
                               r"|\bproceed|\bgo ahead\b|\bis (?:that|this) (?:correct|right|ok(?:ay)?)\b"
                               r"|\byes or no\b|\byes/no\b|\bok(?:ay)? to\b")
_ANYTHING_ELSE = re.compile(r"\b(?:anything|something) else\b|\bwhat else\b"
                            r"|\bany other (?:questions?|requests?|concerns?|issues?|things?)\b"
                            r"|\bfurther (?:assistance|help|questions?)\b")
_SENTENCE_BREAK = re.compile(r"(?<=[.?!])\s+|\n+")


def ask_sentences(text: str) -> list[str]:
    """The agent's sentences that ask something (a question mark or a request cue), lower-cased."""
    sentences = (s.strip() for s in _SENTENCE_BREAK.split(text.lower()))
    return [s for s in sentences if s and (s.endswith("?") or _REQUEST_CUE.search(s))]


def asked_facts(text: str) -> list[str]:
    """Fact kinds the agent asks for, in FACT_LABELS order."""
    asks = " | ".join(ask_sentences(text))
    found = {kind for kind, pattern in _FACT_ASKS.items() if pattern.search(asks)}
    if any(word not in _NOT_THE_USERS_NAME for word in _NAME_ASK.findall(asks)):
        found.add("name")
    return [kind for kind in FACT_LABELS if kind in found]


def asks_confirmation(text: str) -> bool:
    return any(_CONFIRMATION_ASK.search(s) for s in ask_sentences(text))


def asks_anything_else(text: str) -> bool:
    return any(_ANYTHING_ELSE.search(s) for s in ask_sentences(text))


# -- phrasing ----------------------------------------------------------------------------------------


def _join(items: Sequence[str], word: str = "and") -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".?!…" else f"{text}."


def _fact_clause(kind: str, values: Sequence[str]) -> str:
    singular, plural = FACT_LABELS[kind]
    return f"my {singular} is {values[0]}" if len(values) == 1 else f"my {plural} are {_join(values)}"


def _placeholders(template: str) -> set[str] | None:
    """Field names a request template uses; None when it is not a valid format string."""
    try:
        return {name for _, name, _, _ in Formatter().parse(template) if name is not None}
    except ValueError:
        return None


def usable_requests(templates: Sequence[str], facts: Facts) -> list[str]:
    """The templates whose every placeholder names a known fact, filled with its first value."""
    values = {kind: found[0] for kind, found in facts.items()}
    usable = []
    for template in templates:
        names = _placeholders(template)
        if names is not None and names <= values.keys():
            usable.append(template.format_map(values))
    return usable


def domain_goal_requests(domain: str) -> Mapping[str, tuple[str, ...]]:
    """The installed domain's phrasings per goal; none when the domain is not installed."""
    try:
        return get_domain(domain).goal_requests
    except KeyError:
        return {}


# -- the simulator -----------------------------------------------------------------------------------


@dataclass
class _Conversation:
    """One episode's state: where the user is in its goal list and what it has said."""

    task: Task
    persona: Persona
    rng: random.Random
    facts: Facts
    requests: Mapping[str, Sequence[str]]
    goals: list[str | None]
    index: int = 0
    turns: int = 0
    sent: int = 0
    stopped: bool = False
    pushed: bool = False
    wording: dict[int, str] = field(default_factory=dict)
    asks: dict[str, int] = field(default_factory=dict)

    @property
    def goal(self) -> str | None:
        return self.goals[self.index]

    def reply(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        if self.stopped:
            return UserReply(content=STOP_TOKEN, goal=self.goal)
        if self.sent == 0:
            return self._say(f"{self._pick(self.persona.openers)} {self._request()}")
        tail = _since_last_user_message(messages)
        text = "\n".join(m.content for m in tail if m.role == "assistant" and m.content)
        replied = any(m.role == "assistant" for m in tail)
        if (self._goal_done(messages, tool_calls, replied) or asks_anything_else(text)
                or self.turns >= MAX_USER_TURNS_PER_GOAL):
            return self._advance()
        asked = asked_facts(text)
        for kind in asked:
            self.asks[kind] = self.asks.get(kind, 0) + 1
        confirming = not asked and asks_confirmation(text)
        if (asked or confirming) and self.persona.policy_push and not self.pushed:
            self.pushed = True
            return self._say(self._pick(self.persona.policy_push))
        if asked:
            return self._say(self._facts_answer(asked))
        if confirming:
            return self._say(self._pick(self.persona.confirmations))
        return self._say(f"{self._pick(self.persona.nudges)} {self._request()}")

    def _goal_done(self, messages: list[Message], tool_calls: list[ToolCallRecord], replied: bool) -> bool:
        """Every gold action of the goal is met; for a goal without actions, the agent replied and has said
        the goal's communicate_info facts (if it has any) since the goal began."""
        actions = self.task.action_sets_for(self.goal)
        if actions:
            done = satisfied_actions(actions, [(c.name, c.arguments, c.is_error, c.error_kind) for c in tool_calls])
            return {a.action_id for a in actions} <= done
        facts = self.task.communicate_info_for(self.goal) if self.goal is not None else []
        if not replied or not facts:
            return replied
        said = _plain(" ".join(m.content or "" for m in _since_goal_began(messages, self.goal)
                                if m.role == "assistant"))
        return all(_plain(fact) in said for fact in facts)

    def _advance(self) -> UserReply:
        if self.index + 1 < len(self.goals):
            self.index += 1
            self.turns = 0
            if not self.persona.announces_shifts:
                return self._say(self._request())
            return self._say(f"{self._pick(self.persona.transition_phrases)} {self._request()}")
        self.stopped = True
        return UserReply(content=f"{self._pick(self.persona.closings)} {STOP_TOKEN}", goal=self.goal)

    def _request(self) -> str:
        """The current goal's request, worded once per goal (a nudge restates the same words)."""
        if self.index not in self.wording:
            options = usable_requests(self.requests.get(self.goal, ()), self.facts) if self.goal else []
            self.wording[self.index] = self._pick(options) if options else self._fallback_request()
        return self.wording[self.index]

    def _fallback_request(self) -> str:
        instructions = self.task.user_scenario.instructions
        if self.index == 0 or self.goal is None:
            return _sentence(instructions.reason_for_call or instructions.task_instructions
                             or "I need some help with my account.")
        return f"I also need some help with {self.goal.replace('_', ' ')}."

    def _facts_answer(self, asked: list[str]) -> str:
        """Facts asked often enough are given (all known ones, for an all-at-once persona); the rest
        are deflected (an evasive persona) or admitted unknown."""
        ready = [k for k in asked if self.asks.get(k, 0) >= self.persona.answers_after_asks]
        withheld = [k for k in asked if k not in ready]
        everything = self.persona.disclosure == "all_at_once"
        give = [k for k in FACT_LABELS if k in self.facts and (k in ready or (everything and ready))]
        missing = [k for k in ready if k not in self.facts]
        parts = []
        if give:
            parts.append(self._pick(self.persona.info_prefixes))
            parts.append(_sentence(_join([_fact_clause(k, self.facts[k]) for k in give])))
        if missing:
            labels = _join([FACT_LABELS[k][0] for k in missing], "or")
            parts.append(self._pick(self.persona.dont_know).replace("{fact}", labels))
        withheld = [k for k in withheld if k not in give]
        if withheld:
            labels = _join([FACT_LABELS[k][0] for k in withheld])
            parts.append(self._pick(self.persona.deflections).replace("{fact}", labels))
        return " ".join(parts)

    def _pick(self, options: Sequence[str]) -> str:
        return self.rng.choice(options)

    def _say(self, content: str) -> UserReply:
        self.sent += 1
        self.turns += 1
        return UserReply(content=content, goal=self.goal)


def _since_goal_began(messages: list[Message], goal: str | None) -> list[Message]:
    """The messages after the user message that raised the current goal."""
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            if messages[i].goal != goal:
                break
            start = i + 1
    return messages[start:]


def _plain(text: str) -> str:
    """Lowercase, no currency signs or thousands separators (as TSR compares communicate_info)."""
    return re.sub(r"(?<=\d),(?=\d{3})", "", re.sub(r"[$€£]", "", text.lower()))


def _since_last_user_message(messages: list[Message]) -> list[Message]:
    last = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    return messages[last + 1:]


class ScriptedUser(UserSimulator):
    """The default user simulator: no model, same task and seed -> same words and same shifts.

    `goal_requests` (goal label -> phrasings) defaults to the installed domain's `goal_requests`.
    """

    name = "scripted"

    def __init__(self, goal_requests: Mapping[str, Sequence[str]] | None = None) -> None:
        self._goal_requests = goal_requests
        self._conversation: _Conversation | None = None

    async def start(self, context: UserContext) -> None:
        task = context.task
        requests = (self._goal_requests if self._goal_requests is not None
                    else domain_goal_requests(task.domain))
        self._conversation = _Conversation(
            task=task,
            persona=get_persona(task.user_scenario.persona),
            rng=random.Random(context.seed),
            facts=parse_known_info(task.user_scenario.instructions.known_info),
            requests=requests,
            goals=list(task.goals) or [None],
        )

    async def respond(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        if self._conversation is None:
            raise RuntimeError("ScriptedUser.respond() called before start()")
        return self._conversation.reply(messages, tool_calls)
