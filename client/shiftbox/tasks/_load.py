"""Load any task file the harness accepts: a native TaskFile, or a reference task list (imported)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..errors import writing_to
from ._json import describe_errors, read_json
from ._model import TaskFile
from ._reference import reference_task_file

_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def load_task_file(path: Path) -> TaskFile:
    """A native file (a JSON object with "tasks") or an AgentChangeBench/tau2 list, auto-imported."""
    path = Path(path)
    return task_file_from_json(read_json(path), path)


def task_file_from_json(raw: object, path: Path) -> TaskFile:
    """`load_task_file` for JSON already read from `path` (a caller that also looks at the raw JSON reads it once)."""
    if isinstance(raw, list):
        return reference_task_file(raw, path)
    if not isinstance(raw, dict) or "tasks" not in raw:
        shape = "an object without \"tasks\"" if isinstance(raw, dict) else f"a JSON {_JSON_TYPES[type(raw)]}"
        raise ValueError(f"{path}: expected a native task file (an object with \"tasks\") or an "
                         f"AgentChangeBench task list (an array), got {shape}")
    try:
        return TaskFile.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"{path}: not a valid native task file: {describe_errors(exc)}") from None


def task_file_json(task_file: TaskFile) -> str:
    """A task file's text as every writer writes it: indented JSON and a final newline."""
    return task_file.model_dump_json(indent=2) + "\n"


def write_task_file(task_file: TaskFile, path: Path) -> None:
    """Write a task file (`task_file_json`), creating its folder; a path that cannot be is an OutputPathError."""
    path = Path(path)
    with writing_to(path, "--out"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(task_file_json(task_file), encoding="utf-8")
