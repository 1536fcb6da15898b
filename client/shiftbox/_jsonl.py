"""Models as lines of JSON, also when some text in them is not valid Unicode.

An LLM can emit a lone UTF-16 surrogate ("\\ud83d"). JSON can escape one but UTF-8 cannot carry it,
and pydantic refuses it both ways: serializing raises, and its JSON parser rejects the escape. Such a
model is written with JSON escapes instead (that line is then all ASCII) and read back with `json`;
every other model is written and read exactly as pydantic does.
"""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from shiftbox_servers.kit import loads_json

M = TypeVar("M", bound=BaseModel)


def dump_json(model: BaseModel) -> str:
    """`model.model_dump_json()`, or the same value with ASCII escapes when it holds a lone surrogate."""
    try:
        return model.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(model.model_dump(mode="json"), separators=(",", ":"))


def load_json(cls: type[M], line: str | bytes) -> M:
    """The inverse of `dump_json`."""
    try:
        return cls.model_validate_json(line)
    except ValidationError as exc:
        try:
            data = loads_json(line, "a line", finite=False)  # bounded: a line nested 100,000 deep is refused
        except ValueError:
            raise exc from None
        return cls.model_validate(data)
