"""A gym-style environment over shiftbox simulations: the policy being trained is the agent.

`await env.reset(task)` starts a simulation in a fresh episode on the domain's server and returns what the
agent is given first (the user simulator's opening message, the tools, the policy); `await env.step(message)`
hands the policy's assistant message (text and/or tool calls) to it and returns `(observation, reward, done,
info)`: tool calls are executed in the episode and their results come back, text goes to the user simulator
and its reply comes back. The environment is planned as a run is (`plan_run`, the policy an `ExternalAgent`), and
each simulation is run by the run's own path (`simulate_one`, in a background task, with a `PolicyAgent` whose
`respond` waits for `step`), so the options, the trajectory, its end and its scores are a normal run's.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic import BaseModel, Field

from ..agents import (
    AgentContext,
    AgentReply,
    agent_system_prompt,
    reply_from_message,
    to_openai_messages,
    tool_schema,
)
from ..errors import ShiftboxError
from ..metrics import simulation_metrics
from ..runs import (
    ExecutionOptions,
    ExternalAgent,
    RunConfig,
    RunHooks,
    RunPlan,
    plan_run,
    simulate_one,
)
from ..tasks import Task, TaskFile
from ..trajectory import Message
from ..world import CrossWorld, ToolSession, World, episode_id_for
from ._policy import TRUNCATE, EpisodeEnd, Event, PolicyAgent, PolicyTurn, channel
from ._rewards import Reward, reward_function

AssistantMessage = str | dict[str, Any] | AgentReply
"""What `step` takes: text, an OpenAI-style assistant message (`content`, `tool_calls`), or an AgentReply."""


class EnvironmentInUse(ShiftboxError, RuntimeError):
    """A call on an environment while another of its calls is still running (two `reset`s, two `step`s, ... at once):
    one environment plays one episode, one call at a time."""


class EnvironmentClosed(ShiftboxError, RuntimeError):
    """A call on an environment after `close()`: its server is stopped for good."""


class Observation(BaseModel):
    """What the agent sees after `reset` or `step`."""

    messages: list[dict[str, Any]] = Field(
        description="the messages added since the last step, OpenAI chat format: the user simulator's (role user) "
                    "or the tool results (role tool, `tool_call_id` the id the step's call carried)")
    system_prompt: str = Field("", description="what shiftbox's LLM agents are told: instructions and the policy")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="the episode's tools, OpenAI function format")
    policy: str = Field("", description="the domain policy (empty with `policy=\"none\"`)")


@dataclass
class _Episode:
    """One simulation in progress (or just ended)."""

    task: Task
    agent: PolicyAgent
    events: MemoryObjectReceiveStream[Event]
    runner: asyncio.Task[None]
    seen: int = 0
    turn: int = 0
    ids: dict[str, str] = field(default_factory=dict)
    end: tuple[float, dict[str, Any]] | None = None


def _close_channels(episode: _Episode) -> None:
    """The ended episode's memory streams closed (closing twice does nothing), so no reset leaves any open."""
    episode.agent.close_channels()
    episode.events.close()


