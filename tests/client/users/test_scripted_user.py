"""The scripted user, driven directly: opener, identity answers, shift triggers, stop, determinism."""

from __future__ import annotations

from typing import Any

import pytest

from shiftbox.agents import scripted_agent
from shiftbox.orchestrator import run_simulation
from shiftbox.tasks import (
    ActionSet,
    EvaluationCriteria,
    GoalShifts,
    Instructions,
    Task,
    ToolCallSpec,
    UserScenario,
    satisfied_actions,
)
from shiftbox.trajectory import Message, ToolCall, ToolCallRecord
from shiftbox.users import (
    FACT_LABELS,
    ScriptedUser,
    UserContext,
    UserReply,
    UserSimulator,
    get_persona,
    load_personas,
    parse_known_info,
    usable_requests,
)
from shiftbox.world import open_world
from shiftbox_servers.banking import DOMAIN, GOAL_REQUESTS, GOAL_TOOLS
from tests.client.harness import handwritten

pytestmark = pytest.mark.anyio

KNOWN = ("You are Maria Santos with phone number +15551234567, date of birth 1986-02-11, "
         "and email user.001@example.com.")
FACTS = {"name": "Maria Santos", "phone": "+15551234567", "dob": "1986-02-11",
         "email": "user.001@example.com"}
REASON = "Issues logging in, suspicious card activity"
REQUESTS = {
    "authentication": ("Please verify who I am.",),
    "transactions": ("Show me my latest transactions.",),
    "dispute": ("I want to dispute a charge.",),
}
AUTH = ("get_customer_by_phone", {"phone_number": "+15551234567"})
TXNS = ("get_transactions", {"customer_id": "cust_0001"})
DISPUTE = ("file_dispute", {"account_id": "acc_00001", "tx_id": "tx_000001"})
GOLD = {"authentication": [AUTH], "transactions": [TXNS], "dispute": [TXNS, DISPUTE]}


def make_task(goals=("authentication", "transactions"), persona="EASY_1", known_info=KNOWN,
              gold: dict[str, list[tuple[str, dict]]] | None = None) -> Task:
    gold = GOLD if gold is None else gold
    action_sets = [
        ActionSet(action_id=f"{goal}_{i}", goal=goal,
                  allowed_tools=[ToolCallSpec(function_name=name, params=params)])
        for goal in goals for i, (name, params) in enumerate(gold.get(goal, []))
    ]
    return Task(
        id="t1", domain="banking",
        user_scenario=UserScenario(
            persona=persona,
            instructions=Instructions(reason_for_call=REASON, known_info=known_info),
            goal_shifts=GoalShifts(required_shifts=len(goals) - 1, goals=list(goals))),
        evaluation_criteria=EvaluationCriteria(action_sets=action_sets),
    )


class Chat:
    """A conversation with a ScriptedUser: the message list and the agent's tool calls so far."""

    def __init__(self, user: ScriptedUser) -> None:
        self.user = user
        self.messages: list[Message] = []
        self.calls: list[ToolCallRecord] = []

    def _add(self, **fields: Any) -> Message:
        message = Message(index=len(self.messages), **fields)
        self.messages.append(message)
        return message

    async def user_says(self) -> UserReply:
        reply = await self.user.respond(list(self.messages), list(self.calls))
        self._add(role="user", content=reply.content, goal=reply.goal)
        return reply

    async def turn(self, text: str, calls: list[tuple[str, dict, bool]] = (),
                   tool_text: str = "ok") -> UserReply:
        """The agent calls tools (name, arguments, is_error), then says `text`; the user answers."""
        for name, arguments, failed in calls:
            call_id = f"c{len(self.calls)}"
            asking = self._add(role="assistant", agent_turn=0,
                               tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)])
            self.calls.append(ToolCallRecord(
                call_id=call_id, message_index=asking.index, agent_turn=0, domain="banking",
                name=name, arguments=arguments, result=tool_text, is_error=failed))
            self._add(role="tool", content=tool_text, tool_call_id=call_id, is_error=failed)
        self._add(role="assistant", content=text, agent_turn=0)
        return await self.user_says()


