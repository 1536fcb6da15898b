"""Reading a JSON task file with errors that name the file and the place: shared by every task-file reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from shiftbox_servers.kit import load_json_file


def read_json(path: Path) -> Any:
    """The file's JSON, or ValueError naming the file and where the JSON breaks, or the bound it is over (size,
    nesting, a number that is not finite: `shiftbox_servers.kit.load_json_file`)."""
    return load_json_file(path)


def describe_errors(exc: ValidationError, limit: int = 5) -> str:
    """Pydantic errors as `location: message`, joined (the first few)."""
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        parts.append(f"{loc or '(top level)'}: {err['msg']}")
    more = exc.error_count() - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
