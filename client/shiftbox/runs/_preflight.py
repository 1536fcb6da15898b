"""The run's preflight: before a live run starts, every distinct endpoint its agent and user simulator call (a
model, an A2A agent) answers one cheap request (`shiftbox.llm.check_endpoints`), so a missing or refused key,
or nobody listening, stops the run at once instead of failing every simulation. `shiftbox run` calls it
unless `--no-preflight`; a replay never does."""

from __future__ import annotations

from ..errors import RunPlanError
from ..llm import PREFLIGHT_TIMEOUT_S, check_endpoints
from ._plan import RunPlan


def refusal(problems: list[str], before: str = "the run") -> str:
    """The preflight's problems, one a line, and how to skip it."""
    return "\n".join(problems) + f"\n(the preflight checks this before {before}; --no-preflight skips it)"


def preflight_run(plan: RunPlan, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """One cheap request per distinct endpoint of the plan's agent and user simulator; raises `RunPlanError`
    naming each one that failed (model or URL, the problem and the fix). Writes nothing, records nothing."""
    endpoints = [*plan.make_agent().endpoints(), *plan.make_user().endpoints()]
    problems = check_endpoints(endpoints, timeout_s)
    if problems:
        raise RunPlanError(refusal(problems))