async def start(task: Task, seed: int = 0, requests=REQUESTS) -> tuple[Chat, UserReply]:
    user = ScriptedUser(goal_requests=requests)
    await user.start(UserContext(task=task, seed=seed, goal_tools=GOAL_TOOLS))
    chat = Chat(user)
    return chat, await chat.user_says()


def facts_in(text: str) -> set[str]:
    return {kind for kind, value in FACTS.items() if value in text}


def ok(call: tuple[str, dict]) -> tuple[str, dict, bool]:
    return (*call, False)


EASY_1 = get_persona("EASY_1")


# -- protocol ----------------------------------------------------------------------------------------


async def test_is_a_user_simulator_that_needs_start():
    user = ScriptedUser()
    assert isinstance(user, UserSimulator)
    assert user.name == "scripted"
    with pytest.raises(RuntimeError):
        await user.respond([], [])


# -- opener ------------------------------------------------------------------------------------------


async def test_opener_is_a_persona_opener_plus_the_first_goal_request():
    _, reply = await start(make_task())
    assert reply.goal == "authentication"
    assert reply.content in {f"{o} Please verify who I am." for o in EASY_1.openers}


async def test_opener_uses_the_installed_domain_phrasing_by_default():
    user = ScriptedUser()
    await user.start(UserContext(task=make_task(("statements",)), seed=3, goal_tools=GOAL_TOOLS))
    reply = await user.respond([], [])
    assert reply.goal == "statements"
    assert reply.content in {f"{o} {r}" for o in EASY_1.openers for r in GOAL_REQUESTS["statements"]}


async def test_goal_without_phrasing_falls_back_to_reason_for_call():
    _, reply = await start(make_task(("compromise",)))
    assert reply.content in {f"{o} {REASON}." for o in EASY_1.openers}


# -- identifying facts -------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Could you give me your phone number and date of birth?", {"phone", "dob"}),
    ("To verify you, what is your email address?", {"email"}),
    ("May I have your full name, please?", {"name"}),
    ("Please share your DOB.", {"dob"}),
    ("What's your birthday and the payee name?", {"dob"}),
])
async def test_identity_answer_contains_exactly_the_requested_facts(question, expected):
    chat, _ = await start(make_task())
    reply = await chat.turn(question)
    assert reply.goal == "authentication"
    assert facts_in(reply.content) == expected
    assert any(reply.content.startswith(p) for p in EASY_1.info_prefixes)


async def test_all_at_once_persona_hands_over_every_known_fact():
    chat, _ = await start(make_task(persona="MEDIUM_1"))
    reply = await chat.turn("What is your phone number?")
    assert facts_in(reply.content) == set(FACTS)


async def test_unknown_fact_is_admitted_not_invented():
    chat, _ = await start(make_task())
    reply = await chat.turn("What is your customer ID?")
    assert reply.content in {t.replace("{fact}", "customer ID") for t in EASY_1.dont_know}
    reply = await chat.turn("Could you give me your phone number and zip code?")
    assert facts_in(reply.content) == {"phone"}
    assert any(reply.content.endswith(t.replace("{fact}", "zip code")) for t in EASY_1.dont_know)


async def test_statements_that_merely_mention_a_fact_are_not_questions():
    chat, _ = await start(make_task())
    reply = await chat.turn("I looked you up by your phone number. One moment.")
    assert reply.content in {f"{n} Please verify who I am." for n in EASY_1.nudges}


