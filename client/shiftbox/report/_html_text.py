"""Text pieces every part of the HTML report uses: escaping, number formats, GSRT stage names."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from ..metrics import Interval, SimulationMetrics, Turns
from ._terminal import with_interval

STAGES = ("ack", "tool", "outcome")
STAGE_NAMES = {"ack": "acknowledgment", "tool": "first relevant tool", "outcome": "outcome"}


def e(text: object) -> str:
    return escape("" if text is None else str(text), quote=True)


def f3(value: float | None) -> str:
    return "\u2013" if value is None else f"{value:.3f}"


def f2(value: float | None) -> str:
    return "\u2013" if value is None else f"{value:.2f}"


def pct(value: float | None) -> str:
    return "\u2013" if value is None else f"{100 * value:.0f}%"


def turns(value: Turns) -> str:
    return "\u2013" if value is None else value if isinstance(value, str) else f"{value:g}"


def with_ci(value: float | None, interval: Interval | None) -> str:
    """A figure with its 95% bootstrap interval over tasks; a narrow cell breaks between the two, never inside the
    interval."""
    text = with_interval(value, interval, f3)
    figure, sep, ci = text.partition(" ")
    return f'{figure} <span class="ci">{ci}</span>' if sep else text


def scored_simulations(sims: Sequence[SimulationMetrics]) -> list[SimulationMetrics]:
    """The simulations the metrics score (the others ended for a reason not the agent's)."""
    return [s for s in sims if s.scored]
