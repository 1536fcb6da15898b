"""The LLM user simulator against the local fake OpenAI server: its prompt, the goal control tokens
(stripped, turned into recorded shifts), the flipped conversation view, empty replies and options."""

from __future__ import annotations

import json

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
    prompt_sha256,
    simulator_view,
    strip_control_tokens,
    system_prompt,
)
from shiftbox.world import open_world
from tests.client.harness import handwritten
from tests.conftest import require_acb

pytestmark = pytest.mark.anyio
TASKS = {t.id: t for t in handwritten().tasks}
MODEL = "openai/fake-model"
GOALS = ["authentication", "transactions", "dispute"]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")


def make(server, **extra: str) -> LLMUser:
    base = server.base_url if server is not None else "http://127.0.0.1:9"
    return user_from_spec(f"litellm:{MODEL}", {"api_base": base, "retry_backoff": "0", **extra})


async def started(server, task_id="hw_banking_001", seed=3, **extra: str) -> LLMUser:
    user = make(server, **extra)
    await user.start(UserContext(task=TASKS[task_id], seed=seed, goal_tools={}))
    return user


class Saying(Agent):
    """An agent that says the same text every turn."""

    name = "saying"

    def __init__(self, text: str) -> None:
        self.text = text

    async def start(self, context):
        return None

    async def respond(self, messages):
        return AgentReply(content=self.text)

    async def close(self):
        return None


def agent_says(text: str, index: int, turn: int) -> Message:
    return Message(index=index, role="assistant", content=text, agent_turn=turn)


async def converse(server, turns: int) -> tuple[LLMUser, list]:
    """The LLM user's first `turns` replies, the agent answering each with a fixed text."""
    user = await started(server)
    conversation: list[Message] = []
    replies = []
    for i in range(turns):
        reply = await user.respond(list(conversation), [])
        replies.append(reply)
        conversation.append(Message(index=len(conversation), role="user", content=reply.content, goal=reply.goal))
        conversation.append(agent_says(f"Agent answer {i}", len(conversation), i))
    return user, replies


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
        user, replies = await converse(server, 4)
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

    with fake_openai(lambda body: Reply.text("")) as server:
        async with open_world("banking") as world:
            t = await run_simulation(TASKS["hw_banking_001"], 0, 0, Saying("Hello"), make(server), world)
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


# -- the shift protocol ---------------------------------------------------------------------------------

TRIGGER_RULES = ["even if the goal is not fully resolved yet", "whether there is anything else",
                 "offers to transfer you to a human agent", "failed to verify you twice",
                 "says it cannot help", "you have already sent {patience} messages about the current goal",
                 "ask the agent to pause that work safely", "one marker per goal, in order"]
PERSONA_RULES = {
    "EASY_1": ["wait until the current goal is resolved"],
    "EASY_2": ["If 1 of the agent's replies on a goal neither do anything for it nor ask you anything"],
    "MEDIUM_1": ["ask for your next 2 goals together in one message", "Refuse to repeat details you already gave,"],
    "MEDIUM_2": ["You move on after 3 messages on the same goal at most"],
    "HARD_1": ["Refuse to repeat details you already gave and drop the current goal for your next one"],
    "ADVERSARIAL": ["you simply leave it"], "EVASIVE": [], "IMPLICIT_DRIFT": ["you simply leave it"],
}


def prompt_for(persona: str, protocol: str = "reference") -> str:
    base = TASKS["hw_banking_001"]
    task = base.model_copy(update={"user_scenario": base.user_scenario.model_copy(update={"persona": persona})})
    return system_prompt(task, get_persona(persona), protocol)


@pytest.mark.parametrize("persona", sorted(PERSONA_RULES))
def test_reference_prompt_states_every_trigger_and_the_persona_goal_change(persona):
    prompt = prompt_for(persona)
    change = get_persona(persona).goal_change
    triggers = [rule.format(patience=change.patience) for rule in TRIGGER_RULES]
    for rule in [*triggers, change.behaviour, *PERSONA_RULES[persona], *change.pause_phrases,
                 *change.refusals]:
        assert rule in prompt, rule
    assert "Never mention, hint at or ask about a goal before its turn" not in prompt  # stacking is allowed


def test_completion_prompt_keeps_the_earlier_rules():
    prompt = prompt_for("MEDIUM_1", "completion")
    assert "Never mention, hint at or ask about a goal before its turn" in prompt
    assert "offers to transfer you" not in prompt and get_persona("MEDIUM_1").goal_change.behaviour not in prompt
    assert "If the agent transfers you to a human agent, reply with ###TRANSFER###." in prompt


async def test_a_stacked_request_raises_several_goals_and_the_view_keeps_its_tokens():
    script = ["<<GOAL:authentication>> Hi, verify me.",
              "<<GOAL:transactions>> <<GOAL:dispute>> Show my transactions and dispute a charge.",
              "<<GOAL:dispute>> Now the dispute.", "Thanks."]
    with fake_openai(script) as server:
        user, replies = await converse(server, 4)
    assert [(r.goal, r.stacked) for r in replies] == [("authentication", []), ("transactions", ["dispute"]),
                                                      ("dispute", []), ("dispute", [])]
    own = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "assistant"]
    assert own[1].startswith("<<GOAL:transactions>> <<GOAL:dispute>> Show my")
    assert own[2].startswith("<<GOAL:dispute>> Now the dispute.")


