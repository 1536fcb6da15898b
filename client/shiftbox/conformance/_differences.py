"""The deliberate differences from the reference tools: one markdown table in docs/servers.md, read as is.

Section "Deliberate differences from the reference tools", columns `domain | tool | class | when | reason`:

- tool: a tool name (backticks allowed) or `*` for any tool of the domain;
- class: shiftbox stricter | shiftbox succeeds | content differs | tool missing;
- when: backticked terms, all of which must hold (none: the row covers every such call of the tool):
  `fields: a, b` — every differing field is named a or b (the last key of its path);
  `toolsets: a, b` — the call was replayed on tool set a or b (without it: on any tool set);
  any other term — text that occurs in the call's arguments, the reference's tool message or shiftbox's result;
- reason: why shiftbox differs on purpose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import text_lines

SECTION = "Deliberate differences from the reference tools"
CLASS_LABELS = {
    "identical": "identical",
    "representation": "representation only",
    "stricter": "shiftbox stricter",
    "shiftbox_succeeds": "shiftbox succeeds",
    "content_differs": "content differs",
    "tool_missing": "tool missing",
    "cascade": "cascade",
}
CLASSES = tuple(CLASS_LABELS)
UNEXPLAINED_CLASSES = ("stricter", "shiftbox_succeeds", "content_differs", "tool_missing")
"""Classes a call may only be in when a row of the table explains it (else the command exits 1)."""
_BY_LABEL = {label: name for name, label in CLASS_LABELS.items()} | {n.replace("_", " "): n for n in CLASSES}
_PATH_KEY = re.compile(r"([A-Za-z_]\w*)(\[\d+\])*$")


@dataclass(frozen=True)
class DeliberateDifference:
    domain: str
    tool: str
    klass: str
    terms: tuple[str, ...] = ()
    fields: frozenset[str] | None = None
    reason: str = ""
    line: int = 0
    toolsets: frozenset[str] | None = None

    def matches(self, domain: str, tool: str, klass: str, haystack: str, differences: list[str], *,
                toolset: str = "default") -> bool:
        if (self.domain, self.klass) != (domain, klass) or self.tool not in ("*", tool):
            return False
        if self.toolsets is not None and toolset not in self.toolsets:
            return False
        if self.fields is not None:
            keys = [difference_key(d) for d in differences]
            if not keys or any(k not in self.fields for k in keys):
                return False
        return all(term in haystack for term in self.terms)


def difference_key(difference: str) -> str:
    """The field a difference is about: the last key of its path (`transactions[0].timestamp` -> timestamp)."""
    path = difference.split(": ", 1)[0]
    match = _PATH_KEY.search(path)
    return match.group(1) if match else path


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def load_deliberate_differences(path: Path) -> list[DeliberateDifference]:
    """Every row of the table (ValueError naming the line for a row that does not parse)."""
    lines = text_lines(Path(path).read_text(encoding="utf-8"))
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("#") and SECTION in line), None)
    if start is None:
        raise ValueError(f"{path}: no section '{SECTION}'")
    rows: list[DeliberateDifference] = []
    header: list[str] | None = None
    for number, line in enumerate(lines[start + 1:], start=start + 2):
        if line.lstrip().startswith("#"):
            break
        if not line.strip().startswith("|"):
            if header is not None and rows:
                break
            continue
        cells = _cells(line)
        if header is None:
            header = [c.lower() for c in cells]
            if header[:5] != ["domain", "tool", "class", "when", "reason"]:
                raise ValueError(f"{path}:{number}: the table's columns must be domain | tool | class | when | "
                                 f"reason, not {' | '.join(cells)}")
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        rows.append(_row(path, number, cells))
    return rows


def _row(path: Path, number: int, cells: list[str]) -> DeliberateDifference:
    if len(cells) < 5:
        raise ValueError(f"{path}:{number}: a row needs 5 cells (domain | tool | class | when | reason)")
    domain, tool, klass, when, reason = cells[0], cells[1].strip("`"), cells[2].lower(), cells[3], \
        " | ".join(cells[4:])
    if klass not in _BY_LABEL:
        raise ValueError(f"{path}:{number}: class {cells[2]!r} is not one of "
                         f"{', '.join(CLASS_LABELS[c] for c in UNEXPLAINED_CLASSES)}")
    terms, fields, toolsets = [], None, None
    for term in re.findall(r"`([^`]+)`", when):
        if term.startswith("fields:"):
            fields = _names(term[len("fields:"):])
        elif term.startswith("toolsets:"):
            toolsets = _names(term[len("toolsets:"):])
        else:
            terms.append(term)
    if not reason.strip():
        raise ValueError(f"{path}:{number}: the row for {tool} gives no reason")
    return DeliberateDifference(domain=domain, tool=tool, klass=_BY_LABEL[klass], terms=tuple(terms),
                                fields=fields, reason=reason.strip(), line=number, toolsets=toolsets)


def _names(listed: str) -> frozenset[str]:
    return frozenset(n.strip() for n in listed.split(",") if n.strip())


def difference_class(reference_error: bool, shiftbox_error: bool, shiftbox_kind: str | None) -> str:
    """The class of an outcome that differs from the reference's (one of `UNEXPLAINED_CLASSES`)."""
    if shiftbox_kind == "unknown_tool":
        return "tool_missing"
    if reference_error and not shiftbox_error:
        return "shiftbox_succeeds"
    if shiftbox_error and not reference_error:
        return "stricter"
    return "content_differs"


def haystack(arguments: Any, reference: str, shiftbox: str) -> str:
    """The text a row's terms are looked for in: the call's arguments, the reference's and shiftbox's answers."""
    return "\n".join((json.dumps(arguments, ensure_ascii=False), reference, shiftbox))


def find_reason(rows: list[DeliberateDifference], domain: str, tool: str, klass: str, haystack: str,
                differences: list[str], *, toolset: str = "default") -> str | None:
    """The reason of the first row that explains this call (replayed on `toolset`), or None."""
    for row in rows:
        if row.matches(domain, tool, klass, haystack, differences, toolset=toolset):
            return row.reason
    return None


def default_table() -> Path | None:
    """docs/servers.md of the checkout shiftbox runs from (None when installed without one)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "docs" / "servers.md"
        if candidate.is_file() and (parent / "servers" / "shiftbox_servers").is_dir():
            return candidate
    return None


__all__ = ["CLASSES", "CLASS_LABELS", "DeliberateDifference", "SECTION", "UNEXPLAINED_CLASSES", "default_table",
           "difference_class", "difference_key", "find_reason", "haystack", "load_deliberate_differences"]
