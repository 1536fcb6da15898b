"""RL environments (docs/rl.md): a gym-style async environment over shiftbox simulations, and a verifiers
environment on top of it (the optional extra `shiftbox[verifiers]`, imported only when asked for).

    env = ShiftboxEnv("snapshots/banking/v1/tasks-handwritten.json")
    observation = await env.reset("hw_banking_001")
    observation, reward, done, info = await env.step({"role": "assistant", "content": "Hello!"})

`SyncShiftboxEnv` takes the same arguments and offers the same calls, blocking (for code without an event loop).

`load_environment(...)` is the verifiers environment (verifiers' taskset id `shiftbox-verifiers`: `vf-eval shiftbox-verifiers`).

With the extra `shiftbox[gym]`: `ShiftboxGymEnv` and `ShiftboxVectorEnv` (Gymnasium, registered as `ENV_ID` by
importing `shiftbox.rl.gym_envs`), and `serve_env` (the HTTP environment server, OpenEnv's reset/step/state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._extras import extra_installed, import_extra, install_command
from ._env import AssistantMessage, EnvironmentClosed, EnvironmentInUse, Observation, ShiftboxEnv
from ._policy import EpisodeTruncated, PolicyAgent
from ._rewards import REWARDS, Reward, reward_function
from ._sync import SyncShiftboxEnv

if TYPE_CHECKING:
    from ._verifiers_env import ShiftboxHarness, ShiftboxTaskset, ShiftboxVerifiersEnv
    from .gym_envs import ENV_ID, ShiftboxGymEnv, ShiftboxVectorEnv, TextSpace, register_envs

INSTALL_VERIFIERS = install_command("verifiers", "uv sync --all-packages --extra verifiers --no-group examples")
"""The verifiers extra conflicts with the inspect extra and the examples group (openai<3 against openai 3), so it is
an environment of its own (docs/install.md)."""
INSTALL_GYM = install_command("gym")

__all__ = [
    "ENV_ID", "INSTALL_GYM", "INSTALL_VERIFIERS", "REWARDS", "AssistantMessage", "EnvironmentClosed", "EnvironmentInUse", "EpisodeTruncated", "Observation", "PolicyAgent", "Reward",
    "ShiftboxEnv", "ShiftboxGymEnv", "ShiftboxHarness", "ShiftboxTaskset", "ShiftboxVectorEnv", "ShiftboxVerifiersEnv",
    "SyncShiftboxEnv",
    "TextSpace", "load_environment", "register_envs", "reward_function", "serve_env", "verifiers_installed",
]

_VERIFIERS_NAMES = ("ShiftboxHarness", "ShiftboxTaskset", "ShiftboxVerifiersEnv")
_GYM_NAMES = ("ENV_ID", "ShiftboxGymEnv", "ShiftboxVectorEnv", "TextSpace", "register_envs")


def verifiers_installed() -> bool:
    """Whether the extra is installed (without importing verifiers, which takes seconds): verifiers 0.4's
    `verifiers.v1`, not an older verifiers."""
    return extra_installed("verifiers.v1")


def _verifiers_module() -> Any:
    if not verifiers_installed():
        raise ImportError(f"the verifiers environment needs the optional extra: {INSTALL_VERIFIERS}")
    from . import _verifiers_env

    return _verifiers_env


def load_environment(tasks: str | None = None, **options: Any) -> ShiftboxVerifiersEnv:
    """The verifiers environment (a `verifiers.v1.Env` of the taskset `shiftbox-verifiers`); see docs/rl.md for the
    options. Raises ImportError naming `INSTALL_VERIFIERS` without the extra."""
    return _verifiers_module().load_environment(tasks, **options)


def serve_env(tasks: Any, *, port: int = 8770, **options: Any) -> None:
    """Serve `ShiftboxEnv(tasks, **options)` over HTTP on 127.0.0.1:PORT, one environment per session (OpenEnv's
    `/reset`, `/step`, `/state`; docs/rl.md) until interrupted. Raises ImportError naming `INSTALL_GYM` without the
    extra."""
    import_extra("uvicorn", "gym", "the HTTP environment server")
    import_extra("starlette", "gym", "the HTTP environment server")
    from ._env_server import serve_env as serve

    serve(tasks, port=port, **options)


def __getattr__(name: str) -> Any:
    if name in _VERIFIERS_NAMES:
        return getattr(_verifiers_module(), name)
    if name in _GYM_NAMES:
        return getattr(import_extra("shiftbox.rl.gym_envs", "gym", "the Gymnasium environments"), name)
    raise AttributeError(f"module 'shiftbox.rl' has no attribute {name!r}")