class ShiftboxEnv:
    """One simulation per `reset`, stepped by the policy; reward from shiftbox's metrics once done.

    `tasks`: a task file (path or `TaskFile`) or tasks, so `reset` also takes a task id. The options are
    `shiftbox run`'s and are checked by its planning (`plan_run`) when the environment is made (a bad one raises
    `RunPlanError` naming the fix; without `tasks`, at the first `reset` of each domain): `user`/`user_args` (the user
    simulator's SPEC and options), `seed` (the run seed each simulation's seed derives from, with the task id and
    trial), `max_steps`, `max_tool_errors`, `one_tool_per_turn`, `policy` ("none": the policy is given no domain
    policy), and the domain server: `servers`, `snapshot` (default: the task file's), `toolset` (default: the task
    file's), `dependency_graph`, `graph_refusal`. Or pass an open `world` (`shiftbox.open_world`) to share one server between
    environments (each episode is still its own). `reward`: a name in `REWARDS` or a callable on the
    `SimulationMetrics`; `agent_name` is recorded as `Trajectory.agent`. Use it in one asyncio event loop, one call
    at a time (a call while another runs is refused, `EnvironmentInUse`; concurrent episodes take an environment
    each); `close()` (or `async with`) ends everything, and a closed environment refuses every call
    (`EnvironmentClosed`).
    """

    def __init__(self, tasks: Path | str | TaskFile | Sequence[Task] | None = None, *, user: str = "scripted",
                 user_args: dict[str, str] | None = None, servers: str = "inproc", snapshot: Path | str | None = None,
                 toolset: str | None = None, dependency_graph: bool = False, graph_refusal: bool = False,
                 seed: int = 0, max_steps: int = 100,
                 max_tool_errors: int = 5, one_tool_per_turn: bool = False, policy: str = "domain",
                 reward: str | Reward = "tsr", success_threshold: float = 1.0, agent_name: str = "rl:policy",
                 world: World | CrossWorld | None = None):
        self.agent_name = agent_name
        self.run_options: dict[str, Any] = {
            "agent": ExternalAgent(agent_name), "user": user, "user_args": user_args, "servers": servers,
            "snapshot": snapshot, "toolset": toolset, "dependency_graph": dependency_graph,
            "graph_refusal": graph_refusal, "seed": seed,
            "max_steps": max_steps, "max_tool_errors": max_tool_errors, "one_tool_per_turn": one_tool_per_turn,
            "policy": policy, "options": ExecutionOptions()}
        """`plan_run`'s arguments, as `shiftbox run` passes its options."""
        self.plans: dict[str, RunPlan] = {}
        """Domain -> the plan its episodes run by."""
        for task_file in _task_files(tasks):
            plan = self._plan(task_file)
            self.plans.setdefault(plan.config.domain, plan)
        self.tasks: dict[str, Task] = {t.id: t for plan in self.plans.values() for t in plan.tasks}
        self.success_threshold = success_threshold
        self.reward = reward_function(reward)
        self._shared_world = world
        self._held: _HeldWorld | None = None
        self._episode: _Episode | None = None
        self._running: str | None = None  # the call in progress
        self._closed = False

    def _plan(self, tasks: Path | str | TaskFile) -> RunPlan:
        """The environment's options checked and resolved for `tasks` by `shiftbox run`'s planning (nothing written)."""
        return plan_run(tasks, ".", **self.run_options)

    async def __aenter__(self) -> ShiftboxEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def result(self) -> tuple[float, dict[str, Any]] | None:
        """`(reward, info)` once the episode has ended; None while it runs (or before the first reset)."""
        return self._episode.end if self._episode is not None else None

    # -- the gym interface ----------------------------------------------------------------------------

    async def reset(self, task: Task | str, *, trial: int = 0) -> Observation:
        """Start a simulation of `task` (or a task id of `tasks`) in a fresh episode; ends the previous one."""
        with self._one_call("reset"):
            return await self._reset(task, trial)

    async def _reset(self, task: Task | str, trial: int) -> Observation:
        await self._truncate()
        task = self._task(task)
        plan = self.plans.get(task.domain) or self.plans.setdefault(
            task.domain, self._plan(_task_files([task])[0]))
        world = await self._world(plan.config)
        send, receive = channel()
        agent = PolicyAgent(self.agent_name, send)

        async def simulate() -> None:
            try:
                trajectory = await simulate_one(plan, task, trial, lambda: agent, world=world, hooks=_FRESH_EPISODES,
                                                run_tag=EPISODE_TAG)
                send.send_nowait(EpisodeEnd(trajectory))
            except Exception as exc:  # e.g. the server is gone: `step` raises it
                send.send_nowait(EpisodeEnd(None, exc))

        self._episode = _Episode(task, agent, receive, asyncio.get_running_loop().create_task(simulate()))
        observation, _, _, _ = await self._advance(self._episode)
        return observation

    async def step(self, message: AssistantMessage) -> tuple[Observation, float, bool, dict[str, Any]]:
        """Hand the policy's assistant message to the simulation; `(observation, reward, done, info)`.

        Reward is 0 until done; then `info` holds `trajectory` and `metrics` (`SimulationMetrics`)."""
        with self._one_call("step"):
            episode = self._episode
            if episode is None or episode.end is not None:
                raise RuntimeError("step() needs a running episode: call reset(task) first (done episodes take no "
                                   "steps)")
            episode.agent.replies.send_nowait(self._reply(episode, message))
            return await self._advance(episode)

    async def truncate(self) -> tuple[float, dict[str, Any]] | None:
        """End the running episode now (a trainer's turn budget ran out): the trajectory ends as an agent error
        and is scored; `(reward, info)` of the episode (None before the first reset)."""
        with self._one_call("truncate"):
            return await self._truncate()

    async def _truncate(self) -> tuple[float, dict[str, Any]] | None:
        episode = self._episode
        if episode is None:
            return None
        while episode.end is None:
            episode.agent.replies.send_nowait(TRUNCATE)
            await self._advance(episode)
        return episode.end

    async def close(self) -> None:
        """End the running episode and stop the server this environment started; nothing is left running. Closing
        again does nothing; closing while another call runs is refused (`EnvironmentInUse`: cancel that call)."""
        if self._closed:
            return
        with self._one_call("close"):
            self._closed = True
            await self._close()

    async def _close(self) -> None:
        try:
            await self._truncate()
        finally:
            if self._episode is not None and not self._episode.runner.done():
                self._episode.runner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._episode.runner
            if self._episode is not None:
                _close_channels(self._episode)
            if self._held is not None:
                held, self._held = self._held, None
                await held.close()

    # -- inside ---------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _one_call(self, call: str) -> Iterator[None]:
        """Refuse a call on a closed environment, or while another call runs (checked and taken with no await
        between, so two tasks of the loop cannot both pass)."""
        if self._closed:
            raise EnvironmentClosed(f"{call}() on a closed environment: its server is stopped; make a new "
                                    "ShiftboxEnv for more episodes")
        if self._running is not None:
            raise EnvironmentInUse(f"{call}() while {self._running}() is still running on this environment: await "
                                   "each call before the next (episodes at once need an environment each, e.g. "
                                   "sharing a `world`)")
        self._running = call
        try:
            yield
        finally:
            self._running = None

    def _task(self, task: Task | str) -> Task:
        if isinstance(task, Task):
            return task
        if task not in self.tasks:
            raise KeyError(f"no task {task!r} in this environment's tasks ({len(self.tasks)} tasks)")
        return self.tasks[task]

    async def _world(self, config: RunConfig) -> World | CrossWorld:
        """The shared world, or the one this environment holds open for the plan's domain (opened as a run opens
        its world, `RunHooks.world`)."""
        domain = config.domain
        if self._shared_world is not None:
            if self._shared_world.domain.name != domain:
                raise ValueError(f"a {domain} task on the shared {self._shared_world.domain.name} world")
            return self._shared_world
        if self._held is not None and self._held.world.domain.name != domain:
            held, self._held = self._held, None
            await held.close()
        if self._held is None:
            self._held = await _HeldWorld.open(config)
        return self._held.world

    def _reply(self, episode: _Episode, message: AssistantMessage) -> AgentReply:
        """The AgentReply for a step; an OpenAI message's calls get the harness's ids (as an LLM agent's do),
        and its own ids come back in the tool results."""
        if isinstance(message, AgentReply):
            return message
        if isinstance(message, str):
            return AgentReply(content=message)
        if not isinstance(message, dict):
            raise TypeError(f"step() takes text, an OpenAI-style assistant message or an AgentReply, "
                            f"not {type(message).__name__}")
        one_tool = episode.agent.context is not None and episode.agent.context.one_tool_per_turn
        reply = reply_from_message(message, episode.turn, one_tool)
        for call, raw in zip(reply.tool_calls, message.get("tool_calls") or [], strict=False):
            if raw.get("id"):
                episode.ids[call.id] = raw["id"]
        return reply

    async def _advance(self, episode: _Episode) -> tuple[Observation, float, bool, dict[str, Any]]:
        """Wait for the simulation's next event: the policy's turn, or the end (scored)."""
        event = await episode.events.receive()
        if isinstance(event, PolicyTurn):
            episode.turn = sum(m.role == "assistant" for m in event.messages)
            return self._observation(episode, event.messages), 0.0, False, {}
        await episode.runner
        _close_channels(episode)
        if event.error is not None:
            episode.end = (0.0, {"error": event.error})
            raise event.error
        trajectory = event.trajectory
        metrics = simulation_metrics(trajectory, episode.task, None, self.success_threshold)
        reward = float(self.reward(metrics))
        episode.end = (reward, {"trajectory": trajectory, "metrics": metrics})
        return self._observation(episode, trajectory.messages), reward, True, episode.end[1]

    def _observation(self, episode: _Episode, messages: list[Message]) -> Observation:
        new = to_openai_messages([m for m in messages[episode.seen:] if m.role != "assistant"])  # not the policy's own
        episode.seen = len(messages)
        for item in new:
            if item["role"] == "tool":
                item["tool_call_id"] = episode.ids.get(item["tool_call_id"], item["tool_call_id"])
        context: AgentContext | None = episode.agent.context
        if context is None:
            return Observation(messages=new)
        return Observation(messages=new, system_prompt=agent_system_prompt(context),
                           tools=[tool_schema(t) for t in context.tools], policy=context.policy)


