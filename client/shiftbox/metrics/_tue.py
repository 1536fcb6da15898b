"""TUE: 0.6 x T (calls that executed without error) + 0.4 x P (calls whose arguments fit the schema)."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from ..trajectory import Trajectory
from ._model import TUEScore

T_WEIGHT, P_WEIGHT = 0.6, 0.4
"""TUE's weights of T and P: the one place they are written (compat mode and the report use them too)."""
TUE_FORMULA = f"{T_WEIGHT:g}\u00b7T + {P_WEIGHT:g}\u00b7P"
"""The formula as reports print it."""


def tue_value(t: float | None, p: float | None) -> float | None:
    """TUE from its two shares; None when either is not measured."""
    return T_WEIGHT * t + P_WEIGHT * p if t is not None and p is not None else None


def arguments_fit(model: type[BaseModel] | None, arguments: dict) -> bool:
    """Validated against the tool's published (strict, closed) schema — not guessed from error text."""
    if model is None:  # a tool the server does not have
        return False
    try:
        model.model_validate(arguments)
    except ValidationError:
        return False
    return True


def tue_score(trajectory: Trajectory, schemas: dict[str, type[BaseModel]] | None) -> TUEScore:
    """`schemas` maps tool name -> strict arguments model; None when the domain is not installed (P unmeasured)."""
    calls = trajectory.tool_calls
    n = len(calls)
    executed = sum(not c.is_error for c in calls)
    valid = None if schemas is None else sum(arguments_fit(schemas.get(c.name), c.arguments) for c in calls)
    t = executed / n if n else None
    p = valid / n if n and valid is not None else None
    return TUEScore(calls=n, executed=executed, schema_valid=valid, t=t, p=p, tue=tue_value(t, p))
