"""The LLM user simulator against the local fake OpenAI server: its prompt, the goal control tokens
(stripped, turned into recorded shifts), the flipped conversation view, empty replies and options."""

from __future__ import annotations

import pytest

from shiftbox import SpecError, user_from_spec
from shiftbox.agents import Agent, AgentReply
from shiftbox.errors import LLMBadReply
from shiftbox.orchestrator import run_simulation
from shiftbox.testing import Reply, fake_openai
from shiftbox.trajectory import Message, ToolCall
from shiftbox.users import (
    OPENING,
    LLMUser,
    UserContext,
    get_persona,
    next_goal_index,
    simulator_view,
    strip_control_tokens,
)
from shiftbox.world import open_world
from tests.client.harness import handwritten

pytestmark = pytest.mark.anyio
TASKS = {t.id: t for t in handwritten().tasks}
MODEL = "openai/fake-model"
GOALS = ["authentication", "transactions", "dispute"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")


def make(server, **extra: str) -> LLMUser:
    return user_from_spec(f"litellm:{MODEL}", {"api_base": server.base_url, "retry_backoff": "0", **extra})


async def started(server, task_id="hw_banking_001", seed=3, **extra: str) -> LLMUser:
    user = make(server, **extra)
    await user.start(UserContext(task=TASKS[task_id], seed=seed, goal_tools={}))
    return user


def agent_says(text: str, index: int, turn: int) -> Message:
    return Message(index=index, role="assistant", content=text, agent_turn=turn)


# -- control tokens -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "text", "labels"), [
    ("<<GOAL:cards>> Lock my card.", "Lock my card.", ["cards"]),
    ("Thanks! <<GOAL:dispute>> Also, a charge.", "Thanks! Also, a charge.", ["dispute"]),
    ("<< goal : Account Info >>What's my balance?", "What's my balance?", ["Account Info"]),
    ("<<GOAL:a>> one\n<<GOAL:b>> two", "one\ntwo", ["a", "b"]),
    ("<<GOAL>> hi", "hi", [""]),
    ("No token here.  Really.", "No token here.  Really.", []),
    ("<<GOAL:cards>>", "", ["cards"]),
])
def test_control_tokens_are_stripped_everywhere(raw, text, labels):
    assert strip_control_tokens(raw) == (text, labels)


def test_goal_labels_resolve_by_the_rules():
    assert next_goal_index(GOALS, -1, []) == 0                      # first message: first goal
    assert next_goal_index(GOALS, -1, ["authentication"]) == 0
    assert next_goal_index(GOALS, 0, []) == 0                       # no token: same goal
    assert next_goal_index(GOALS, 0, ["transactions"]) == 1
    assert next_goal_index(GOALS, 0, ["Dispute"]) == 2              # a later goal: jump there
    assert next_goal_index(GOALS, 1, ["authentication"]) == 1       # an earlier goal: ignored
    assert next_goal_index(GOALS, 1, ["transactions"]) == 1         # the current goal: no shift
    assert next_goal_index(GOALS, 0, ["something else"]) == 1       # unknown: the next goal
    assert next_goal_index(GOALS, 2, ["something else"]) == 2       # ... but never past the last
    assert next_goal_index(GOALS, 0, ["bogus", "dispute"]) == 1     # the first token decides
    assert next_goal_index([], -1, ["x"]) == -1


# -- the prompt and the view --------------------------------------------------------------------------


async def test_system_prompt_has_persona_instructions_goals_and_rules():
    task = TASKS["hw_banking_001"]
    with fake_openai(["<<GOAL:authentication>> Hi."]) as server:
        user = await started(server)
        await user.respond([], [])
    sent = server.requests[0]
    prompt = sent["messages"][0]["content"]
    persona = get_persona(task.user_scenario.persona)
    instructions = task.user_scenario.instructions
    for expected in (persona.summary, persona.tone, persona.transition_phrases[0], instructions.reason_for_call,
                     instructions.known_info, instructions.task_instructions, "<<GOAL:label>>",
                     "###STOP###", "###TRANSFER###", "only after the agent has told you"):
        assert expected in prompt, expected
    positions = [prompt.index(f"{i}. {goal}") for i, goal in enumerate(GOALS, 1)]
    assert positions == sorted(positions)
    assert sent["messages"][1:] == [{"role": "user", "content": OPENING}]
    assert "tools" not in sent and sent["temperature"] == 0.0 and sent["seed"] == 3


def test_view_flips_roles_drops_tools_and_restores_goal_tokens():
    messages = [
        Message(index=0, role="user", content="Hi, verify me.", goal="authentication"),
        agent_says("Sure. Phone?", 1, 0),
        Message(index=2, role="user", content="+15555640027", goal="authentication"),
        Message(index=3, role="assistant", agent_turn=1, tool_calls=[
            ToolCall(id="call_1_0", name="get_customer_by_phone", arguments={"phone_number": "+15555640027"})]),
        Message(index=4, role="tool", tool_call_id="call_1_0", content='{"customer_id": "cust_1"}'),
        agent_says("Verified.", 5, 2),
        agent_says("Anything else?", 6, 3),
        Message(index=7, role="user", content="Show my transactions.", goal="transactions"),
    ]
    assert simulator_view(messages) == [
        {"role": "user", "content": OPENING},
        {"role": "assistant", "content": "<<GOAL:authentication>> Hi, verify me."},
        {"role": "user", "content": "Sure. Phone?"},
        {"role": "assistant", "content": "+15555640027"},
        {"role": "user", "content": "Verified.\n\nAnything else?"},
        {"role": "assistant", "content": "<<GOAL:transactions>> Show my transactions."},
    ]


