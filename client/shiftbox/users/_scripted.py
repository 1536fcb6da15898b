"""The scripted user: offline and seeded, phrased by its persona, shifting goals by the reference protocol.

Protocol `reference` (the default; AgentChangeBench's user protocol, docs/agents.md#when-the-user-changes-goal).
On every turn after the opener, the first that applies:
1. move on to the next goal (on the last goal, see below) when, since the user last spoke, the agent
   - has given a resolution step for the current goal: a call made since the goal became current that
     meets one of its gold action sets with the expected outcome (for a goal without action sets: a
     reply that states one of its communicate_info facts, or any reply when it has none) — persona
     `goal_change.moves_on_at: resolution` waits instead until the goal is resolved (every action set
     met; every fact said);
   - asks whether there is anything else;
   - offers a transfer to a human;
   - asks again for identifying details after the user gave some on this goal, for the second time
     (verification failed twice);
   - says it cannot help;
   or the persona's own limits are reached: `stall_limit` agent replies on the goal that neither make
   progress nor ask anything (an abrupt switch), a request to repeat a fact already given
   (`repeated_asks: refuse_and_move_on`: refuse and abandon the goal), or `patience` user messages
   already sent on the goal (4 for most personas).
   Moving on from unresolved work the agent did not close itself (by "anything else?", a transfer
   offer or "I cannot help") interrupts it: the message starts with a `pause_phrases` template when the
   persona has them ("pause it safely"), or leaves the work without a word. A persona with `stack: 2` asks for the next two goals in one message
   (`UserReply.stacked`); when it later turns to the second, that message restates it and is no new shift.
2. identifying facts, when the agent asks for any (a repeated ask may be refused: `repeated_asks`);
3. a confirmation, when the agent asks for one;
4. a nudge that restates the current request.
On the last goal the user stops with ###STOP### once the goal is resolved, the agent asks whether there
is anything else, or after `patience` messages; a transfer offer there is accepted (###TRANSFER###)
and "I cannot help" ends the call (###OUT-OF-SCOPE###); the other triggers do not apply.

Protocol `completion` (shiftbox's earlier rules, kept for comparison): move on (or stop) only when the
goal is resolved, the agent asks whether there is anything else, or after 4 messages on the goal; the
persona's `goal_change` is not used.

Persona switches (data in the catalog):
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
"""The reference protocol's limit on user messages per goal (the `completion` protocol's too)."""
PROTOCOLS = ("reference", "completion")
"""`reference`: AgentChangeBench's shift protocol (default); `completion`: shiftbox's earlier rules."""
DEFAULT_PROTOCOL = "reference"
VERIFICATION_FAILURES = 2
"""Re-asks for identifying details on one goal (after the user gave some) that make the user move on."""
STOP_TOKEN, TRANSFER_TOKEN, OUT_OF_SCOPE_TOKEN = (
    next(token for token, reason in STOP_TOKENS.items() if reason == wanted)
    for wanted in ("user_stop", "user_transfer", "out_of_scope"))

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
_TRANSFER_OFFER = re.compile(r"\btransfer(?:ring)? you\b|\b(?:human|live) (?:agent|representative|colleague)\b"
                             r"|\bconnect you (?:with|to)\b|\bescalate (?:this|you|your)\b|\bhand you over\b")
_CANNOT_HELP = re.compile(r"\b(?:can ?not|can['’]t|unable to|not able to|won['’]t be able to)\s+(?:help|assist|do that"
                          r"|handle|process|support)\b|\bnot something i can (?:help|do)\b"
                          r"|\b(?:outside|beyond) (?:what i can|my (?:scope|remit))\b")
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


def offers_transfer(text: str) -> bool:
    """The agent offers (or announces) handing the customer to a human."""
    return bool(_TRANSFER_OFFER.search(text.lower()))


def says_cannot_help(text: str) -> bool:
    """The agent says it cannot help with the request."""
    return bool(_CANNOT_HELP.search(text.lower()))


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
    protocol: str = DEFAULT_PROTOCOL
    index: int = 0
    raised: int = 0
    """The highest goal index asked for so far (ahead of `index` after a stacked request)."""
    goal_start: int = 0
    """Index of the user message that made the current goal current."""
    turns: int = 0
    sent: int = 0
    stalls: int = 0
    reasks: int = 0
    gave_on_goal: bool = False
    stopped: bool = False
    pushed: bool = False
    wording: dict[int, str] = field(default_factory=dict)
    asks: dict[str, int] = field(default_factory=dict)
    given: set[str] = field(default_factory=set)

    @property
    def goal(self) -> str | None:
        return self.goals[self.index]

    @property
    def last(self) -> bool:
        return self.index + 1 >= len(self.goals)

    def reply(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        if self.stopped:
            return UserReply(content=STOP_TOKEN, goal=self.goal)
        if self.sent == 0:
            return self._say(f"{self._pick(self.persona.openers)} {self._request()}")
        tail = _since_last_user_message(messages)
        text = "\n".join(m.content for m in tail if m.role == "assistant" and m.content)
        replied = any(m.role == "assistant" for m in tail)
        asked = asked_facts(text)
        for kind in asked:
            self.asks[kind] = self.asks.get(kind, 0) + 1
        confirming = not asked and asks_confirmation(text)
        resolved = self._progress(messages, tool_calls, replied, whole=True)
        if self.protocol == "completion":
            if resolved or asks_anything_else(text) or self.turns >= MAX_USER_TURNS_PER_GOAL:
                return self._advance(len(messages))
        else:
            ended = self._reference_triggers(messages, tool_calls, text, replied, asked, confirming, resolved)
            if ended is not None:
                return ended
        if (asked or confirming) and self.persona.policy_push and not self.pushed:
            self.pushed = True
            return self._say(self._pick(self.persona.policy_push))
        if asked:
            return self._say(self._facts_answer(asked))
        if confirming:
            return self._say(self._pick(self.persona.confirmations))
        return self._say(f"{self._pick(self.persona.nudges)} {self._request()}")

    def _reference_triggers(self, messages: list[Message], tool_calls: list[ToolCallRecord], text: str,
                            replied: bool, asked: list[str], confirming: bool, resolved: bool) -> UserReply | None:
        """The reference protocol's step 1 (see the module docstring): the reply that moves on or ends, or None."""
        change = self.persona.goal_change
        step = resolved or self._progress(messages, tool_calls, replied, whole=False)
        if asked and self.gave_on_goal:
            self.reasks += 1
        if replied and not step and not ask_sentences(text):
            self.stalls += 1
        repeated = [k for k in asked if k in self.given]
        anything_else = asks_anything_else(text)
        if self.last:
            if resolved or anything_else or self.turns >= change.patience:
                return self._advance(len(messages))
            if offers_transfer(text):
                return self._end(TRANSFER_TOKEN)
            if says_cannot_help(text):
                return self._end(OUT_OF_SCOPE_TOKEN)
            return None
        abandon = bool(repeated) and change.repeated_asks == "refuse_and_move_on"
        closed = anything_else or offers_transfer(text) or says_cannot_help(text)  # the agent left the goal itself
        if (closed or abandon or (resolved if change.moves_on_at == "resolution" else step)
                or self.reasks >= VERIFICATION_FAILURES
                or (change.stall_limit is not None and self.stalls >= change.stall_limit)
                or self.turns >= change.patience):
            return self._advance(len(messages), interrupts=not (resolved or closed), refuse=abandon)
        return None

    def _progress(self, messages: list[Message], tool_calls: list[ToolCallRecord], replied: bool,
                  whole: bool) -> bool:
        """whole: the goal is resolved (every gold action met; for a goal without actions, the agent replied and
        has said all its communicate_info facts since the goal began). Otherwise: a first resolution step since
        the goal became current (one action set met by a call made since; one fact said)."""
        actions = self.task.action_sets_for(self.goal)
        if actions:
            made = [(c.name, c.arguments, c.is_error, c.error_kind) for c in tool_calls
                    if whole or c.message_index > self.goal_start]
            done = satisfied_actions(actions, made)
            return {a.action_id for a in actions} <= done if whole else bool(done)
        facts = self.task.communicate_info_for(self.goal) if self.goal is not None else []
        if not replied or not facts:
            return replied
        said = _plain(" ".join(m.content or "" for m in _since_goal_began(messages, self.goal)
                                if m.role == "assistant"))
        found = [_plain(fact) in said for fact in facts]
        return all(found) if whole else any(found)

    def _advance(self, at: int, interrupts: bool = False, refuse: bool = False) -> UserReply:
        """Move to the next goal (the message at index `at`), or stop after the last one; `interrupts`: the
        current goal's work is unfinished and the agent did not close it (the user asks to pause it)."""
        if self.last:
            self.stopped = True
            return UserReply(content=f"{self._pick(self.persona.closings)} {STOP_TOKEN}", goal=self.goal)
        change = self.persona.goal_change
        reference = self.protocol == "reference"
        parts = [self._pick(change.refusals)] if refuse else []
        if reference and interrupts and change.pause_phrases:
            parts.append(self._pick(change.pause_phrases))
        self.index += 1
        self.turns = self.stalls = self.reasks = 0
        self.gave_on_goal = False
        self.goal_start = at
        if self.persona.announces_shifts:
            parts.append(self._pick(self.persona.transition_phrases))
        new = []
        if self.index > self.raised:
            stack = change.stack if reference else 1
            new = list(range(self.index, min(self.index + stack, len(self.goals))))
            self.raised = new[-1]
        parts.extend(self._request(i) for i in (new or [self.index]))
        stacked = [g for i in new[1:] if (g := self.goals[i]) is not None]
        return self._say(" ".join(parts), stacked)

    def _end(self, token: str) -> UserReply:
        self.stopped = True
        return UserReply(content=token, goal=self.goal)

    def _request(self, index: int | None = None) -> str:
        """A goal's request (the current one by default), worded once per goal (a nudge restates the same words)."""
        index = self.index if index is None else index
        if index not in self.wording:
            goal = self.goals[index]
            options = usable_requests(self.requests.get(goal, ()), self.facts) if goal else []
            self.wording[index] = self._pick(options) if options else self._fallback_request(index)
        return self.wording[index]

    def _fallback_request(self, index: int) -> str:
        instructions = self.task.user_scenario.instructions
        goal = self.goals[index]
        if index == 0 or goal is None:
            return _sentence(instructions.reason_for_call or instructions.task_instructions
                             or "I need some help with my account.")
        return f"I also need some help with {goal.replace('_', ' ')}."

    def _facts_answer(self, asked: list[str]) -> str:
        """Facts asked often enough are given (all known ones, for an all-at-once persona); the rest
        are deflected (an evasive persona) or admitted unknown; a fact already given may be refused
        (`goal_change.repeated_asks`)."""
        change = self.persona.goal_change
        refused = ([k for k in asked if k in self.given]
                   if self.protocol == "reference" and change.repeated_asks != "answer" else [])
        asked = [k for k in asked if k not in refused]
        ready = [k for k in asked if self.asks.get(k, 0) >= self.persona.answers_after_asks]
        withheld = [k for k in asked if k not in ready]
        everything = self.persona.disclosure == "all_at_once"
        give = [k for k in FACT_LABELS if k in self.facts and k not in refused
                and (k in ready or (everything and ready))]
        missing = [k for k in ready if k not in self.facts]
        parts = [self._pick(change.refusals)] if refused else []
        if give:
            parts.append(self._pick(self.persona.info_prefixes))
            parts.append(_sentence(_join([_fact_clause(k, self.facts[k]) for k in give])))
            self.given.update(give)
            self.gave_on_goal = True
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

    def _say(self, content: str, stacked: list[str] | None = None) -> UserReply:
        self.sent += 1
        self.turns += 1
        return UserReply(content=content, goal=self.goal, stacked=stacked or [])


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

    def __init__(self, goal_requests: Mapping[str, Sequence[str]] | None = None,
                 protocol: str = DEFAULT_PROTOCOL) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown shift protocol {protocol!r} for the scripted user; choose one of: "
                             f"{', '.join(PROTOCOLS)}")
        self._goal_requests = goal_requests
        self.protocol = protocol
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
            protocol=self.protocol,
        )

    async def respond(self, messages: list[Message], tool_calls: list[ToolCallRecord]) -> UserReply:
        if self._conversation is None:
            raise RuntimeError("ScriptedUser.respond() called before start()")
        return self._conversation.reply(messages, tool_calls)
