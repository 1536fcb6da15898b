"""Importing an MMTB JSONL file: the snapshot that serves its tools and annotated observations, and its records as
tasks (one goal per mission, MMTB's mission type and gold calls on each)."""

from __future__ import annotations

import json
from pathlib import Path

from shiftbox_servers.kit import (
    ImportedTask,
    Mission,
    SnapshotManifest,
    mission,
    mission_call,
    stamp_tool_contracts,
)

from ._records import (
    ANSWER_STEP,
    ASK_STEP,
    MissionRecord,
    Record,
    RecordFormatError,
    read_mmtb_file,
)
from ._schema import SCHEMA, SNAPSHOT_VERSION
from ._tools import match_key


def import_mmtb(source: Path, out: Path, language: str = "en") -> tuple[SnapshotManifest, list[ImportedTask]]:
    """Write the snapshot of MMTB file `source` into `out` and return its records as tasks. RecordFormatError
    naming line, record and field for input that does not fit (also: a tool two records define differently)."""
    source = Path(source)
    records = read_mmtb_file(source, language)
    db = SCHEMA.new_database()
    db["tools"].insert_all(_tool_rows(records, source))
    db["observations"].insert_all(_observation_rows(records))
    manifest = SCHEMA.write_snapshot(db, Path(out), snapshot_version=SNAPSHOT_VERSION,
                                     source=f"mmtb {source.name} language={language}")
    from . import DOMAIN

    manifest = stamp_tool_contracts(DOMAIN, Path(out))
    return manifest, [_task(record) for record in records]


def import_mmtb_snapshot(source: Path, out: Path) -> SnapshotManifest:
    """The snapshot alone (`Domain.importers`): `shiftbox snapshots`-style importers return only the manifest."""
    return import_mmtb(source, out)[0]


def _tool_rows(records: list[Record], source: Path) -> list[dict[str, str]]:
    """Each tool once; a tool two records define differently cannot be served to both (one server, one tool list)."""
    rows: dict[str, tuple[dict[str, str], Record]] = {}
    for record in records:
        for tool in record.tools:
            function = tool["function"]
            row = {"name": function["name"], "description": str(function.get("description") or ""),
                   "parameters": json.dumps(function.get("parameters") or {"type": "object", "properties": {}},
                                            sort_keys=True, ensure_ascii=False)}
            first = rows.setdefault(row["name"], (row, record))
            if first[0] != row:
                raise RecordFormatError(
                    f"{source} line {record.line} (record {record.id}): tool {row['name']!r} differs from its "
                    f"definition in record {first[1].id} (line {first[1].line}); one server serves one definition "
                    "of a tool: import the two records from separate files")
    return [row for row, _ in sorted(rows.values(), key=lambda item: item[0]["name"])]


def _observation_rows(records: list[Record]) -> list[dict[str, object]]:
    rows = []
    for record in records:
        for m in record.missions:
            for step in m.calls:
                rows.append({"observation_id": f"{record.id}/{m.index}/{step.idx}", "position": len(rows),
                             "task_id": record.id, "mission": m.index, "tool": step.name,
                             "match_key": match_key(step.arguments),
                             "observation": json.dumps(step.observation, ensure_ascii=False)})
    return rows


def goal_label(index: int) -> str:
    """The goal of mission `index` (0-based): mission_1, mission_2, ..."""
    return f"mission_{index + 1}"


def _mission(m: MissionRecord) -> Mission:
    goal = goal_label(m.index)
    keys = {s.idx: f"m{m.index + 1}.{s.idx}" for s in m.calls}
    calls = [mission_call(keys[s.idx], s.name, s.arguments, after=tuple(keys[d] for d in s.dependencies if d in keys))
             for s in m.calls]
    known = [f"Mission {m.index + 1}: when the assistant asks, you answer: {s.user_input}"
             for s in m.steps if s.name == ASK_STEP]
    final = [str(s.observation) for s in m.steps if s.name == ANSWER_STEP and s.observation not in (None, "")]
    nl = tuple(f"The assistant's answer to mission {m.index + 1} agrees with MMTB's reference answer: {text}"
               for text in final[-1:])
    return mission(goal, m.action_type, m.text, calls, known=tuple(known), nl=nl)


def _task(record: Record) -> ImportedTask:
    types = ", ".join(f"{goal_label(m.index)}={m.code} {m.subtype}" for m in record.missions)
    dates = [f"Mission {m.index + 1} takes place at {m.env_info}." for m in record.missions if m.env_info]
    return ImportedTask(record.id, tuple(_mission(m) for m in record.missions), known=tuple(dates),
                        mission_types={goal_label(m.index): m.subtype for m in record.missions},
                        notes=f"MMTB record {record.id} (line {record.line}); MMTB mission types: {types}")
