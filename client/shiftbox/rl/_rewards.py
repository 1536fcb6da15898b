"""Which of shiftbox's per-simulation scores is an episode's reward."""

from __future__ import annotations

from collections.abc import Callable

from ..metrics import SimulationMetrics

Reward = Callable[[SimulationMetrics], float]
"""A reward from one finished simulation's metrics (`shiftbox.SimulationMetrics`)."""


def tsr_reward(metrics: SimulationMetrics) -> float:
    """Task success rate with partial credit (0 when nothing could be measured)."""
    return metrics.tsr.score or 0.0


def success_reward(metrics: SimulationMetrics) -> float:
    """1 when TSR reaches the success threshold, else 0."""
    return 1.0 if metrics.success else 0.0


def tue_reward(metrics: SimulationMetrics) -> float:
    """Tool-use efficiency (0 without tool calls)."""
    return metrics.tue.tue or 0.0


def action_reward(metrics: SimulationMetrics) -> float:
    """TSR's action channel: the share of gold action sets performed (0 when the task has none)."""
    return metrics.tsr.action or 0.0


def communicate_info_reward(metrics: SimulationMetrics) -> float:
    """TSR's communicate-info channel: the share of facts told to the user (0 when the task has none)."""
    return metrics.tsr.communicate_info or 0.0


REWARDS: dict[str, Reward] = {
    "tsr": tsr_reward, "success": success_reward, "tue": tue_reward, "action": action_reward,
    "communicate_info": communicate_info_reward,
}
"""The rewards by name (`ShiftboxEnv(reward=...)`); a callable `Reward` is accepted too."""


def reward_function(reward: str | Reward) -> Reward:
    """The reward a name stands for (ValueError naming the choices), or the callable itself."""
    if callable(reward):
        return reward
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)} or pass a callable")
    return REWARDS[reward]
