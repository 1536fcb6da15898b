"""Comparing one tool outcome of shiftbox with the tool message the reference returned.

Equal means "the same outcome, perhaps written differently" (a representation-only difference):

- both calls failed (error wording differs between implementations);
- key order; fields shiftbox returns beyond the reference's (a superset: every reference field is there);
- wrappers: a reference list against shiftbox's object holding one list (`{"transactions": [...],
  "account_id": ..., "truncated": false}`), a one-element list against its element, a bare value against
  an object of one field (`"sara_doe_496"` / `{"user_id": "sara_doe_496"}`);
- number formatting (`100` / `100.0`), scalars the reference stringified (`"1"` / `1`, `"True"` / `true`);
- date-time formatting (`2025-01-01 00:00:00` / `2025-01-01T00:00:00`); phone formats (`555-123-7890` /
  `+15551237890`, compared in E.164);
- generated ids: a write that creates something returns the reference's id (`PR_00000001`) where shiftbox
  returns its own (`req_000002`); the pair is remembered, and later values are compared through it.

Anything else is a difference, named by its path (`transactions[0].timestamp: '…' != '…'`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shiftbox_servers.kit import loads_json

_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_MISSING = object()


def _phone(value: str) -> str:
    """A US phone number in E.164 (+1XXXXXXXXXX) when it is one, else as given."""
    digits = re.sub(r"\D", "", value)
    if re.fullmatch(r"\+?[\d\s().-]+", value.strip()) and len(digits) in (10, 11):
        if len(digits) == 10:
            digits = "1" + digits
        if digits.startswith("1"):
            return "+" + digits
    return value


@dataclass
class Comparison:
    """One reference outcome against one shiftbox outcome."""

    equal: bool
    identical: bool
    differences: list[str] = field(default_factory=list)


def parse_reference(text: str | None) -> Any:
    """The reference's tool message as data: JSON when it is JSON, else the text itself."""
    if text is None:
        return None
    try:
        return loads_json(text, "a reference tool message", finite=False)
    except (ValueError, TypeError):
        return text


def strings_in(value: Any) -> set[str]:
    """Every string inside a JSON value (keys excluded)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(strings_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(strings_in(v) for v in value)) if value else set()
    return set()


def _canonical(key: str, value: Any) -> Any:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("num", float(value))
    if value is None:
        return ("null",)
    if isinstance(value, str):
        if _DATETIME.match(value):
            try:
                return ("dt", datetime.fromisoformat(value.replace(" ", "T")).isoformat())
            except ValueError:
                pass
        if "phone" in key:
            return ("str", _phone(value))
        return ("str", value)
    return ("other", json.dumps(value, sort_keys=True))


def _coerce(text: str, other: tuple) -> tuple | None:
    """A stringified scalar (`"1"`, `"True"`) as the other side's kind, when it is one."""
    if other[0] == "bool" and text in ("True", "False", "true", "false"):
        return ("bool", text in ("True", "true"))
    if other[0] == "num" and _NUMBER.match(text):
        return ("num", float(text))
    return None


def _is_id_key(key: str) -> bool:
    return key.endswith("_id") or key in ("id", "reference")


