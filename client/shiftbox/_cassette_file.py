"""The limits a cassette file must keep before it is parsed: a tampered cassette is refused by name, never crashes.

YAML's C loader builds nested collections recursively (a cassette nested 50,000 deep overflowed the C stack), and
vcrpy loads with a loader that constructs Python objects from `!!python/...` tags; JSON nested 100,000 deep exceeds
Python's recursion limit. So every cassette is checked first: its size, then its nesting depth (JSON: a scan of the
brackets outside strings; YAML: libyaml's event stream, which keeps its own stack and never recurses) and its YAML
tags (only the plain data types vcrpy writes).
"""

from __future__ import annotations

from pathlib import Path

from shiftbox_servers.kit import json_depth

from .errors import CassetteFileError

MAX_CASSETTE_BYTES = 64 * 2**20
"""A recorded cassette holds one simulation's LLM exchanges: the committed ones are under 200 KB."""
MAX_CASSETTE_DEPTH = 100
"""Collections nested in a cassette: the committed ones nest fewer than 12 deep."""
YAML_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "binary", "map",
                                                         "seq", "timestamp"))
"""The YAML tags a cassette may carry: data, never `!!python/...` (which vcrpy's loader would execute)."""

def _too_deep(path: Path) -> CassetteFileError:
    return CassetteFileError(f"cassette {path}: nested deeper than {MAX_CASSETTE_DEPTH} collections (the limit); "
                             "it was not written by shiftbox: record it again")


def _check_yaml(path: Path, text: str) -> None:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in YAML_TAGS:
                raise CassetteFileError(f"cassette {path}: YAML tag {tag} refused (a cassette holds only the plain "
                                        f"data types {', '.join(sorted(t.rsplit(':', 1)[1] for t in YAML_TAGS))})")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_CASSETTE_DEPTH:
                    raise _too_deep(path)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        raise CassetteFileError(f"cassette {path}: not YAML ({' '.join(str(exc).split())})") from None


def check_cassette_file(path: Path, *, yaml: bool | None = None) -> None:
    """Raise CassetteFileError when the cassette at `path` is over a limit (size, nesting depth, YAML tags). It is
    checked as YAML when `yaml` says so (vcrpy reads YAML whatever the file is named), else by its suffix."""
    text = cassette_text(path)
    if path.suffix in (".yaml", ".yml") if yaml is None else yaml:
        _check_yaml(path, text)
    else:
        check_json_depth(path, text)


def cassette_text(path: Path) -> str:
    """The cassette's text, once its size and encoding are within the limits (CassetteFileError naming it else)."""
    size = path.stat().st_size
    if size > MAX_CASSETTE_BYTES:
        raise CassetteFileError(f"cassette {path} is {size} bytes, over the limit of {MAX_CASSETTE_BYTES} bytes; "
                                "it was not written by shiftbox: record it again")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CassetteFileError(f"cassette {path}: not UTF-8 text (byte {exc.start})") from None


def check_json_depth(path: Path, text: str) -> None:
    """Raise CassetteFileError when the JSON lines `text` (of the cassette at `path`) nest deeper than the limit."""
    if json_depth(text) > MAX_CASSETTE_DEPTH:
        raise _too_deep(path)


def check_json_lines_depth(path: Path, lines: list[str]) -> None:
    """`check_json_depth` of JSON lines each parsed alone: a line holding no more opening brackets than the limit
    cannot nest deeper than it, so only the others are scanned (counting brackets is a pass in C; the scan skips
    strings, and most of a cassette is the text of its messages)."""
    deep = [line for line in lines if line.count("[") + line.count("{") > MAX_CASSETTE_DEPTH]
    if deep:
        check_json_depth(path, "\n".join(deep))