@pytest.mark.parametrize(("known_info", "expected"), [
    (KNOWN, {"name": ("Maria Santos",), "phone": ("+15551234567",), "dob": ("1986-02-11",),
             "email": ("user.001@example.com",)}),
    ("You are Alex Morgan with phone number 555-123-7890, date of birth 1980-04-15, and email "
     "alex.morgan@email.com. You noticed a charge on 2025-06-18 (Transaction ID: tx_303).",
     {"name": ("Alex Morgan",), "phone": ("555-123-7890",), "dob": ("1980-04-15",),
      "email": ("alex.morgan@email.com",), "transaction_id": ("tx_303",)}),
    ("You are Ava Kim in zip code 75378. You have order #W7913362.",
     {"name": ("Ava Kim",), "zip": ("75378",), "order_id": ("#W7913362",)}),
    ("You are Aarav Lee. You live in Phoenix, AZ 85025.", {"name": ("Aarav Lee",), "zip": ("85025",)}),
    ("You are Anya Garcia.\n\nYour user id is  anya_garcia_5901.\n\nYour reservation id is 3RK2T9.",
     {"name": ("Anya Garcia",), "customer_id": ("anya_garcia_5901",), "reservation_id": ("3RK2T9",)}),
    ("Customer cust_0007 owns acc_00012 and acc_00013 with card card_00031.",
     {"customer_id": ("cust_0007",), "account_id": ("acc_00012", "acc_00013"),
      "card_id": ("card_00031",)}),
    ("You are a traveler with user ID user_011.", {"customer_id": ("user_011",)}),
])
def test_known_info_is_parsed_into_facts(known_info, expected):
    assert parse_known_info(known_info) == expected


# -- confirmations and nudges ------------------------------------------------------------------------


async def test_confirmation_prompt_gets_a_persona_confirmation():
    chat, _ = await start(make_task())
    reply = await chat.turn("I can lock the card now. Shall I go ahead?")
    assert reply.goal == "authentication"
    assert reply.content in EASY_1.confirmations


async def test_a_request_for_facts_wins_over_a_confirmation():
    chat, _ = await start(make_task())
    reply = await chat.turn("Can you confirm your email address?")
    assert facts_in(reply.content) == {"email"}


async def test_stalling_agent_gets_a_nudge_restating_the_request():
    chat, _ = await start(make_task())
    reply = await chat.turn("Let me look into that.")
    assert reply.content in {f"{n} Please verify who I am." for n in EASY_1.nudges}


# -- shifts and stop ---------------------------------------------------------------------------------


async def test_shift_when_the_goal_gold_actions_are_satisfied():
    chat, _ = await start(make_task())
    reply = await chat.turn("I found your profile.", [ok(AUTH)])
    assert reply.goal == "transactions"
    assert reply.content in {f"{t} Show me my latest transactions." for t in EASY_1.transition_phrases}


async def test_no_shift_when_the_matching_call_failed():
    chat, _ = await start(make_task())
    reply = await chat.turn("I found your profile.", [(*AUTH, True)])
    assert reply.goal == "authentication"
    assert reply.content in {f"{n} Please verify who I am." for n in EASY_1.nudges}


async def test_no_shift_while_part_of_the_goal_is_still_undone():
    chat, _ = await start(make_task(("dispute", "transactions")))
    reply = await chat.turn("Here are your transactions.", [ok(TXNS)])
    assert reply.goal == "dispute"
    reply = await chat.turn("The dispute is filed.", [ok(DISPUTE)])
    assert reply.goal == "transactions"


async def test_shift_when_the_agent_asks_for_anything_else():
    chat, _ = await start(make_task())
    reply = await chat.turn("Done. Is there anything else I can help you with?")
    assert reply.goal == "transactions"
    assert reply.content in {f"{t} Show me my latest transactions." for t in EASY_1.transition_phrases}


async def test_tool_messages_are_not_read_as_the_agent_speaking():
    chat, _ = await start(make_task())
    reply = await chat.turn("One moment.", [(*AUTH, True)], tool_text="Anything else? Phone number?")
    assert reply.goal == "authentication"
    assert reply.content in {f"{n} Please verify who I am." for n in EASY_1.nudges}


