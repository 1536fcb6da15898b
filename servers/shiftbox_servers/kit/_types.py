"""Validated argument types shared by every domain (strictness lives in the type, not in each tool)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import AfterValidator, Field


def _two_decimals(value: float) -> float:
    if abs(value * 100 - round(value * 100)) > 1e-6:
        raise ValueError("money amounts have at most 2 decimal places")
    return round(value, 2)


def _iso_date(value: str) -> str:
    try:
        date.fromisoformat(value)
    except ValueError:
        raise ValueError("expected a date as YYYY-MM-DD") from None
    return value


def _iso_date_or_datetime(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise ValueError("expected an ISO 8601 date (YYYY-MM-DD) or datetime (YYYY-MM-DDTHH:MM:SS)") from None
    return value


def _not_blank(value: str) -> str:
    if value and not value.strip():
        raise ValueError("must not be blank (whitespace only)")
    return value


NOT_BLANK = AfterValidator(_not_blank)
"""Rejects a string of whitespace only (`minLength` counts spaces; tools would store it as ''). The empty
string is left to `min_length`, so a field where '' means "none" can take it as well."""


def money(description: str, *, maximum: float = 1_000_000) -> object:
    """A positive amount of money with at most two decimals."""
    return Annotated[float, Field(gt=0, le=maximum, description=description), AfterValidator(_two_decimals)]


def identifier(description: str) -> object:
    return Annotated[str, Field(min_length=1, max_length=64, description=description), NOT_BLANK]


def text(description: str, *, max_length: int = 500, min_length: int = 1) -> object:
    """Free text that must say something: at least `min_length` characters, not whitespace only."""
    return Annotated[str, Field(min_length=min_length, max_length=max_length, description=description), NOT_BLANK]


IsoDate = Annotated[
    str,
    Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="date as YYYY-MM-DD"),
    AfterValidator(_iso_date),
]
IsoDateOrDateTime = Annotated[
    str,
    Field(
        pattern=r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$",
        description="ISO 8601 date (YYYY-MM-DD) or datetime (YYYY-MM-DDTHH:MM:SS)",
    ),
    AfterValidator(_iso_date_or_datetime),
]


def round_money(value: float) -> float:
    """Money arithmetic result rounded to cents (floats never leak 0.30000000000000004 to agents)."""
    return round(value + 0.0, 2)
