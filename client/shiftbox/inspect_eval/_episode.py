"""Any Inspect agent as the agent (`--solver`): the sample's simulation is a `shiftbox.rl.ShiftboxEnv` episode whose
domain tools and customer are Inspect tools, so the agent's calls are Inspect tool events and recorded by shiftbox.

The task's setup step starts the episode (skipped when the task's own solver runs) and puts shiftbox's system
prompt and the customer's opening into the sample's messages; `shiftbox_tools()` gives an agent the episode's
tools (the domain's, then `reply_to_customer`, which hands text to shiftbox's user simulator and returns the
answer); the scorer ends the episode if the conversation has not ended and scores its trajectory; cleanup closes it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import anyio
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolDef
from inspect_ai.util import store

from ..rl import Observation, ShiftboxEnv
from ..runs import RunPlan
from ..tasks import Task
from ..trajectory import Trajectory
from ._convert import tool_info
from ._solver import TASK_KEY, TRAJECTORY_KEY, simulation

EPISODE_KEY = "shiftbox_episode"
"""Sample store: the id of the sample's episode while an agent plays it (the episode itself stays in memory)."""
REPLY_TOOL = "reply_to_customer"
"""The tool through which the agent talks to the customer (shiftbox's user simulator)."""
ENDED = "[The conversation with the customer has ended.]"
"""What a tool answers once the simulation has ended (the customer left, or a shiftbox limit ended it)."""
TALK_BY_TOOL = (f"\n\nYou talk to the customer only through the `{REPLY_TOOL}` tool: call it with what you say; it "
                "returns the customer's answer.")


@dataclass
class SampleEpisode:
    """One sample's simulation, stepped by the agent's tool calls (one call at a time)."""

    env: ShiftboxEnv
    tools: list[Tool] = field(default_factory=list)
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def step(self, message: str | dict[str, Any]) -> str:
        """Hand one assistant message to the simulation; the text of what comes back (tool results, or the
        customer's answer), with `ENDED` once the simulation is over."""
        async with self.lock:
            if self.env.result is not None:
                return ENDED
            observation, _, done, info = await self.env.step(message)
            text = "\n".join(m.get("content") or "" for m in observation.messages)
            if done:
                store().set(TRAJECTORY_KEY, info["trajectory"].model_dump(mode="json"))
                return f"{text}\n{ENDED}".strip()
            return text


_EPISODES: dict[str, SampleEpisode] = {}


def default_solver_runs() -> bool:
    """Whether the sample's solver is the task's own (`simulation`, which runs the simulation itself)."""
    # Inspect has no public way for a setup step to learn which solver follows it; the active sample holds the
    # unqualified name of the plan's last step (`inspect_ai.log._samples`, a private module).
    from inspect_ai.log._samples import sample_active

    active = sample_active()
    return active is not None and (active.agent_name or "").rsplit("/", 1)[-1] == simulation.__name__


def domain_tool(episode: SampleEpisode, mcp_tool: dict[str, Any]) -> Tool:
    """One of the domain's tools as an Inspect tool: a call is one assistant message with that call, executed and
    recorded by shiftbox's harness; it returns the tool's result as the agent would see it."""
    info = tool_info(mcp_tool)

    async def call(**kwargs: Any) -> str:
        return await episode.step({"role": "assistant", "content": None, "tool_calls": [
            {"id": "inspect", "type": "function",
             "function": {"name": info.name, "arguments": json.dumps(kwargs)}}]})

    return ToolDef(call, name=info.name, description=info.description, parameters=info.parameters).as_tool()


def reply_tool(episode: SampleEpisode) -> Tool:
    """The customer as an Inspect tool: the text goes to shiftbox's user simulator, its answer comes back."""

    async def reply_to_customer(message: str) -> str:
        """Say something to the customer and get the customer's answer.

        Args:
          message: What you say to the customer.
        """
        return await episode.step(message)

    return ToolDef(reply_to_customer, name=REPLY_TOOL).as_tool()


def mcp_tools(observation: Observation) -> list[dict[str, Any]]:
    """The episode's tools (OpenAI function format in the observation) as MCP tool descriptions."""
    return [{"name": t["function"]["name"], "description": t["function"].get("description"),
             "inputSchema": t["function"].get("parameters")} for t in observation.tools]


@solver
def episode_setup(plan: RunPlan) -> Solver:
    """The task's setup step: for a swapped-in solver, start the sample's episode (trial = epoch - 1, `plan`'s
    options) and give the agent shiftbox's system prompt, the customer's opening and the episode's tools
    (`state.tools`, and `shiftbox_tools()` for agents given their tools); nothing when the task's own solver runs."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if default_solver_runs():
            return state
        task = Task.model_validate(state.metadata[TASK_KEY])
        env = ShiftboxEnv(agent_name=f"inspect:{get_model()}")
        env.plans[task.domain] = plan  # the task's own plan: its options, checked when the task was made
        episode = SampleEpisode(env)
        key = secrets.token_hex(8)
        _EPISODES[key] = episode
        state.store.set(EPISODE_KEY, key)
        observation = await env.reset(task, trial=state.epoch - 1)
        episode.tools = [*(domain_tool(episode, t) for t in mcp_tools(observation)), reply_tool(episode)]
        state.tools = list(episode.tools)
        state.messages = [ChatMessageSystem(content=observation.system_prompt + TALK_BY_TOOL),
                          *(ChatMessageUser(content=m.get("content") or "") for m in observation.messages)]
        return state

    return solve


def sample_episode() -> SampleEpisode | None:
    """The episode of the sample running now (None outside a shiftbox sample played by a swapped-in solver)."""
    key = store().get(EPISODE_KEY)
    return _EPISODES.get(key) if key is not None else None


class ShiftboxTools:
    """An Inspect `ToolSource`: the tools of the running sample's episode, resolved when the agent asks."""

    async def tools(self) -> list[Tool]:
        episode = sample_episode()
        if episode is None:
            raise RuntimeError("shiftbox_tools() gives the tools of a shiftbox sample: use it in an agent run as the "
                               "solver of a shiftbox task (inspect eval shiftbox/banking --solver ...)")
        return list(episode.tools)


def shiftbox_tools() -> ShiftboxTools:
    """The domain's tools and `reply_to_customer` for an Inspect agent, e.g. `react(tools=[shiftbox_tools()])`
    (agents take their tools as arguments; solvers built on `generate()` get them from `state.tools` too)."""
    return ShiftboxTools()


async def finish_episode(state: TaskState) -> None:
    """Store the trajectory of the sample's episode (ended now if the conversation has not ended: the agent
    stopped, or an Inspect limit stopped it), as the task's own solver stores its simulation's."""
    key = state.store.get(EPISODE_KEY)
    episode = _EPISODES.get(key) if key is not None else None
    if episode is None:
        return
    async with episode.lock:
        result = episode.env.result or await episode.env.truncate()
    trajectory: Trajectory | None = result[1].get("trajectory") if result is not None else None
    if trajectory is None:  # the episode failed (its error ended the sample) or never started
        return
    recorded = trajectory.model_dump(mode="json")
    state.store.set(TRAJECTORY_KEY, recorded)
    state.metadata[TRAJECTORY_KEY] = recorded


async def close_episode(state: TaskState) -> None:
    """The task's cleanup: close the sample's episode (and the server its environment opened)."""
    key = state.store.get(EPISODE_KEY)
    episode = _EPISODES.pop(key, None) if key is not None else None
    if episode is not None:
        await episode.env.close()
