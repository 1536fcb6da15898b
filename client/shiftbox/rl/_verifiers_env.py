"""The verifiers environment (`shiftbox[verifiers]`, verifiers 0.4's `verifiers.v1`): each rollout is one shiftbox
simulation run by `ShiftboxEnv`.

Its taskset id is `shiftbox-verifiers` (the package `shiftbox_verifiers`; `vf-eval shiftbox-verifiers ...`): it
exports the taskset (one task per shiftbox task and trial), its harness (verifiers' default for it) and its environment.
The model under training is the agent: the harness runs the simulation in-process, asks the model (through the
rollout's interception endpoint, so verifiers records every call in the trace) for each agent turn with shiftbox's
agent system prompt, the conversation so far and the episode's MCP tools, and hands each reply to
`ShiftboxEnv.step` (tool results or the user simulator's answer come back as the next messages) until the
simulation ends. The task scores the finished simulation with shiftbox's own metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from openai import AsyncOpenAI
from pydantic import Field, field_validator
from verifiers.v1.clients import ModelContext
from verifiers.v1.runtimes import ProgramResult, Runtime

from ..metrics import SimulationMetrics
from ..tasks import load_task_file
from ._env import ShiftboxEnv
from ._rewards import REWARDS, reward_function

__all__ = ["ShiftboxHarness", "ShiftboxTaskset", "ShiftboxVerifiersEnv"]

TASKSET_ID = "shiftbox-verifiers"
"""The package `shiftbox_verifiers`, as verifiers names a taskset (`--env.taskset.id`, the positional `vf-eval` argument)."""
METRICS_KEY = "shiftbox_metrics"
TRAJECTORY_KEY = "shiftbox_trajectory"
"""Where a rollout's trace keeps the simulation's `SimulationMetrics` and `Trajectory` as JSON (`trace.info`, written
to verifiers' traces.jsonl)."""


class ShiftboxTaskData(vf.TaskData):
    """One rollout's simulation: the task file, the task and trial, and `ShiftboxEnv`'s options."""

    tasks: str
    task_id: str
    trial: int = 0
    options: dict[str, Any] = Field(default_factory=dict)


class ShiftboxTaskConfig(vf.TaskConfig):
    reward: str = "tsr"
    """The rollout's reward, one of `shiftbox.rl.REWARDS` (`--env.taskset.task.reward`); every other is a metric."""

    @field_validator("reward")
    @classmethod
    def _known(cls, reward: str) -> str:
        reward_function(reward)  # a ValueError naming the choices
        return reward


def simulation_metrics(trace: vf.Trace) -> SimulationMetrics | None:
    """The rollout's shiftbox score, None when the simulation never ended (the model call failed first)."""
    metrics = trace.info.get(METRICS_KEY)
    return SimulationMetrics.model_validate(metrics) if metrics is not None else None


class ShiftboxTask(vf.Task[ShiftboxTaskData, vf.State, ShiftboxTaskConfig]):
    """Scored by shiftbox: the configured reward with weight 1, every other reward in `REWARDS` as a metric."""

    @property
    def key(self) -> str:
        return f"{self.data.task_id}/{self.data.trial}"

    @vf.metric
    async def shiftbox(self, trace: vf.Trace) -> Mapping[str, float]:
        metrics = simulation_metrics(trace)
        return {name: float(reward(metrics)) if metrics is not None else 0.0
                for name, reward in REWARDS.items() if name != self.config.reward}

    @vf.reward
    async def reward(self, trace: vf.Trace) -> Mapping[str, float]:
        metrics = simulation_metrics(trace)
        value = reward_function(self.config.reward)(metrics) if metrics is not None else 0.0
        return {self.config.reward: float(value)}


class ShiftboxTasksetConfig(vf.TasksetConfig):
    task: ShiftboxTaskConfig = ShiftboxTaskConfig()
    tasks: Path | None = None
    """The task file (default: the domain's handwritten tasks in its default snapshot)."""
    domain: str = "banking"
    trials: int = Field(1, ge=1)
    """Rollouts' simulations per task, each with its own trial number (its own seed)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """`ShiftboxEnv`'s options (user, user_args, servers, seed, max_steps, agent_name, ...)."""


class ShiftboxTaskset(vf.Taskset[ShiftboxTask, ShiftboxTasksetConfig]):
    """One task per shiftbox task and trial. The options are planned when the taskset is made, as `shiftbox run`
    plans them, so a bad one raises `RunPlanError` before any rollout."""

    def __init__(self, config: ShiftboxTasksetConfig) -> None:
        super().__init__(config)
        tasks = config.tasks
        if tasks is None:
            from shiftbox_servers.kit import get_domain

            tasks = get_domain(config.domain).default_snapshot_dir() / "tasks-handwritten.json"
        self.tasks_path = str(Path(tasks).resolve())
        self.task_file = load_task_file(Path(self.tasks_path))
        ShiftboxEnv(self.task_file, **config.options)  # planned now: a bad option is refused here

    def load(self):
        for task in self.task_file.tasks:
            for trial in range(self.config.trials):
                # verifiers needs a prompt to start a rollout; the harness replaces it with the simulation's own
                data = ShiftboxTaskData(id=task.id, name=f"{task.id}/{trial}", tasks=self.tasks_path,
                                        task_id=task.id, trial=trial, options=self.config.options,
                                        prompt=f"shiftbox task {task.id}, trial {trial}")
                yield ShiftboxTask(data, self.config.task)


def assistant_message(message: Any) -> dict[str, Any]:
    """An OpenAI chat completion message as the assistant message `ShiftboxEnv.step` takes."""
    calls = [{"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
             for c in (message.tool_calls or [])]
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


class ShiftboxHarnessConfig(vf.HarnessConfig):
    pass


class ShiftboxHarness(vf.Harness[ShiftboxHarnessConfig]):
    """Runs the rollout's simulation in-process; every model call goes through the rollout's endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: ModelContext, trace: vf.Trace, runtime: Runtime, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: vf.TaskData, tool_interception_url: str | None = None
                     ) -> ProgramResult:
        rollout = ShiftboxTaskData.model_validate(data.model_dump())
        env = ShiftboxEnv(load_task_file(Path(rollout.tasks)), **rollout.options)
        model = AsyncOpenAI(base_url=endpoint, api_key=secret)
        result = None
        try:
            observation = await env.reset(rollout.task_id, trial=rollout.trial)
            messages = [{"role": "system", "content": observation.system_prompt}, *observation.messages]
            tools = observation.tools
            while env.result is None:
                request: dict[str, Any] = {"model": ctx.model, "messages": messages}
                if tools:
                    request["tools"] = tools
                completion = await model.chat.completions.create(**request)
                reply = assistant_message(completion.choices[0].message)
                messages.append({k: v for k, v in reply.items() if v or k == "content"})
                observation, _, _, _ = await env.step(reply)
                messages.extend(observation.messages)
        finally:  # the simulation ends with the rollout (truncated if the model stopped first) and is scored
            try:
                result = await env.truncate()
            finally:
                await env.close()
                await model.close()
        if result is not None and "metrics" in result[1]:
            trace.info[METRICS_KEY] = result[1]["metrics"].model_dump(mode="json")
            trace.info[TRAJECTORY_KEY] = result[1]["trajectory"].model_dump(mode="json")
        return ProgramResult(exit_code=0, stdout="", stderr="")


class ShiftboxEnvConfig(vf.SingleAgentEnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The policy's seat. The harness runs in verifiers' own process and executes nothing, so the runtime verifiers
    provisions for it is a local subprocess one (verifiers' default is a remote sandbox)."""


class ShiftboxVerifiersEnv(vf.Env[ShiftboxEnvConfig]):
    """The single-agent environment of the taskset: one episode is one rollout of the policy's seat."""

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)


def environment_config(tasks: str | Path | None = None, *, domain: str = "banking", reward: str = "tsr",
                       trials: int = 1, **env_options: Any) -> vf.EnvConfig:
    """The verifiers environment config of this taskset (what `vf-eval shiftbox-verifiers --env.taskset.*`
    builds from its flags)."""
    taskset = ShiftboxTasksetConfig(id=TASKSET_ID, tasks=Path(tasks) if tasks is not None else None, domain=domain,
                                    trials=trials, options=env_options, task=ShiftboxTaskConfig(reward=reward))
    return ShiftboxEnvConfig(taskset=taskset)


def load_environment(tasks: str | Path | None = None, *, domain: str = "banking", reward: str = "tsr",
                     trials: int = 1, **env_options: Any) -> ShiftboxVerifiersEnv:
    """The verifiers environment: a task file (default: the domain's handwritten tasks in its default snapshot), the
    reward's name, trials per task, and `ShiftboxEnv`'s options (user, user_args, servers, seed, max_steps, ...)."""
    return vf.load_environment(environment_config(tasks, domain=domain, reward=reward, trials=trials,
                                                  **env_options))
