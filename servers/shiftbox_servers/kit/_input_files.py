"""Reading a JSON or TOML input file within bounds: refused by name, never a traceback, a hang or a crash.

`json` recurses once per nesting level (100,000-deep JSON is a RecursionError) and `tomllib` builds a dotted key
in quadratic time (a key of 100,000 parts never finishes). So nesting is measured on the text before parsing: JSON
brackets outside strings; TOML brackets outside strings and comments, and the dots of a key. Numbers must be
finite (`Infinity`, `NaN`, `1e999`, TOML's `inf`/`nan` are no balance or price). Every error names the file and
the fix.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_INPUT_BYTES = 256 * 2**20
"""An input file (task file, reference database, results file): the largest reference file is under 20 MB."""
MAX_INPUT_DEPTH = 100
"""Nesting of arrays and objects (tables): the reference and shiftbox's own files nest fewer than 15 deep."""
_JSON_STRING = re.compile(r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"')  # runs of plain characters: one step each
_BRACKETS = re.compile(r"[\[\]{}]")
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_OPEN_CLOSE = str.maketrans("[{]}", "(())")
_TOML_SKIPPED = re.compile(r'"""(?:[^\\]|\\[\s\S])*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*')
_TOML_SEGMENT = re.compile(r"[^=\n,\[\]{}]+")


class InputFileError(ValueError):
    """An input file that cannot be read as asked: the message names the file, the problem and the fix."""


def json_depth(text: str) -> int:
    """The deepest nesting of JSON arrays and objects in `text` (one or more JSON lines), strings skipped."""
    return _bracket_depth(_JSON_STRING.sub('""', text))


def _bracket_depth(text: str) -> int:
    """Balanced brackets nested at most MAX_INPUT_DEPTH (all JSON shiftbox reads) are measured by removing the
    innermost pairs, one level a pass in C; others by counting bracket by bracket (the same figure, slower)."""
    brackets = _NOT_BRACKETS.sub("", text).translate(_OPEN_CLOSE)
    depth = 0
    while brackets:
        inner = brackets.replace("()", "")
        if len(inner) == len(brackets) or depth == MAX_INPUT_DEPTH:  # unbalanced, or deeper than any file we read
            return _counted_depth(text)
        brackets, depth = inner, depth + 1
    return depth


def _counted_depth(text: str) -> int:
    depth = deepest = 0
    for bracket in _BRACKETS.finditer(text):
        depth += 1 if bracket[0] in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def toml_depth(text: str) -> int:
    """An upper bound of the nesting of a TOML document: its brackets plus the most dots in one key or value,
    strings and comments skipped."""
    bare = _TOML_SKIPPED.sub("s", text)
    dots = max((segment.count(".") for segment in _TOML_SEGMENT.findall(bare)), default=0)
    return _bracket_depth(bare) + dots


def _too_deep(source: object) -> InputFileError:
    return InputFileError(f"{source}: nested deeper than {MAX_INPUT_DEPTH} levels (the limit); no file shiftbox reads "
                          "nests like this: give the original file")


def _not_finite(source: object, value: str) -> InputFileError:
    return InputFileError(f"{source}: the number {value} is not finite; write the real value (a finite number)")


def _finite(source: object) -> Callable[[str], float]:
    """A `parse_float` for `json` and `tomllib` that refuses infinities and NaN (also `1e999`, which overflows)."""

    def parse(value: str) -> float:
        number = float(value)
        if not math.isfinite(number):
            raise _not_finite(source, value)
        return number

    return parse


def read_input_text(path: Path) -> str:
    """The file's text, or InputFileError naming it: unreadable, over MAX_INPUT_BYTES, or not UTF-8. A byte order
    mark before it (which editors on Windows write) is read past."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise InputFileError(f"{path} is {size} bytes, over the limit of {MAX_INPUT_BYTES} bytes for an input "
                                 "file; give the original file")
        return path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def text_lines(text: str) -> list[str]:
    """`text` cut at each "\\n" only, as shiftbox and JSON-lines writers end a line: JSON and Markdown keep U+2028,
    U+2029 and U+0085 raw inside a line, where `str.splitlines()` would end it and tear the record."""
    return text.split("\n")


def loads_json(text: str | bytes, source: object, *, finite: bool = True) -> Any:
    """`text` as JSON, or InputFileError naming `source`: not JSON, nested too deep, or (`finite`) a number that is
    not finite. A line shiftbox wrote itself is read with `finite=False`: `json.dumps` may have written a NaN."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="surrogateescape")
    if json_depth(text) > MAX_INPUT_DEPTH:
        raise _too_deep(source)

    def constant(value: str) -> float:
        raise _not_finite(source, value)

    try:
        if not finite:
            return json.loads(text)
        return json.loads(text, parse_float=_finite(source), parse_constant=constant)
    except InputFileError:
        raise
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{source}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise InputFileError(f"{source}: not JSON shiftbox can read ({exc})") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise _too_deep(source) from None


def load_json_file(path: Path) -> Any:
    """The JSON document in the file at `path`, within the bounds (see `loads_json`)."""
    return loads_json(read_input_text(path), path)


def loads_toml(text: str, source: object) -> dict[str, Any]:
    """`text` as TOML, or InputFileError naming `source`: not TOML, nested too deep, a number that is not finite."""
    if toml_depth(text) > MAX_INPUT_DEPTH:
        raise _too_deep(source)
    try:
        return tomllib.loads(text, parse_float=_finite(source))
    except InputFileError:
        raise
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise InputFileError(f"{source}: not TOML ({exc})") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise _too_deep(source) from None


def load_toml_file(path: Path) -> dict[str, Any]:
    """The TOML document in the file at `path`, within the bounds (see `loads_toml`)."""
    return loads_toml(read_input_text(path), path)


def check_not_empty(source: object, data: Any) -> None:
    """InputFileError when a database file's collections (its top-level tables) hold no record: importing it would
    make a snapshot no task can run on."""
    if isinstance(data, dict) and not any(data.values()):
        raise InputFileError(f"{source}: an empty database (no records in {', '.join(sorted(data)) or 'any table'}); "
                             "give the reference benchmark's database file, which holds its records")
