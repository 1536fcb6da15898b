"""Reading a JSON task file with errors that name the file and the place: shared by every task-file reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError


def read_json(path: Path) -> Any:
    """The file's JSON, or ValueError naming the file and where the JSON breaks."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def describe_errors(exc: ValidationError, limit: int = 5) -> str:
    """Pydantic errors as `location: message`, joined (the first few)."""
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        parts.append(f"{loc or '(top level)'}: {err['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
