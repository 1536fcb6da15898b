"""RL environments (docs/rl.md): a gym-style async environment over shiftbox simulations, and a verifiers
environment on top of it (the optional extra `shiftbox[verifiers]`, imported only when asked for).

    env = ShiftboxEnv("snapshots/banking/v1/tasks-handwritten.json")
    observation = await env.reset("hw_banking_001")
    observation, reward, done, info = await env.step({"role": "assistant", "content": "Hello!"})

`SyncShiftboxEnv` takes the same arguments and offers the same calls, blocking (for code without an event loop).

`load_environment(...)` is the verifiers entry (`verifiers.load_environment("shiftbox.rl", ...)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._extras import extra_installed, install_command
from ._env import AssistantMessage, EnvironmentClosed, EnvironmentInUse, Observation, ShiftboxEnv
from ._policy import EpisodeTruncated, PolicyAgent
from ._rewards import REWARDS, Reward, reward_function
from ._sync import SyncShiftboxEnv

if TYPE_CHECKING:
    from ._verifiers_env import ShiftboxRubric, ShiftboxVerifiersEnv

INSTALL_VERIFIERS = install_command("verifiers")

__all__ = [
    "INSTALL_VERIFIERS", "REWARDS", "AssistantMessage", "EnvironmentClosed", "EnvironmentInUse", "EpisodeTruncated", "Observation", "PolicyAgent", "Reward",
    "ShiftboxEnv", "ShiftboxRubric", "ShiftboxVerifiersEnv", "SyncShiftboxEnv", "load_environment", "reward_function",
    "verifiers_installed",
]

_VERIFIERS_NAMES = ("ShiftboxRubric", "ShiftboxVerifiersEnv")


def verifiers_installed() -> bool:
    """Whether the extra is installed (without importing verifiers, which takes seconds)."""
    return extra_installed("verifiers")


def _verifiers_module() -> Any:
    if not verifiers_installed():
        raise ImportError(f"the verifiers environment needs the optional extra: {INSTALL_VERIFIERS}")
    from . import _verifiers_env

    return _verifiers_env


def load_environment(tasks: str | None = None, **options: Any) -> ShiftboxVerifiersEnv:
    """The verifiers environment (`verifiers.load_environment("shiftbox.rl", tasks=..., ...)`); see
    `ShiftboxVerifiersEnv` for the options. Raises ImportError naming `INSTALL_VERIFIERS` without the extra."""
    return _verifiers_module().load_environment(tasks, **options)


def __getattr__(name: str) -> Any:
    if name in _VERIFIERS_NAMES:
        return getattr(_verifiers_module(), name)
    raise AttributeError(f"module 'shiftbox.rl' has no attribute {name!r}")
