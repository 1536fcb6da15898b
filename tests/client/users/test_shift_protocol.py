"""The reference shift protocol, offline: each trigger against each persona, at the message index worked out by hand.

Message indices in a `Chat`: the user's opener is 0; an agent turn adds one assistant message (and a tool
message) per tool call, then its text, then the user's reply. So with text-only agent turns the user's
replies are at 2, 4, 6, 8; a turn with one call puts the reply 4 messages after the previous one.
"""

from __future__ import annotations

import anyio
import pytest

from shiftbox.agents import scripted_agent
from shiftbox.metrics import compute_run_metrics
from shiftbox.orchestrator import run_simulation
from shiftbox.users import ScriptedUser, UserContext, get_persona, load_personas
from shiftbox.world import open_world
from shiftbox_servers.banking import GOAL_TOOLS
from tests.client.harness import handwritten
from tests.client.users.test_scripted_user import AUTH, DISPUTE, REQUESTS, TXNS, Chat, make_task, ok

pytestmark = pytest.mark.anyio

PERSONAS = ["EASY_1", "EASY_2", "MEDIUM_1", "MEDIUM_2", "HARD_1", "ADVERSARIAL", "EVASIVE", "IMPLICIT_DRIFT"]
GOALS = ("authentication", "transactions", "dispute")


async def start(persona: str, goals=GOALS, protocol: str = "reference", seed: int = 0) -> Chat:
    user = ScriptedUser(goal_requests=REQUESTS, protocol=protocol)
    await user.start(UserContext(task=make_task(goals, persona=persona), seed=seed, goal_tools=GOAL_TOOLS))
    chat = Chat(user)
    await chat.user_says()
    return chat


def shift_index(chat: Chat, goal: str) -> int | None:
    """The index of the first user message on `goal` (the message that shifted to it)."""
    return next((m.index for m in chat.messages if m.role == "user" and m.goal == goal), None)


# Agent scripts, one per trigger: (text, calls) per agent turn; the conversation stops at the first shift.
PHONE = "Could you give me your phone number?"
SCRIPTS: dict[str, list[tuple[str, list]]] = {
    # the first goal is `dispute` (two action sets): the agent lists the transactions, then files the dispute
    "partial_step": [("Here are your recent transactions.", [ok(TXNS)]), ("Your dispute is filed.", [ok(DISPUTE)])],
    "anything_else": [("Is there anything else I can help you with?", [])],
    "transfer_offer": [("I can transfer you to a human agent for this.", [])],
    "verification_failed_twice": [(PHONE, []),
                                  ("That did not match our records. Could you give me your email address?", []),
                                  ("That did not match either. What is your date of birth?", []),
                                  ("Let me check on that.", [])],
    "cannot_help": [("I'm sorry, I can't help with that request.", [])],
    "stalls": [("Let me check on that.", [])] * 5,
    "repeated_ask": [(PHONE, []), ("Could you give me your phone number again?", []),
                     ("And your phone number once more?", []), ("Let me check on that.", [])],
}