async def test_replies_carry_the_goal_and_never_the_token():
    script = ["<<GOAL:authentication>> Hello, please verify me.", "My phone is +15555640027.",
              "Great. <<GOAL:transactions>> Now my transactions, please.", "<<GOAL:nonsense>> And a dispute."]
    with fake_openai(script) as server:
        user = await started(server)
        conversation: list[Message] = []
        replies = []
        for i in range(4):
            reply = await user.respond(list(conversation), [])
            replies.append(reply)
            conversation.append(Message(index=len(conversation), role="user", content=reply.content,
                                        goal=reply.goal))
            conversation.append(agent_says(f"Agent answer {i}", len(conversation), i))
    assert [(r.goal, r.content) for r in replies] == [
        ("authentication", "Hello, please verify me."), ("authentication", "My phone is +15555640027."),
        ("transactions", "Great. Now my transactions, please."), ("dispute", "And a dispute.")]
    # what the simulator's model saw of its own past: the tokens where goals began
    own = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "assistant"]
    assert own[0].startswith("<<GOAL:authentication>>") and own[2].startswith("<<GOAL:transactions>>")
    assert user.usage.calls == 4


async def test_reminder_to_move_on_after_several_messages_on_one_goal():
    script = ["<<GOAL:authentication>> Hi."] + ["Still waiting."] * 4
    with fake_openai(script) as server:
        user = await started(server)
        conversation: list[Message] = []
        for i in range(5):
            reply = await user.respond(list(conversation), [])
            conversation += [Message(index=len(conversation), role="user", content=reply.content, goal=reply.goal),
                             agent_says("One moment.", len(conversation) + 1, i)]
    reminders = [r["messages"][-1]["content"] for r in server.requests if r["messages"][-1]["role"] == "system"]
    assert len(reminders) == 1 and "<<GOAL:transactions>>" in reminders[0]
    assert server.requests[4]["messages"][-1]["role"] == "system"


# -- failures -----------------------------------------------------------------------------------------


async def test_empty_completions_are_retried():
    with fake_openai(["", "   ", "<<GOAL:authentication>> Hello there."]) as server:
        user = await started(server)
        reply = await user.respond([], [])
    assert (reply.content, reply.goal) == ("Hello there.", "authentication")
    assert len(server.requests) == 3
    assert server.requests[1]["messages"][-1]["role"] == "system"   # the retry says what went wrong


async def test_token_only_completion_counts_as_empty():
    with fake_openai(["<<GOAL:authentication>>", "Hi."]) as server:
        reply = await (await started(server)).respond([], [])
    assert (reply.content, reply.goal) == ("Hi.", "authentication")


async def test_empty_completions_are_bounded_then_the_simulation_ends_on_the_user():
    with fake_openai([Reply.text("")] * 2) as server:
        user = await started(server, max_empty_retries="1")
        with pytest.raises(LLMBadReply, match="empty message 2 times"):
            await user.respond([], [])

    class Quiet(Agent):
        name = "quiet"

        async def start(self, context):
            return None

        async def respond(self, messages):
            return AgentReply(content="Hello")

        async def close(self):
            return None

    with fake_openai(lambda body: Reply.text("")) as server:
        async with open_world("banking") as world:
            t = await run_simulation(TASKS["hw_banking_001"], 0, 0, Quiet(), make(server), world)
    assert (t.termination.reason, t.termination.blame) == ("user_error", "user")
    assert "empty message 3 times" in t.termination.detail
    assert len(server.requests) == 3


async def test_user_model_rate_limit_is_retried():
    with fake_openai([Reply.rate_limit(headers={"retry-after-ms": "1"}), "<<GOAL:authentication>> Hi."]) as server:
        reply = await (await started(server)).respond([], [])
    assert reply.content == "Hi." and len(server.requests) == 2


async def test_stop_token_is_kept_for_the_harness():
    with fake_openai(["<<GOAL:authentication>> Hi.", "That's all, thanks! ###STOP###"]) as server:
        user = await started(server, task_id="hw_banking_004")
        first = await user.respond([], [])
        last = await user.respond([Message(index=0, role="user", content=first.content, goal=first.goal),
                                   agent_says("Done.", 1, 0)], [])
    assert last.content == "That's all, thanks! ###STOP###" and last.goal == "account_info"


# -- options ------------------------------------------------------------------------------------------


def test_options_are_validated():
    with pytest.raises(SpecError, match="unknown option 'temp'; allowed options: .*max_empty_retries"):
        user_from_spec(f"litellm:{MODEL}", {"temp": "1"})
    with pytest.raises(SpecError, match="max_empty_retries='x' must be an integer"):
        user_from_spec(f"litellm:{MODEL}", {"max_empty_retries": "x"})
    with pytest.raises(SpecError, match="max_empty_retries must be >= 0"):
        user_from_spec(f"litellm:{MODEL}", {"max_empty_retries": "-1"})
    with pytest.raises(SpecError, match="never pass an API key"):
        user_from_spec(f"litellm:{MODEL}", {"api_key": "sk-x"})
    with pytest.raises(SpecError, match="needs a model"):
        user_from_spec("litellm", {})
    user = user_from_spec(f"litellm:{MODEL}", {"temperature": "0.5", "seed": "9", "max_retries": "4",
                                          "timeout": "30", "api_key_env": "MY_KEY", "api_base": "http://x"})
    assert user.name == f"litellm:{MODEL}"
    assert (user.settings.temperature, user.settings.seed, user.settings.max_retries, user.settings.timeout,
            user.settings.api_key_env, user.settings.api_base) == (0.5, 9, 4, 30.0, "MY_KEY", "http://x")
