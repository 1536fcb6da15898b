"""Load any task file the harness accepts: a native TaskFile, or a reference task list (imported)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._model import TaskFile

_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


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


def load_task_file(path: Path) -> TaskFile:
    """A native file (a JSON object with "tasks") or an AgentChangeBench/tau2 list, auto-imported."""
    path = Path(path)
    raw = read_json(path)
    if isinstance(raw, list):
        # the importer builds on this package, so it is reached when a reference list is met
        from ..agentchangebench import reference_task_file

        return reference_task_file(raw, path)
    if not isinstance(raw, dict) or "tasks" not in raw:
        shape = "an object without \"tasks\"" if isinstance(raw, dict) else f"a JSON {_JSON_TYPES[type(raw)]}"
        raise ValueError(f"{path}: expected a native task file (an object with \"tasks\") or an "
                         f"AgentChangeBench task list (an array), got {shape}")
    try:
        return TaskFile.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"{path}: not a valid native task file: {describe_errors(exc)}") from None