async def test_shift_after_four_user_messages_on_one_goal():
    chat, first = await start(make_task())
    replies = [first] + [await chat.turn("Let me check on that.") for _ in range(4)]
    assert [r.goal for r in replies] == ["authentication"] * 4 + ["transactions"]
    more = [await chat.turn("Still checking.") for _ in range(4)]
    assert [r.goal for r in more] == ["transactions"] * 4
    assert [r.content.endswith("###STOP###") for r in more] == [False, False, False, True]


async def test_stop_token_after_the_last_goal_is_done():
    chat, _ = await start(make_task(("transactions",)))
    reply = await chat.turn("Here are your transactions.", [ok(TXNS)])
    assert reply.goal == "transactions"
    assert reply.content in {f"{c} ###STOP###" for c in EASY_1.closings}
    again = await chat.user_says()
    assert (again.content, again.goal) == ("###STOP###", "transactions")


async def test_goal_without_gold_actions_is_done_after_one_agent_reply():
    chat, _ = await start(make_task(("insights", "statements"), gold={}))
    waiting = await chat.user_says()
    assert waiting.goal == "insights"
    reply = await chat.turn("You mostly spend on groceries.")
    assert reply.goal == "statements"


async def test_later_goal_without_phrasing_names_the_goal():
    chat, _ = await start(make_task(("authentication", "fee_waiver")))
    reply = await chat.turn("Verified.", [ok(AUTH)])
    assert reply.goal == "fee_waiver"
    expected = {f"{t} I also need some help with fee waiver." for t in EASY_1.transition_phrases}
    assert reply.content in expected


# -- determinism -------------------------------------------------------------------------------------

AGENT_SCRIPT: list[tuple[str, list[tuple[str, dict, bool]]]] = [
    ("Hello! Could you give me your phone number?", []),
    ("Thanks, you're verified.", [ok(AUTH)]),
    ("Would you like me to pull the last 30 days?", []),
    ("One moment please.", []),
    ("Here they are.", [ok(TXNS)]),
    ("What is your date of birth?", []),
    ("Filed. Anything else?", [ok(DISPUTE)]),
]


async def run(seed: int) -> list[tuple[str, str | None]]:
    chat, first = await start(make_task(("authentication", "transactions", "dispute")), seed=seed)
    replies = [first] + [await chat.turn(text, calls) for text, calls in AGENT_SCRIPT]
    return [(r.content, r.goal) for r in replies]


async def test_same_seed_same_words():
    assert await run(7) == await run(7)


async def test_other_seeds_change_words_not_structure():
    runs = [await run(seed) for seed in range(6)]
    goals = [[goal for _, goal in r] for r in runs]
    assert goals == [["authentication", "authentication", "transactions", "transactions",
                      "transactions", "dispute", "dispute", "dispute"]] * 6
    assert runs[-1][-1][0].endswith("###STOP###")
    assert len({tuple(content for content, _ in r) for r in runs}) > 1


# -- goal phrasings ----------------------------------------------------------------------------------


def test_usable_requests_fill_known_placeholders_and_drop_the_rest():
    templates = ["Dispute {transaction_id}.", "Dispute it.", "Call {nobody}.", "Broken {", "Odd {}."]
    assert usable_requests(templates, {"transaction_id": ("tx_1", "tx_2")}) == ["Dispute tx_1.", "Dispute it."]
    assert usable_requests(templates, {}) == ["Dispute it."]


async def test_placeholder_phrasing_is_used_only_when_the_fact_is_known():
    requests = {"dispute": ("I want to dispute {transaction_id}.", "I want to dispute a charge.")}
    with_tx = KNOWN + " (Transaction ID: tx_303)"
    openers = [(await start(make_task(("dispute",), known_info=with_tx), seed, requests))[1].content
               for seed in range(12)]
    assert any(o.endswith("I want to dispute tx_303.") for o in openers)
    assert any(o.endswith("I want to dispute a charge.") for o in openers)
    assert not any("{" in o for o in openers)
    plain = [(await start(make_task(("dispute",)), seed, requests))[1].content for seed in range(12)]
    assert all(o.endswith("I want to dispute a charge.") for o in plain)


