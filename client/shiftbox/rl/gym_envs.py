"""Gymnasium environments over `ShiftboxEnv` (the optional extra `shiftbox[gym]`; docs/rl.md).

Importing this module registers `ENV_ID` with Gymnasium, so `gymnasium.make("shiftbox.rl.gym_envs:shiftbox/Shiftbox-v0",
tasks=...)` works from a fresh process. Observations and actions are text (`TextSpace`): an observation is the JSON
list of the messages added since the last step (OpenAI chat format); an action is the policy's reply, plain text for
the user or a JSON object with `content` and/or `tool_calls`. Gymnasium's API is synchronous and `ShiftboxEnv` is
async: each environment (or vector of them) runs its episodes in an event loop in a thread of its own (an anyio
blocking portal), which `close()` stops. `ShiftboxVectorEnv` steps its environments concurrently in that one loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np
from anyio.from_thread import BlockingPortal, start_blocking_portal
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..tasks import Task
from ._env import AssistantMessage, Observation, ShiftboxEnv

ENV_ID = "shiftbox/Shiftbox-v0"
"""The registered id: `gymnasium.make(ENV_ID, tasks=..., **ShiftboxEnv options)`; `make_vec(ENV_ID, num_envs=N,
vectorization_mode="vector_entry_point")` gives a `ShiftboxVectorEnv`."""

MAX_OBSERVATION_CHARS = 1 << 22
MAX_ACTION_CHARS = 1 << 12


class TextSpace(spaces.Text):
    """Any Python string up to `max_length` characters (Gymnasium's `Text` only admits its charset's characters,
    and conversations are in any language); `sample()` draws from the printable ASCII charset."""

    def __init__(self, max_length: int):
        super().__init__(max_length, min_length=0, charset="".join(chr(c) for c in range(32, 127)))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


GymStep = tuple[str, float, bool, bool, dict[str, Any]]


def observation_text(observation: Observation) -> str:
    """The Gymnasium observation: the new messages as a JSON list (OpenAI chat format)."""
    return json.dumps(observation.messages, ensure_ascii=False)


def action_message(action: str | dict[str, Any]) -> AssistantMessage:
    """The assistant message of a Gymnasium action: a JSON object with `content`/`tool_calls` is an OpenAI-style
    message, any other text is said to the user (a dict is taken as the message itself)."""
    if isinstance(action, dict):
        return action
    if not isinstance(action, str):
        raise TypeError(f"a shiftbox Gymnasium action is text (or an OpenAI-style message dict), "
                        f"not {type(action).__name__}")
    if action.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            message = json.loads(action)
            if isinstance(message, dict) and message.keys() & {"content", "tool_calls"}:
                return {"role": "assistant", **message}
    return action


class _GymEpisodes:
    """One `ShiftboxEnv` seen through Gymnasium's API (async, run in the owner's event loop): text in, text out,
    `terminated`/`truncated` from how the simulation ended."""

    def __init__(self, env: ShiftboxEnv, task_id: str | None):
        self.env = env
        self.task_id = task_id
        if task_id is not None and task_id not in env.tasks:
            raise KeyError(f"no task {task_id!r} in the environment's tasks: {', '.join(sorted(env.tasks))}")
        if task_id is None and not env.tasks:
            raise ValueError("a shiftbox Gymnasium environment needs `tasks` (a task file or a list of tasks)")

    def task(self, rng: np.random.Generator, options: dict[str, Any] | None) -> Task | str:
        """`options["task_id"]`, else the environment's `task_id`, else a task drawn with the reset's seeded rng."""
        chosen = (options or {}).get("task_id") or self.task_id
        if chosen is not None:
            return chosen
        ids = sorted(self.env.tasks)
        return ids[int(rng.integers(len(ids)))]

    async def reset(self, rng: np.random.Generator, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        task = self.task(rng, options)
        observation = await self.env.reset(task, trial=int((options or {}).get("trial", 0)))
        info = {"task_id": task, "system_prompt": observation.system_prompt, "tools": observation.tools,
                "policy": observation.policy}
        return observation_text(observation), info

    async def step(self, action: str | dict[str, Any]) -> GymStep:
        observation, reward, done, info = await self.env.step(action_message(action))
        trajectory = info.get("trajectory")
        truncated = bool(done and trajectory is not None and trajectory.termination.reason == "max_steps")
        return observation_text(observation), float(reward), done and not truncated, truncated, dict(info)


def _portal() -> tuple[contextlib.ExitStack, BlockingPortal]:
    stack = contextlib.ExitStack()
    return stack, stack.enter_context(start_blocking_portal("asyncio"))


def _shiftbox_env(tasks: Any, options: dict[str, Any]) -> ShiftboxEnv:
    if options.get("world") is not None:
        raise TypeError("world= cannot be shared with a Gymnasium environment: it runs its episodes in an event loop "
                        "of its own; leave it out (each environment then holds its own server)")
    return ShiftboxEnv(tasks, **options)


class ShiftboxGymEnv(gymnasium.Env[str, str]):
    """A `gymnasium.Env` playing shiftbox simulations: the policy is the agent. `tasks` and the options are
    `ShiftboxEnv`'s; `task_id` fixes the task of every `reset` (else `reset(options={"task_id": ...})` or a task
    drawn with the reset's seed). `reset(seed=, options={"task_id", "trial"})` returns the text observation and an
    info with `system_prompt`, `tools`, `policy`; the last `step` also has `trajectory` and `metrics` in its info."""

    metadata = {"render_modes": []}

    def __init__(self, tasks: Any = None, *, task_id: str | None = None, **options: Any):
        self.observation_space = TextSpace(MAX_OBSERVATION_CHARS)
        self.action_space = TextSpace(MAX_ACTION_CHARS)
        self._stack, self._portal = _portal()
        try:
            self._episodes = _GymEpisodes(self._portal.call(_make, tasks, options), task_id)
        except BaseException:
            self._stack.close()
            raise

    @property
    def shiftbox_env(self) -> ShiftboxEnv:
        """The async environment underneath (it lives in this environment's event loop thread)."""
        return self._episodes.env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        return self._portal.call(self._episodes.reset, self.np_random, options)

    def step(self, action: str | dict[str, Any]) -> GymStep:
        return self._portal.call(self._episodes.step, action)

    def close(self) -> None:
        """End the episode, stop the server and the event loop thread; closing again does nothing."""
        stack, self._stack = self._stack, None
        if stack is not None:
            with stack:
                self._portal.call(self._episodes.env.close)


async def _make(tasks: Any, options: dict[str, Any]) -> ShiftboxEnv:
    """The environment, made inside the event loop that will run it."""
    return _shiftbox_env(tasks, options)


class ShiftboxVectorEnv(VectorEnv[tuple[str, ...], tuple[str, ...], np.ndarray]):
    """`num_envs` shiftbox environments stepped concurrently in one process: one event loop thread runs all their
    simulations, and each `step` hands every environment its action at once (`asyncio.gather`). Each environment
    has its own episodes and server. Autoreset is Gymnasium's default (`NEXT_STEP`): the step after an episode
    ends resets that environment (its action is ignored), with the options of its last reset."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 4, tasks: Any = None, *, task_id: str | None = None, **options: Any):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, not {num_envs}")
        self.num_envs = num_envs
        self.single_observation_space = TextSpace(MAX_OBSERVATION_CHARS)
        self.single_action_space = TextSpace(MAX_ACTION_CHARS)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._stack, self._portal = _portal()
        self._episodes: list[_GymEpisodes] = []
        try:
            for _ in range(num_envs):
                self._episodes.append(_GymEpisodes(self._portal.call(_make, tasks, options), task_id))
        except BaseException:
            self.close()
            raise
        self._rngs: list[np.random.Generator] = []
        self._options: list[dict[str, Any] | None] = [None] * num_envs
        self._ended = np.zeros(num_envs, dtype=np.bool_)

    @property
    def envs(self) -> list[ShiftboxEnv]:
        """The async environments underneath, in order (they live in this vector's event loop thread)."""
        return [e.env for e in self._episodes]

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
        """Reset every environment: `seed` an int (environment i gets seed+i) or one per environment; `options` for
        all, or `options={"per_env": [options_0, ...]}` one each."""
        seeds = [None if seed is None else seed + i for i in range(self.num_envs)] if not isinstance(seed, list) \
            else seed
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} environments")
        self._rngs = [np.random.default_rng(s) for s in seeds]
        per_env = (options or {}).get("per_env")
        self._options = list(per_env) if per_env is not None else [options] * self.num_envs
        results = self._gather([functools.partial(e.reset, rng, opts)
                                for e, rng, opts in zip(self._episodes, self._rngs, self._options, strict=True)])
        self._ended[:] = False
        infos: dict[str, Any] = {}
        for i, (_, info) in enumerate(results):
            infos = self._add_info(infos, info, i)
        return tuple(obs for obs, _ in results), infos

    def step(self, actions: Sequence[str | dict[str, Any]]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray,
                                                                       np.ndarray, dict[str, Any]]:
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} environments")
        if not self._rngs:
            raise RuntimeError("step() needs a reset() first")
        calls = [functools.partial(self._restart, i) if self._ended[i] else functools.partial(e.step, actions[i])
                 for i, e in enumerate(self._episodes)]
        results = self._gather(calls)
        rewards = np.array([r[1] for r in results], dtype=np.float64)
        terminated = np.array([r[2] for r in results], dtype=np.bool_)
        truncated = np.array([r[3] for r in results], dtype=np.bool_)
        self._ended = terminated | truncated
        infos: dict[str, Any] = {}
        for i, result in enumerate(results):
            infos = self._add_info(infos, result[4], i)
        return tuple(r[0] for r in results), rewards, terminated, truncated, infos

    async def _restart(self, i: int) -> GymStep:
        observation, info = await self._episodes[i].reset(self._rngs[i], self._options[i])
        return observation, 0.0, False, False, info

    def _gather(self, calls: list[Callable[[], Any]]) -> list[Any]:
        """Run the calls concurrently in the event loop; every one finishes before the first error is raised."""
        async def all_at_once() -> list[Any]:
            return await asyncio.gather(*(call() for call in calls), return_exceptions=True)

        results = self._portal.call(all_at_once)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    def close_extras(self, **kwargs: Any) -> None:
        """End every episode, stop the servers and the event loop thread; closing again does nothing."""
        stack, self._stack = getattr(self, "_stack", None), None
        if stack is not None:
            with stack:
                self._gather([e.env.close for e in self._episodes])


def make_vector(num_envs: int = 4, tasks: Any = None, **kwargs: Any) -> ShiftboxVectorEnv:
    """Gymnasium's `vector_entry_point` for `ENV_ID` (`make_vec(..., vectorization_mode="vector_entry_point")`)."""
    kwargs.pop("render_mode", None)
    return ShiftboxVectorEnv(num_envs, tasks, **kwargs)


def register_envs() -> None:
    """Register `ENV_ID` with Gymnasium (done on import; again does nothing)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point=ShiftboxGymEnv, vector_entry_point=make_vector,
                           disable_env_checker=False, order_enforce=True)


register_envs()
