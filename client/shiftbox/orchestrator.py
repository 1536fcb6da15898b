"""One simulation: the turn loop between a user simulator, an agent and a domain episode.

User speaks first; the agent answers with text and/or tool calls (every call goes through the
world's recorder); the user answers and may shift goals — the harness records the exact message
index of each shift. Ends on a stop/transfer/out-of-scope token, an agent transfer, `max_steps`
messages, or `max_tool_errors` consecutive failed tool calls. Failures that are not the agent's
answer (its program did not run, the user simulator or the infrastructure failed) are recorded as such
and blamed accordingly. A task with a gold dialogue (the per-mission protocol) starts from it: the earlier
goals' gold conversation, played on the episode before the user's first live turn.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._stopwatch import stopwatch
from .agents import Agent, AgentContext
from .errors import AgentProgramError, InfrastructureError, ReplayDivergence
from .tasks import Task
from .trajectory import (
    SHIFT_REPORT_TOOL,
    STOP_TOKENS,
    GoalShift,
    Message,
    Termination,
    ToolCall,
    ToolCallRecord,
    Trajectory,
    shift_reports_of,
)
from .users import UserContext, UserSimulator
from .world import (
    CrossWorld,
    ToolSession,
    World,
    apply_initial_state,
    episode_id_for,
    tool_message_content,
)

if TYPE_CHECKING:  # the gateway (an MCP server, with the SDK) is loaded only by the runs whose agents use it
    from .world import RunGateway


@dataclass(frozen=True)
class SimulationLimits:
    max_steps: int = 100
    max_tool_errors: int = 5
    one_tool_per_turn: bool = False
    give_policy: bool = True
    """The agent is given the domain policy (`AgentContext.policy`); False: none (`--policy none`, VitaBench)."""


def derive_seed(run_seed: int, task_id: str, trial: int) -> int:
    """A simulation's seed from (run seed, task id, trial) by hashing — never a shared global RNG."""
    digest = hashlib.sha256(f"{run_seed}\x00{task_id}\x00{trial}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def simulation_id(task_id: str, trial: int) -> str:
    return f"{task_id}#{trial}"


class _Ended(Exception):
    def __init__(self, termination: Termination):
        self.termination = termination


class Simulation:
    """State of one running simulation; `run()` returns its trajectory."""

    def __init__(self, task: Task, trial: int, run_seed: int, agent: Agent, user: UserSimulator,
                 world: World | CrossWorld,
                 limits: SimulationLimits, run_tag: str = "run", episode: ToolSession | None = None,
                 gateway: RunGateway | None = None):
        self.task, self.trial, self.agent, self.user, self.world, self.limits = task, trial, agent, user, world, limits
        self.gateway = gateway
        self.seed = derive_seed(run_seed, task.id, trial)
        self.sim_id = simulation_id(task.id, trial)
        # a closed episode id stays closed on the server, so every simulation gets an id of its own
        self.episode = episode or world.episode(episode_id_for(run_tag, task.id, str(trial), secrets.token_hex(4)))
        self.messages: list[Message] = []
        self.calls: list[ToolCallRecord] = []
        self.setup_calls: list[ToolCallRecord] = []
        self.shifts: list[GoalShift] = []
        self.goal: str | None = None
        self.stacked: list[str] = []
        """Goals a stacked request raised that the user has not turned to yet, in order."""
        self.agent_turns = 0
        self.failed_in_a_row = 0

    def _offers(self, tool: str) -> bool:
        return any(t.get("name") == tool for t in self.world.tools)

    def _add(self, **fields: Any) -> Message:
        message = Message(index=len(self.messages), **fields)
        self.messages.append(message)
        if len(self.messages) >= self.limits.max_steps:
            raise _Ended(Termination(reason="max_steps", detail=f"{self.limits.max_steps} messages", blame="agent"))
        return message

    async def run(self) -> Trajectory:
        start = time.perf_counter()
        with stopwatch() as spent:  # llm_s and mcp_s: where the wall time went
            termination = await self._run_guarded()
            final_state: dict[str, str] = {}
            try:
                final_state = await self.world.close_episode(self.episode)
            except (InfrastructureError, ReplayDivergence) as exc:
                if termination.blame != "infrastructure":
                    reason = "replay_mismatch" if isinstance(exc, ReplayDivergence) else "infrastructure_error"
                    termination = Termination(reason=reason, detail=str(exc), blame="infrastructure")
        timing = {"wall_s": round(time.perf_counter() - start, 4)} | {k: round(v, 4) for k, v in sorted(spent.items())}
        return Trajectory(
            simulation_id=self.sim_id, task_id=self.task.id, trial=self.trial, domain=self.task.domain,
            seed=self.seed, agent=self.agent.name, user=self.user.name, persona=self.task.user_scenario.persona,
            user_simulator=self.user.identity(),
            goals=self.task.goals, servers=self.world.servers, messages=self.messages,
            tool_calls=self.calls, setup_calls=self.setup_calls, shifts=self.shifts,
            shift_reports=shift_reports_of(self.calls) if self._offers(SHIFT_REPORT_TOOL) else None,
            termination=termination, one_tool_per_turn=self.limits.one_tool_per_turn,
            final_state=final_state, timing=timing,
            usage={role: u for role, u in (("agent", self.agent.usage), ("user", self.user.usage))
                   if u is not None and u.calls},
        )

    async def _run_guarded(self) -> Termination:
        try:
            await self._setup()
            while True:
                await self._user_turn()
                await self._agent_turns()
        except _Ended as ended:
            return ended.termination
        except InfrastructureError as exc:
            return Termination(reason="infrastructure_error", detail=str(exc), blame="infrastructure")
        except ReplayDivergence as exc:
            return Termination(reason="replay_mismatch", detail=str(exc), blame="infrastructure")
        except AgentProgramError as exc:
            return Termination(reason="agent_program_error", detail=str(exc), blame="agent_program")

    async def _setup(self) -> None:
        await apply_initial_state(self.episode, self.task.initial_state.tool_calls, self.setup_calls)
        await self._gold_dialogue()
        context = AgentContext(
            domain=self.world.domain.name, policy=self.world.domain.policy if self.limits.give_policy else "",
            tools=self.world.tools, seed=self.seed,
            one_tool_per_turn=self.limits.one_tool_per_turn,
            task=self.task if self.agent.privileged else None,
            gateway=self.gateway.link(self.episode.id) if self.gateway is not None else None,
        )
        try:
            await self.agent.start(context)
        except AgentProgramError:
            raise
        except Exception as exc:
            raise _Ended(Termination(reason="agent_error", detail=f"start: {exc!r}", blame="agent")) from exc
        try:
            await self.user.start(UserContext(task=self.task, seed=self.seed,
                                              goal_tools=dict(self.world.domain.goal_tools)))
        except Exception as exc:
            raise _Ended(Termination(reason="user_error", detail=f"start: {exc!r}", blame="user")) from exc

    async def _gold_dialogue(self) -> None:
        """The gold conversation of the earlier goals (per-mission protocol): the user's requests, the gold calls made
        on the episode (their real results shown; recorded in setup_calls, ids `gold_<turn>_<level>_<i>`) and the gold
        answers, as messages before the live conversation; none of it is an agent turn."""
        for t, turn in enumerate(self.task.initial_state.gold_dialogue):
            self._add(role="user", content=turn.request, goal=turn.goal)
            for level, specs in enumerate(turn.calls):
                calls = [ToolCall(id=f"gold_{t}_{level}_{i}", name=spec.function_name, arguments=dict(spec.params))
                         for i, spec in enumerate(specs)]
                message = self._add(role="assistant", tool_calls=calls)
                for call in calls:
                    record = await self.episode.call(call.name, call.arguments, call_id=call.id,
                                                     message_index=message.index, agent_turn=None)
                    self.setup_calls.append(record)
                    self._add(role="tool", content=tool_message_content(record), tool_call_id=call.id,
                              is_error=record.is_error)
            self._add(role="assistant", content=turn.answer)

    async def _user_turn(self) -> None:
        try:
            reply = await self.user.respond(list(self.messages), list(self.calls))
        except (ReplayDivergence, InfrastructureError):
            raise
        except Exception as exc:
            raise _Ended(Termination(reason="user_error", detail=repr(exc), blame="user")) from exc
        goal = reply.goal if reply.goal is not None else self.goal
        message = self._add(role="user", content=reply.content, goal=goal)
        self._record_shifts(goal, reply.stacked, message.index)
        self.goal = goal
        for token, reason in STOP_TOKENS.items():
            if token in reply.content:
                raise _Ended(Termination(reason=reason, detail=token, blame="none"))

    def _record_shifts(self, goal: str | None, stacked: list[str], index: int) -> None:
        """A shift when the goal changes, and one for each stacked goal, all at this message (a stacked request's
        shifts share its message); turning later to a goal a stacked request raised is no new shift."""
        raised = [goal] if self.goal is not None and goal != self.goal else []
        if raised and goal in self.stacked:
            del self.stacked[:self.stacked.index(goal) + 1]
            raised = []
        previous = goal if self.goal is None else self.stacked[-1] if self.stacked else self.goal
        for to_goal in [*raised, *stacked]:
            if previous is not None and to_goal != previous:
                self.shifts.append(GoalShift(shift_index=len(self.shifts) + 1, from_goal=previous, to_goal=to_goal,
                                             message_index=index))
            previous = to_goal
        self.stacked.extend(stacked)

    async def _agent_turns(self) -> None:
        """Agent turns until the agent answers the user in text (tool calls keep the turn going)."""
        while True:
            try:
                reply = await self.agent.respond(list(self.messages))
            except (ReplayDivergence, InfrastructureError, AgentProgramError):  # e.g. the LLM provider is down, the
                raise  # agent's program exited: no answer of the agent's
            except Exception as exc:
                raise _Ended(Termination(reason="agent_error", detail=repr(exc), blame="agent")) from exc
            calls = reply.tool_calls[:1] if self.limits.one_tool_per_turn else reply.tool_calls
            if not reply.content and not calls:
                raise _Ended(Termination(reason="agent_error", detail="empty reply", blame="agent"))
            turn = self.agent_turns
            self.agent_turns += 1
            message = self._add(role="assistant", content=reply.content, tool_calls=calls, agent_turn=turn)
            if not calls:
                return
            for call in calls:
                await self._execute(call, message.index, turn)

    async def _execute(self, call, message_index: int, turn: int) -> None:
        record = await self.episode.call(call.name, call.arguments, call_id=call.id, message_index=message_index,
                                         agent_turn=turn)
        self.calls.append(record)
        await self.agent.tool_result(call, record)  # an agent that made the call itself (gateway) waits for it
        self._add(role="tool", content=tool_message_content(record), tool_call_id=call.id, is_error=record.is_error)
        self.failed_in_a_row = self.failed_in_a_row + 1 if record.is_error else 0
        if self.failed_in_a_row >= self.limits.max_tool_errors:
            raise _Ended(Termination(reason="too_many_tool_errors",
                                     detail=f"{self.failed_in_a_row} failed tool calls in a row", blame="agent"))
        if call.name in self.world.domain.transfer_tools and not record.is_error:
            raise _Ended(Termination(reason="agent_transfer", detail="transfer_to_human_agents", blame="none"))


async def run_simulation(task: Task, trial: int, run_seed: int, agent: Agent, user: UserSimulator,
                         world: World | CrossWorld,
                         limits: SimulationLimits | None = None, run_tag: str = "run",
                         episode: ToolSession | None = None, gateway: RunGateway | None = None) -> Trajectory:
    """Run one simulation to its end and return its trajectory (never raises for agent/user failures)."""
    simulation = Simulation(task, trial, run_seed, agent, user, world, limits or SimulationLimits(), run_tag,
                            episode, gateway)
    try:
        return await simulation.run()
    finally:
        await agent.close()
        if gateway is not None:
            gateway.detach(simulation.episode.id)