async def test_the_harness_records_a_stacked_requests_shifts_at_its_message():
    script = ["<<GOAL:authentication>> Hi.", "<<GOAL:transactions>> <<GOAL:dispute>> Both, please.",
              "<<GOAL:dispute>> The dispute now.", "Bye ###STOP###"]
    with fake_openai(script) as server:
        async with open_world("banking") as world:
            t = await run_simulation(TASKS["hw_banking_001"], 0, 0, Saying("Okay."), make(server), world)
    # user messages at 0, 2, 4, 6: the stacked request (2) holds both shifts; turning to dispute (4) is no shift
    assert [(s.from_goal, s.to_goal, s.message_index) for s in t.shifts] == [
        ("authentication", "transactions", 2), ("transactions", "dispute", 2)]
    assert [m.goal for m in t.messages if m.role == "user"] == ["authentication", "transactions", "dispute", "dispute"]
    assert t.user_simulator.protocol == "reference"


def test_protocol_options_are_validated():
    with pytest.raises(SpecError, match="reference, completion, agentchangebench"):
        user_from_spec(f"litellm:{MODEL}", {"protocol": "paper"})
    with pytest.raises(SpecError, match="reference=DIR"):
        user_from_spec(f"litellm:{MODEL}", {"protocol": "agentchangebench"})
    with pytest.raises(SpecError, match="only with protocol=agentchangebench"):
        user_from_spec(f"litellm:{MODEL}", {"reference": "/tmp"})
    with pytest.raises(SpecError, match="no such folder"):
        user_from_spec(f"litellm:{MODEL}", {"protocol": "agentchangebench", "reference": "/nonexistent/acb"})


POLICY = "# Banking user policy (test copy)\nShift when the agent helps a little.\n"
DESCRIPTIONS = {"EASY_1": "Calm test persona.\n\nSecond paragraph.", "HARD_1": "Angry test persona."}


def fake_reference(root, layout: str = "data/tau2/domains/banking"):
    folder = root / layout
    folder.mkdir(parents=True)
    (folder / "user_policy.md").write_text(POLICY)
    (folder / "user_personas.json").write_text(json.dumps(DESCRIPTIONS))
    return root


@pytest.mark.parametrize("layout", ["data/tau2/domains/banking", "banking"])
async def test_agentchangebench_protocol_reads_the_reference_texts_verbatim(tmp_path, layout):
    root = fake_reference(tmp_path, layout)
    task = TASKS["hw_banking_001"]
    assert task.user_scenario.persona == "EASY_1"
    with fake_openai(["<<GOAL:authentication>> Hi."]) as server:
        user = await started(server, protocol="agentchangebench", reference=str(root))
        reply = await user.respond([], [])
    prompt = server.requests[0]["messages"][0]["content"]
    assert prompt.startswith(POLICY.strip())
    assert "Persona:\n\tCalm test persona.\n\n\tSecond paragraph." in prompt
    assert "Instructions:\n\tDomain: banking\n" in prompt
    assert f"\tKnown info:\n\t\t{task.user_scenario.instructions.known_info}" in prompt
    assert f"'goals': {GOALS!r}" in prompt and "<<GOAL:label>>" in prompt
    assert get_persona("EASY_1").summary not in prompt      # none of shiftbox's own persona text
    assert reply.goal == "authentication"
    identity = user.identity()
    assert identity.protocol == "agentchangebench" and identity.prompt_sha256 != prompt_sha256()


async def test_agentchangebench_protocol_names_a_persona_the_reference_lacks(tmp_path):
    root = fake_reference(tmp_path)
    base = TASKS["hw_banking_001"]
    task = base.model_copy(update={"user_scenario": base.user_scenario.model_copy(update={"persona": "EVASIVE"})})
    user = make(None, protocol="agentchangebench", reference=str(root))
    with pytest.raises(ValueError, match="persona 'EVASIVE' is not described in .*protocol=reference"):
        await user.start(UserContext(task=task, seed=0, goal_tools={}))


async def test_agentchangebench_protocol_says_where_it_looked(tmp_path):
    user = make(None, protocol="agentchangebench", reference=str(tmp_path))
    with pytest.raises(ValueError, match="no user_policy.md and user_personas.json for domain 'banking'"):
        await user.start(UserContext(task=TASKS["hw_banking_001"], seed=0, goal_tools={}))


async def test_agentchangebench_protocol_with_the_shared_reference_copy():
    folder = require_acb("banking", "user_policy.md").parents[1]
    user = make(None, protocol="agentchangebench", reference=str(folder))
    await user.start(UserContext(task=TASKS["hw_banking_001"], seed=0, goal_tools={}))
    policy = (folder / "banking" / "user_policy.md").read_text(encoding="utf-8")
    described = json.loads((folder / "banking" / "user_personas.json").read_text(encoding="utf-8"))
    assert user.system_prompt.startswith(policy.strip())
    assert described["EASY_1"].splitlines()[0] in user.system_prompt