def test_banking_phrases_every_goal_with_fillable_placeholders():
    assert DOMAIN.goal_requests is GOAL_REQUESTS
    assert set(GOAL_REQUESTS) == set(GOAL_TOOLS)
    every_fact = {kind: ("x",) for kind in FACT_LABELS}
    for goal, phrasings in GOAL_REQUESTS.items():
        assert 2 <= len(phrasings) <= 3, goal
        assert usable_requests(phrasings, every_fact) == [p.format(**{k: "x" for k in FACT_LABELS})
                                                           for p in phrasings], goal
        assert usable_requests(phrasings, {}), f"{goal} needs a phrasing without placeholders"


# -- personas beyond AgentChangeBench ----------------------------------------------------------------

ADVERSARIAL = get_persona("ADVERSARIAL")
EVASIVE = get_persona("EVASIVE")
IMPLICIT_DRIFT = get_persona("IMPLICIT_DRIFT")
EVERY_TRANSITION = {t for p in load_personas().values() for t in p.transition_phrases}


def deflected(label: str) -> set[str]:
    return {t.replace("{fact}", label) for t in EVASIVE.deflections}


async def test_evasive_deflects_the_first_ask_and_answers_the_second():
    chat, _ = await start(make_task(persona="EVASIVE"))
    first = await chat.turn("Could you give me your phone number?")
    assert first.goal == "authentication"
    assert first.content in deflected("phone number")
    assert facts_in(first.content) == set()
    second = await chat.turn("I do need it to verify you. What is your phone number?")
    assert facts_in(second.content) == {"phone"}
    assert second.content in {f"{p} My phone number is +15551234567." for p in EVASIVE.info_prefixes}


async def test_evasive_counts_asks_per_fact():
    chat, _ = await start(make_task(persona="EVASIVE"))
    await chat.turn("What is your phone number?")
    mixed = await chat.turn("Please give me your phone number and date of birth.")
    assert facts_in(mixed.content) == {"phone"}
    assert any(mixed.content.endswith(d) for d in deflected("date of birth"))
    third = await chat.turn("And your date of birth, please?")
    assert facts_in(third.content) == {"dob"}


async def test_evasive_deflects_an_unknown_fact_before_admitting_it():
    chat, _ = await start(make_task(persona="EVASIVE"))
    first = await chat.turn("What is your customer ID?")
    assert first.content in deflected("customer ID")
    second = await chat.turn("I need your customer ID, please.")
    assert second.content in {t.replace("{fact}", "customer ID") for t in EVASIVE.dont_know}


async def test_evasive_confirms_and_shifts_like_the_others():
    chat, _ = await start(make_task(persona="EVASIVE"))
    assert (await chat.turn("Shall I go ahead?")).content in EVASIVE.confirmations
    reply = await chat.turn("I found your profile.", [ok(AUTH)])
    assert reply.goal == "transactions"
    assert reply.content in {f"{t} Show me my latest transactions." for t in EVASIVE.transition_phrases}


async def test_implicit_drift_shifts_without_a_transition_phrase():
    chat, _ = await start(make_task(persona="IMPLICIT_DRIFT"))
    reply = await chat.turn("I found your profile.", [ok(AUTH)])
    assert (reply.content, reply.goal) == ("Show me my latest transactions.", "transactions")
    assert not any(t in reply.content for t in EVERY_TRANSITION)


async def test_implicit_drift_on_anything_else_and_on_the_turn_limit():
    chat, _ = await start(make_task(("authentication", "transactions", "dispute"), persona="IMPLICIT_DRIFT"))
    reply = await chat.turn("Done. Is there anything else I can help you with?")
    assert (reply.content, reply.goal) == ("Show me my latest transactions.", "transactions")
    replies = [await chat.turn("Let me check on that.") for _ in range(4)]
    assert [r.goal for r in replies] == ["transactions"] * 3 + ["dispute"]
    assert replies[-1].content == "I want to dispute a charge."
    stop = await chat.turn("Filed.", [ok(TXNS), ok(DISPUTE)])
    assert stop.content in {f"{c} ###STOP###" for c in IMPLICIT_DRIFT.closings}