EPISODE_TAG = "rl"
"""What an environment's episode ids begin with: `rl.<task id>.<trial>.<random>`."""


class _FreshEpisodes(RunHooks):
    """Every episode under an id of its own (a random part after the run's): an environment resets one task many
    times on one server, and a closed episode id stays closed there."""

    def episode(self, world: World, task: Task, trial: int, episode_id: str) -> ToolSession | None:
        return world.episode(episode_id_for(episode_id, secrets.token_hex(4)))


_FRESH_EPISODES = _FreshEpisodes()
IN_MEMORY = "tasks given to ShiftboxEnv"
"""The source of the task file planned for tasks given as objects (planning's messages name it)."""


def _task_files(tasks: Path | str | TaskFile | Sequence[Task] | None) -> list[Path | str | TaskFile]:
    """What to plan for: the task file as given, or in-memory tasks as a task file per domain (in first-seen order)."""
    if tasks is None or isinstance(tasks, str | Path | TaskFile):
        return [] if tasks is None else [tasks]
    domains = list(dict.fromkeys(t.domain for t in tasks))
    return [TaskFile(domain=d, source=IN_MEMORY, tasks=[t for t in tasks if t.domain == d]) for d in domains]


class _HeldWorld:
    """A world opened and closed in a task of its own (its task group cannot span the caller's tasks)."""

    def __init__(self) -> None:
        self.world: World | CrossWorld | None = None
        self._stop = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    @classmethod
    async def open(cls, config: RunConfig) -> _HeldWorld:
        held = cls()
        ready = asyncio.Event()

        async def hold() -> None:
            try:
                async with RunHooks().world(config) as world:
                    held.world = world
                    ready.set()
                    await held._stop.wait()
            except Exception as exc:
                held._error = exc
            finally:
                ready.set()

        held._runner = asyncio.get_running_loop().create_task(hold())
        await ready.wait()
        if held.world is None:
            await held._runner
            raise held._error or RuntimeError(f"could not open the {config.domain} world")
        return held

    async def close(self) -> None:
        self._stop.set()
        if self._runner is not None:
            await self._runner
