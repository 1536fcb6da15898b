"""The model under test in an Inspect eval as a shiftbox agent: every reply is one `Model.generate` call."""

from __future__ import annotations

from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageSystem, GenerateConfig, Model, get_model
from inspect_ai.tool import ToolInfo
from inspect_ai.util import LimitExceededError

from .._usage import Usage
from ..agents import Agent, AgentContext, AgentReply, agent_system_prompt
from ..trajectory import Message, goal_spans
from ._convert import agent_reply, chat_messages, tool_info, usage_of

SHIFT_EVENT_SOURCE = "shiftbox/goal_shift"
"""The `source` of the info event written to the sample's transcript at each goal shift."""


class InspectModelAgent(Agent):
    """`inspect:<model>`: Inspect's model (the eval's `--model` unless given) behind shiftbox's system prompt (the
    instruction block and the domain policy, as the litellm agent's), calling the domain's MCP tools.

    The model sees the conversation only; the goal each user message serves is the harness's ground truth. When
    the user's goal changes, an info event (`SHIFT_EVENT_SOURCE`) goes into the sample's transcript before the
    model is asked to answer, so the Inspect log viewer shows each shift where it happened."""

    def __init__(self, model: Model | None = None):
        self.model = model or get_model()
        self.name = f"inspect:{self.model}"
        self.system_prompt = ""
        self.tools: list[ToolInfo] = []
        self.config = GenerateConfig()
        self.one_tool_per_turn = False
        self.usage = Usage()
        self.limit: LimitExceededError | None = None
        """An Inspect limit (messages, tokens, …) the model call hit: it ended the simulation (an agent error)."""
        self._seen = 0

    async def start(self, context: AgentContext) -> None:
        self.system_prompt = agent_system_prompt(context)
        self.tools = [tool_info(t) for t in context.tools]
        self.one_tool_per_turn = context.one_tool_per_turn
        if context.one_tool_per_turn and self.tools:
            self.config = GenerateConfig(parallel_tool_calls=False)

    async def respond(self, messages: list[Message]) -> AgentReply:
        self.note_goal_shifts(messages)
        try:
            output = await self.model.generate(
                [ChatMessageSystem(content=self.system_prompt), *chat_messages(messages)], tools=self.tools,
                config=self.config)
        except LimitExceededError as exc:
            self.limit = exc
            raise
        self.usage += usage_of(output)
        if output.error:
            raise RuntimeError(f"{self.model}: {output.error}")
        turn = sum(1 for m in messages if m.role == "assistant")
        return agent_reply(output, turn, self.one_tool_per_turn)

    def note_goal_shifts(self, messages: list[Message]) -> None:
        """An info event for each goal shift among the messages not seen yet (the solver calls it once more at the
        end, for a shift in the user's last message, which the model is never asked to answer)."""
        for span in goal_spans(messages, None)[1:]:  # read off the user messages: the harness's records come later
            if span.start >= self._seen:
                transcript().info({"from_goal": span.from_goal, "to_goal": span.goal, "message_index": span.start,
                                   "user_message": messages[span.start].content}, source=SHIFT_EVENT_SOURCE)
        self._seen = len(messages)
