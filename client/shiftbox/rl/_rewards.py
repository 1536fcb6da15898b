"""Which of shiftbox's per-simulation scores is an episode's reward."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..metrics import CatalogView, HeadlineMetric, SimulationMetrics, headline_metrics

Reward = Callable[[SimulationMetrics], float]
"""A reward from one finished simulation's metrics (`shiftbox.SimulationMetrics`)."""


def success_reward(metrics: SimulationMetrics) -> float:
    """1 when TSR reaches the success threshold, else 0."""
    return 1.0 if metrics.success else 0.0


def action_reward(metrics: SimulationMetrics) -> float:
    """TSR's action channel: the share of gold action sets performed (0 when the task has none)."""
    return metrics.tsr.action or 0.0


def communicate_info_reward(metrics: SimulationMetrics) -> float:
    """TSR's communicate-info channel: the share of facts told to the user (0 when the task has none)."""
    return metrics.tsr.communicate_info or 0.0


def metric_reward(metric: HeadlineMetric) -> Reward:
    """A headline metric's per-simulation value as a reward (0 when it has none)."""
    def reward(metrics: SimulationMetrics) -> float:
        return metric.simulation_value(metrics) or 0.0

    reward.__name__ = f"{metric.key}_reward"
    reward.__doc__ = f"{metric.label}: {metric.description} (0 when it has none)."
    return reward


def _rewards() -> dict[str, Reward]:
    metrics = {m.key: metric_reward(m) for m in headline_metrics() if m.reward}
    return {"tsr": metrics.pop("tsr"), "success": success_reward, **metrics, "action": action_reward,
            "communicate_info": communicate_info_reward}


REWARDS: Mapping[str, Reward] = CatalogView(_rewards)
"""The rewards by name (`ShiftboxEnv(reward=...)`): TSR and success first, every other headline metric that is a
reward (`HeadlineMetric.reward`: tue, then any registered one), then TSR's action and communicate-info channels;
a callable `Reward` is accepted too."""


def reward_function(reward: str | Reward) -> Reward:
    """The reward a name stands for (ValueError naming the choices), or the callable itself."""
    if callable(reward):
        return reward
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}; choose one of {', '.join(REWARDS)} or pass a callable")
    return REWARDS[reward]