class _Walker:
    def __init__(self, ids: dict[str, str], learn: bool, known: set[str]):
        self.ids, self.learn, self.known = ids, learn, known
        self.differences: list[str] = []

    def diff(self, path: str, message: str) -> None:
        self.differences.append(f"{path or 'result'}: {message}")

    def scalar(self, path: str, key: str, ref: Any, sb: Any) -> None:
        if isinstance(ref, str) and ref in self.ids:
            if sb != self.ids[ref]:
                self.diff(path, f"{ref!r} (shiftbox's {self.ids[ref]!r}) != {sb!r}")
            return
        r, s = _canonical(key, ref), _canonical(key, sb)
        if r == s:
            return
        if r[0] == "str" and s[0] != "str":
            r = _coerce(ref, s) or r
        elif s[0] == "str" and r[0] != "str":
            s = _coerce(sb, r) or s
        if r == s:
            return
        if (self.learn and _is_id_key(key) and isinstance(ref, str) and isinstance(sb, str)
                and ref not in self.known and sb not in self.ids.values()):
            self.ids[ref] = sb  # a generated id: the reference's and shiftbox's name for the same new thing
            return
        self.diff(path, f"{_short(ref)} != {_short(sb)}")

    def walk(self, path: str, key: str, ref: Any, sb: Any) -> None:
        if isinstance(ref, list) and isinstance(sb, dict):
            lists = [k for k, v in sb.items() if isinstance(v, list)]
            if len(lists) == 1:  # shiftbox wraps lists in an object (MCP structured content is an object)
                return self.walk(_join(path, lists[0]), lists[0], ref, sb[lists[0]])
            if len(ref) == 1:
                return self.walk(path, key, ref[0], sb)
        if isinstance(sb, list) and not isinstance(ref, list) and len(sb) == 1:
            return self.walk(path, key, ref, sb[0])
        if isinstance(sb, dict) and len(sb) == 1 and not isinstance(ref, dict | list):
            (only,) = sb  # a bare value against shiftbox's object holding it: {"user_id": "…"}
            return self.walk(_join(path, only), only, ref, sb[only])
        if isinstance(ref, dict) and isinstance(sb, dict):
            for k, r in ref.items():
                s = sb.get(k, _MISSING)
                if s is _MISSING:
                    renamed = [n for n in sb if n.endswith("_" + k)]
                    if len(renamed) == 1 and not isinstance(r, dict | list):
                        before = len(self.differences)
                        self.scalar(_join(path, k), k, r, sb[renamed[0]])
                        if len(self.differences) == before:
                            self.diff(_join(path, k), f"missing in shiftbox (it has {renamed[0]}, equal)")
                        continue
                    self.diff(_join(path, k), "missing in shiftbox")
                    continue
                self.walk(_join(path, k), k, r, s)
            return None
        if isinstance(ref, list) and isinstance(sb, list):
            if len(ref) != len(sb):
                self.diff(path, f"length {len(ref)} != {len(sb)}")
                return None
            for i, (r, s) in enumerate(zip(ref, sb, strict=True)):
                self.walk(f"{path}[{i}]", key, r, s)
            return None
        if isinstance(ref, dict | list) or isinstance(sb, dict | list):
            self.diff(path, f"{_short(ref)} != {_short(sb)}")
            return None
        self.scalar(path, key, ref, sb)
        return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if not isinstance(value, dict | list) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compare_outcomes(reference: str | None, reference_error: bool, shiftbox: Any, shiftbox_error: bool, *,
                     ids: dict[str, str], learn: bool = False, known: set[str] | None = None) -> Comparison:
    """Compare the reference's tool message (text) with shiftbox's result (structured content or text).

    `ids` maps reference ids to shiftbox ids; with `learn` (a write both sides accepted), an id the
    reference generated (not in `known`, the strings the simulation had seen before) is added to it.
    """
    if reference_error or shiftbox_error:
        if reference_error and shiftbox_error:
            same = isinstance(shiftbox, str) and shiftbox == reference
            return Comparison(True, same)
        if reference_error:
            return Comparison(False, False, [f"result: the reference failed ({_short(reference)}), shiftbox "
                                             "succeeded"])
        return Comparison(False, False, [f"result: shiftbox failed ({_short(shiftbox, 160)}), the reference "
                                         "succeeded"])
    ref = parse_reference(reference)
    identical = json.dumps(ref, ensure_ascii=False) == json.dumps(shiftbox, ensure_ascii=False)
    if identical:
        return Comparison(True, True)
    walker = _Walker(ids, learn, known or set())
    walker.walk("", "", ref, shiftbox)
    return Comparison(not walker.differences, False, walker.differences)
