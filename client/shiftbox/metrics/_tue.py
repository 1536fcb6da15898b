"""TUE: 0.6 x T (calls that executed without error) + 0.4 x P (calls whose arguments fit the schema)."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from ..trajectory import Trajectory
from ._model import TUEScore

T_WEIGHT, P_WEIGHT = 0.6, 0.4


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
    tue = T_WEIGHT * t + P_WEIGHT * p if t is not None and p is not None else None
    return TUEScore(calls=n, executed=executed, schema_valid=valid, t=t, p=p, tue=tue)