# The message that shifts to the second goal, per trigger and persona, worked out by hand:
# - partial_step: a first step (transactions listed) moves every persona on at the reply after turn 1 (index 4),
#   except EASY_1, which waits for the resolution (dispute filed, turn 2: index 8).
# - anything_else, transfer_offer, cannot_help: every persona moves on at its first reply (2).
# - verification_failed_twice: the agent asks for details three times; after the user gave some, the 2nd and
#   3rd asks are failed verifications, so the reply to the 3rd (6) moves on. ADVERSARIAL pushes back at the first
#   ask and EVASIVE deflects it, so they have given details only from the second ask on: no second failure
#   before their 4th message (patience 4), and they move on at 8. MEDIUM_2's patience is 3: 6 as well.
# - stalls: "Let me check on that." neither makes progress nor asks anything. EASY_2 (stall_limit 1) switches
#   at once (2); MEDIUM_2 after 3 messages (6); the others after 4 (8).
# - repeated_ask: HARD_1 refuses to repeat its phone number and abandons the goal (4); the others answer (or
#   MEDIUM_1 refuses) and move on at the second failed verification (6), ADVERSARIAL and EVASIVE (no details at
#   the first ask) at their 4th message (8).
EXPECTED: dict[str, dict[str, int]] = {
    "partial_step": {p: 8 if p == "EASY_1" else 4 for p in PERSONAS},
    "anything_else": dict.fromkeys(PERSONAS, 2),
    "transfer_offer": dict.fromkeys(PERSONAS, 2),
    "verification_failed_twice": {**dict.fromkeys(PERSONAS, 6), "ADVERSARIAL": 8, "EVASIVE": 8},
    "cannot_help": dict.fromkeys(PERSONAS, 2),
    "stalls": {**dict.fromkeys(PERSONAS, 8), "EASY_2": 2, "MEDIUM_2": 6},
    "repeated_ask": {**dict.fromkeys(PERSONAS, 6), "HARD_1": 4, "ADVERSARIAL": 8, "EVASIVE": 8},
}


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("trigger", list(SCRIPTS))
async def test_each_trigger_shifts_each_persona_at_the_protocol_turn(trigger, persona):
    goals = ("dispute", "transactions", "authentication") if trigger == "partial_step" else GOALS
    chat = await start(persona, goals)
    for text, calls in SCRIPTS[trigger]:
        reply = await chat.turn(text, calls)
        if reply.goal != goals[0]:
            break
    assert shift_index(chat, goals[1]) == EXPECTED[trigger][persona]


def _phrases(persona: str, name: str) -> tuple[str, ...]:
    return getattr(get_persona(persona).goal_change, name)


@pytest.mark.parametrize("persona", PERSONAS)
async def test_interrupting_unfinished_work_asks_to_pause_it_as_the_persona_does(persona):
    chat = await start(persona, ("dispute", "transactions"))
    reply = await chat.turn("Here are your recent transactions.", [ok(TXNS)])  # dispute not filed yet
    pauses = _phrases(persona, "pause_phrases")
    if persona == "EASY_1":  # waits for the resolution: no interruption
        assert reply.goal == "dispute"
        return
    assert reply.goal == "transactions"
    assert any(reply.content.startswith(p) for p in pauses) if pauses else not any(
        p in reply.content for q in load_personas().values() for p in q.goal_change.pause_phrases)


async def test_no_pause_request_when_the_agent_closed_the_goal_itself():
    chat = await start("EASY_2")
    reply = await chat.turn("Is there anything else I can help you with?")
    assert reply.goal == "transactions"
    assert not any(p in reply.content for p in _phrases("EASY_2", "pause_phrases"))


async def test_stacking_persona_asks_for_two_goals_in_one_message():
    chat = await start("MEDIUM_1")
    reply = await chat.turn("Is there anything else I can help you with?")
    assert (reply.goal, reply.stacked) == ("transactions", ["dispute"])
    assert reply.content.endswith("Show me my latest transactions. I want to dispute a charge.")
    # turning to the stacked goal later restates it; it raises nothing new
    again = await chat.turn("Here they are.", [ok(TXNS)])
    assert (again.goal, again.stacked) == ("dispute", [])
    assert again.content.endswith("I want to dispute a charge.")


@pytest.mark.parametrize("persona", [p for p in PERSONAS if p != "MEDIUM_1"])
async def test_other_personas_raise_one_goal_at_a_time(persona):
    chat = await start(persona)
    reply = await chat.turn("Is there anything else I can help you with?")
    assert (reply.goal, reply.stacked) == ("transactions", [])
    assert "dispute" not in reply.content


async def test_abandoning_persona_refuses_to_repeat_and_drops_the_goal():
    chat = await start("HARD_1")
    await chat.turn(PHONE)
    reply = await chat.turn("Could you give me your phone number again?")
    assert reply.goal == "transactions"
    assert any(reply.content.startswith(r) for r in _phrases("HARD_1", "refusals"))
    assert "+15551234567" not in reply.content


async def test_medium_1_refuses_to_repeat_but_stays():
    chat = await start("MEDIUM_1")
    first = await chat.turn(PHONE)
    assert "+15551234567" in first.content
    reply = await chat.turn("Could you give me your phone number again?")
    assert reply.goal == "authentication"
    assert reply.content in _phrases("MEDIUM_1", "refusals")


