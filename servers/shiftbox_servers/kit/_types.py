"""Validated argument types shared by every domain (strictness lives in the type, not in each tool)."""

from __future__ import annotations

import re
import unicodedata
from datetime import date, datetime, timedelta
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


_DATE_TIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$"
)
DATE_TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?)?$"
"""What the published schema says: the same syntax as `_DATE_TIME` (the validator also checks the calendar)."""
_DATE_TIME_ERROR = ("expected a date (YYYY-MM-DD) or an RFC 3339 / ISO 8601 date-time such as 2025-06-15T12:00:00Z, "
                    "2025-06-15T14:00:00+02:00 or 2025-06-15 12:00:00")


def _iso_date_or_datetime(value: str) -> str:
    """A date as given, or a date-time in snapshot time: UTC, without offset, ISO 8601 (`T`, microseconds if any).

    Accepts every RFC 3339 date-time (`T`/`t`/space, `Z`/`z` or ±hh:mm, fractional seconds, a leap second
    `:60`, taken as the last microsecond of its minute) and the ISO 8601 extended forms beside it (no seconds,
    a `,` decimal sign, ±hhmm or ±hh offsets). Without an offset a time is already snapshot time.
    """
    match = _DATE_TIME.match(value)
    if match is None:
        raise ValueError(_DATE_TIME_ERROR)
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        if hour is None:
            date(int(year), int(month), int(day))
            return value
        leap = second == "60"
        parsed = datetime(int(year), int(month), int(day), int(hour), int(minute),
                          59 if leap else int(second or 0),
                          999_999 if leap else int((fraction or "0")[:6].ljust(6, "0")))
        if offset and offset not in "Zz":
            digits = offset[1:].replace(":", "")
            hours, minutes = int(digits[:2]), int(digits[2:] or 0)
            if hours > 23 or minutes > 59:
                raise ValueError
            parsed -= (1 if offset[0] == "+" else -1) * timedelta(hours=hours, minutes=minutes)
    except ValueError:
        raise ValueError(_DATE_TIME_ERROR) from None
    return parsed.isoformat()


BLANK_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})
"""Unicode categories that show nothing: spaces and separators, control and format characters (U+200B, U+FEFF,
U+180E, U+2060, bidi controls, tags)."""
BLANK_LOOKING = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10))) + "".join(map(chr, range(0xE0100, 0xE01F0))))
"""Characters of visible categories that render blank: the combining grapheme joiner, the Hangul and Khmer fillers,
Mongolian and other variation selectors (Unicode's default-ignorable characters outside Cf) and the Braille blank."""


def is_blank(value: str) -> bool:
    """True when nothing in `value` is visible: whitespace, invisible and blank-looking characters only."""
    return all(c in BLANK_LOOKING or unicodedata.category(c) in BLANK_CATEGORIES for c in value)


def _not_blank(value: str) -> str:
    if value and is_blank(value):
        raise ValueError("must not be blank (whitespace or invisible characters only)")
    return value


NOT_BLANK = AfterValidator(_not_blank)
"""Rejects a string with nothing visible in it: whitespace only, or zero-width, format and blank-looking characters
(`minLength` counts them; tools would store a value nobody can read). The empty string is left to `min_length`, so
a field where '' means "none" can take it as well."""


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
        pattern=DATE_TIME_PATTERN,
        description="date (YYYY-MM-DD) or RFC 3339 / ISO 8601 date-time, e.g. 2025-06-15T12:00:00Z or "
                    "2025-06-15T14:00:00+02:00; a time without offset is UTC",
    ),
    AfterValidator(_iso_date_or_datetime),
]
"""A date, or a date-time normalized to snapshot time (UTC, no offset): what tools compare stored times with."""


def round_money(value: float) -> float:
    """Money arithmetic result rounded to cents (floats never leak 0.30000000000000004 to agents)."""
    return round(value + 0.0, 2)