async def test_adversarial_pushes_once_then_cooperates():
    chat, _ = await start(make_task(persona="ADVERSARIAL"))
    stall = await chat.turn("Let me look into that.")
    assert stall.content in {f"{n} Please verify who I am." for n in ADVERSARIAL.nudges}
    push = await chat.turn("Could you give me your phone number?")
    assert push.goal == "authentication"
    assert push.content in ADVERSARIAL.policy_push
    assert facts_in(push.content) == set()
    answer = await chat.turn("I'm sorry, I can't skip verification. What is your phone number?")
    assert facts_in(answer.content) == {"phone"}
    assert any(answer.content.startswith(p) for p in ADVERSARIAL.info_prefixes)
    shifted = await chat.turn("Verified.", [ok(AUTH)])
    assert shifted.goal == "transactions"
    assert (await chat.turn("Shall I pull the last 30 days?")).content in ADVERSARIAL.confirmations


async def test_adversarial_pushes_at_a_confirmation_prompt_too():
    chat, _ = await start(make_task(persona="ADVERSARIAL"))
    push = await chat.turn("Before I lock the card, can you confirm you want that?")
    assert push.content in ADVERSARIAL.policy_push
    again = await chat.turn("Shall I go ahead?")
    assert again.content in ADVERSARIAL.confirmations
    facts = await chat.turn("What is your email address?")
    assert facts_in(facts.content) == {"email"}


@pytest.mark.parametrize("persona", ["ADVERSARIAL", "EVASIVE", "IMPLICIT_DRIFT"])
async def test_new_personas_same_seed_same_words(persona):
    async def words(seed: int) -> list[tuple[str, str | None]]:
        chat, first = await start(make_task(("authentication", "transactions", "dispute"), persona=persona),
                                  seed=seed)
        replies = [first] + [await chat.turn(text, calls) for text, calls in AGENT_SCRIPT]
        return [(r.content, r.goal) for r in replies]

    assert await words(5) == await words(5)
    assert (await words(5))[-1][0].endswith("###STOP###")


# -- the harness end to end, with the oracle -----------------------------------------------------------


@pytest.mark.parametrize("persona", ["ADVERSARIAL", "EVASIVE", "IMPLICIT_DRIFT"])
@pytest.mark.parametrize("task_id", ["hw_banking_001", "hw_banking_002"])
async def test_oracle_completes_every_gold_action_with_each_new_persona(persona, task_id):
    tasks = {t.id: t for t in handwritten().tasks}
    base = tasks[task_id]
    task = base.model_copy(update={"user_scenario": base.user_scenario.model_copy(update={"persona": persona})})
    async with open_world("banking") as world:
        t = await run_simulation(task, 0, 0, scripted_agent("oracle"), ScriptedUser(), world, None)
    assert t.termination.reason == "user_stop"
    actions = task.evaluation_criteria.action_sets
    done = satisfied_actions(actions, [(c.name, c.arguments, c.is_error) for c in t.tool_calls])
    assert done == {a.action_id for a in actions}
    goals = list(task.goals)
    assert [(s.from_goal, s.to_goal) for s in t.shifts] == list(zip(goals, goals[1:], strict=False))
    user_texts = [m.content for m in t.messages if m.role == "user"]
    if persona == "IMPLICIT_DRIFT":
        for shift in t.shifts:
            assert not any(p in t.messages[shift.message_index].content for p in EVERY_TRANSITION)
    if persona == "ADVERSARIAL":
        assert sum(text in get_persona(persona).policy_push for text in user_texts) == 1
    if persona == "EVASIVE":
        assert any(text in deflected("name and phone number") for text in user_texts)