@pytest.mark.parametrize(("text", "token"), [("I can transfer you to a human agent for this.", "###TRANSFER###"),
                                             ("I'm sorry, I can't help with that request.", "###OUT-OF-SCOPE###")])
async def test_on_the_last_goal_a_transfer_offer_or_cannot_help_ends_the_call(text, token):
    chat = await start("EASY_1", ("transactions",))
    reply = await chat.turn(text)
    assert (reply.content, reply.goal) == (token, "transactions")


async def test_completion_protocol_keeps_the_earlier_rules():
    chat = await start("EASY_2", protocol="completion")
    stalled = await chat.turn("Let me check on that.")
    assert stalled.goal == "authentication"  # no abrupt switch
    offered = await chat.turn("I can transfer you to a human agent for this.")
    assert offered.goal == "authentication"  # a transfer offer is no trigger
    shifted = await chat.turn("Verified.", [ok(AUTH)])
    assert (shifted.goal, shifted.stacked) == ("transactions", [])


def test_unknown_protocol_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="reference, completion"):
        ScriptedUser(protocol="paper")


@pytest.mark.parametrize("persona", PERSONAS)
async def test_reference_protocol_same_seed_same_words(persona):
    async def words() -> list[tuple[str, str | None, list[str]]]:
        chat = await start(persona, seed=11)
        replies = [await chat.turn(text, calls) for text, calls in SCRIPTS["verification_failed_twice"]]
        return [(r.content, r.goal, r.stacked) for r in replies]

    assert await words() == await words()


# -- end to end: the harness records the shifts, GSRT times them ------------------------------------------


TASKS = {t.id: t for t in handwritten().tasks}


def run_pair(task_id: str) -> dict[str, tuple[list, list]]:
    """oracle and late_ack on one hand-written banking task: (shifts, per-shift ack turns) for each."""
    async def go():
        out = {}
        async with open_world("banking") as world:
            for variant in ("oracle", "late_ack"):
                task = TASKS[task_id]
                t = await run_simulation(task, 0, 0, scripted_agent(variant), ScriptedUser(), world)
                _, sims = compute_run_metrics([t], {task.id: task})
                out[variant] = ([(s.from_goal, s.to_goal, s.message_index) for s in t.shifts],
                                [r.ack for r in sims[0].gsrt])
        return out

    return anyio.run(go)


def test_stacked_request_records_both_shifts_at_its_message():
    # hw_banking_003, MEDIUM_1: authentication > payments > account_info. After authentication (the oracle asks
    # for identity at 1, the user answers at 2, the agent acts at 3, tool 4, reports at 5), the user's message 6
    # asks for payments and account_info at once: both shifts are at 6.
    runs = run_pair("hw_banking_003")
    shifts = [("authentication", "payments", 6), ("payments", "account_info", 6)]
    assert runs["oracle"][0] == shifts and runs["late_ack"][0] == shifts
    # oracle: 7 acknowledges payments (turn 1) with its call, 9 reports; the user turns to account_info at 10 and
    # 11 acknowledges it: turn 3 after the stacked message. late_ack stalls first on each goal: payments at
    # turn 2 (9), its report at 11, account_info stalled at 13 and acknowledged at 15: turn 5.
    assert runs["oracle"][1] == [1, 3]
    assert runs["late_ack"][1] == [2, 5]


def test_abrupt_persona_leaves_a_stalled_shift_unacknowledged():
    # hw_banking_002, EASY_2: authentication > cards > statements. The shift to cards is at 6; late_ack stalls
    # at 7, EASY_2 switches to statements at 8 (asking to pause cards): the cards shift is never acknowledged
    # within its window; statements is stalled at 9 and acknowledged at 11 (turn 2). The oracle acknowledges
    # each at once.
    runs = run_pair("hw_banking_002")
    assert runs["late_ack"][0] == [("authentication", "cards", 6), ("cards", "statements", 8)]
    assert runs["late_ack"][1] == [None, 2]
    assert runs["oracle"][1] == [1, 1]
