"""The verifiers environment (`shiftbox[verifiers]`): each rollout is one shiftbox simulation run by `ShiftboxEnv`.

The model under training is the agent: its prompt is shiftbox's agent system prompt and the user simulator's
opening message, its tools the episode's MCP tools; each of its replies is one `ShiftboxEnv.step` (tool results
or the user simulator's answer come back as the environment's response), and the rollout ends when the
simulation does. `ShiftboxRubric` scores the finished trajectory with shiftbox's own metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import verifiers as vf
from datasets import Dataset
from verifiers.utils.message_utils import normalize_messages

from ..metrics import SimulationMetrics
from ..tasks import TaskFile, load_task_file
from ._env import Observation, ShiftboxEnv
from ._rewards import REWARDS, Reward, reward_function

ENV_KEY = "shiftbox_env"
METRICS_KEY = "shiftbox_metrics"
TRAJECTORY_KEY = "shiftbox_trajectory"
"""Where a rollout's state keeps its ShiftboxEnv (until cleanup), then the simulation's `SimulationMetrics` and
`Trajectory` as JSON (so `state_columns=[METRICS_KEY, TRAJECTORY_KEY]` puts them in verifiers' outputs)."""


def _metric(name: str, reward: Reward):
    async def score(state: vf.State) -> float:
        metrics = state.get(METRICS_KEY)
        return float(reward(SimulationMetrics.model_validate(metrics))) if metrics is not None else 0.0

    score.__name__ = name
    return score


class ShiftboxRubric(vf.Rubric):
    """Every reward in `REWARDS` as a verifiers metric of the rollout's simulation; `reward` (a name or a
    callable on `SimulationMetrics`) is the one with weight 1, the rollout's reward."""

    def __init__(self, reward: str | Reward = "tsr", **kwargs: Any):
        super().__init__(**kwargs)
        chosen = reward if isinstance(reward, str) else "reward"
        for name, function in REWARDS.items():
            if name != chosen:
                self.add_metric(_metric(name, function))
        self.add_reward_func(_metric(chosen, reward_function(reward)), weight=1.0)


def _text(content: Any) -> str | None:
    """A verifiers message content (text or parts) as text."""
    if content is None or isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text") or None


def assistant_message(message: Any) -> dict[str, Any]:
    """A verifiers assistant message as an OpenAI-style dict (what `ShiftboxEnv.step` takes)."""
    calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
             for c in (message.get("tool_calls") or [])]
    return {"role": "assistant", "content": _text(message.get("content")), "tool_calls": calls}


class ShiftboxVerifiersEnv(vf.MultiTurnEnv):
    """One rollout per dataset row (a task id and trial): shiftbox's user simulator answers the model.

    `env_options` are `ShiftboxEnv`'s (user, user_args, servers, snapshot, seed, max_steps, ...), checked by
    `shiftbox run`'s planning when this environment is made (a bad one raises `RunPlanError`); each rollout gets an
    environment of its own (its own server and episode), closed when the rollout ends."""

    def __init__(self, tasks: TaskFile, *, reward: str | Reward = "tsr", trials: int = 1,
                 env_options: dict[str, Any] | None = None, max_turns: int = -1, **kwargs: Any):
        self.task_file = tasks
        self.env_options = dict(env_options or {})
        ShiftboxEnv(tasks, **self.env_options)  # planned now, so a bad option is refused before any rollout
        rows = [{"prompt": [{"role": "user", "content": task.id}], "answer": "",
                 "info": {"task_id": task.id, "trial": trial}}
                for task in tasks.tasks for trial in range(trials)]
        super().__init__(dataset=Dataset.from_list(rows), rubric=ShiftboxRubric(reward), max_turns=max_turns,
                         **kwargs)

    async def setup_state(self, state: vf.State) -> vf.State:
        env = ShiftboxEnv(self.task_file, **self.env_options)
        state[ENV_KEY] = env
        observation = await env.reset(state["info"]["task_id"], trial=int(state["info"].get("trial", 0)))
        prompt = [{"role": "system", "content": observation.system_prompt}, *observation.messages]
        state["prompt"] = normalize_messages(prompt, field_name="prompt")
        state["tool_defs"] = [vf.Tool(name=t["function"]["name"], description=t["function"]["description"],
                                      parameters=t["function"]["parameters"]) for t in observation.tools]
        if env.result is not None:  # the simulation ended before the model's first turn
            state["final_env_response"] = []
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        env: ShiftboxEnv = state[ENV_KEY]
        observation, _, done, _ = await env.step(assistant_message(messages[-1]))
        response = self._messages(observation)
        if done:
            state["final_env_response"] = response
        return response

    @staticmethod
    def _messages(observation: Observation) -> vf.Messages:
        return normalize_messages(observation.messages, field_name="env_response")

    @vf.cleanup
    async def finish_simulation(self, state: vf.State) -> None:
        """The simulation ends with the rollout (truncated if the model stopped first) and is scored."""
        env: ShiftboxEnv | None = state.pop(ENV_KEY, None)
        if env is None:
            return
        try:
            result = await env.truncate()
        finally:
            await env.close()
        if result is not None and "metrics" in result[1]:
            state[METRICS_KEY] = result[1]["metrics"].model_dump(mode="json")
            state[TRAJECTORY_KEY] = result[1]["trajectory"].model_dump(mode="json")


def load_environment(tasks: str | Path | None = None, *, domain: str = "banking", reward: str | Reward = "tsr",
                     trials: int = 1, **env_options: Any) -> ShiftboxVerifiersEnv:
    """The verifiers entry: a task file (default: the domain's handwritten tasks in its default snapshot),
    the reward, trials per task, and `ShiftboxEnv`'s options (user, user_args, servers, seed, max_steps, ...)."""
    if tasks is None:
        from shiftbox_servers.kit import get_domain

        tasks = get_domain(domain).default_snapshot_dir() / "tasks-handwritten.json"
    return ShiftboxVerifiersEnv(load_task_file(Path(tasks)), reward=reward, trials=trials, env_options=env_options)
