"""Reading Multi-Mission Tool Bench's JSONL data format: one record a line, each record a dialogue of missions.

A record (as MMTB's `bench_test/request_pipeline.py` reads it) holds, per language (`english_*` keys for English,
the plain keys for Chinese): `task` (the missions' user texts), `answer_list` (per mission, its gold steps) and
`tools` (OpenAI function tools); and `id`, `type` (per mission a type code: 单 single tool, 多 several tools,
反 clarify, 拒 chat) and `env_info` (the mission's date). A gold step is `{idx, action: {name, arguments},
observation, dependency_list}`; `ask_user_for_required_parameters` (with the user's answer in `user_input`) and
`prepare_to_answer` (the final answer in `observation`) are the steps that are no tool call.

Every error names the file, line, record and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shiftbox_servers.kit import InputFileError, loads_json, read_input_text, text_lines

ASK_STEP = "ask_user_for_required_parameters"
ANSWER_STEP = "prepare_to_answer"
TYPE_CODES = {"单": "single", "多": "multiple", "反": "clarify", "拒": "chat"}
"""MMTB's mission type codes: one tool call, several (serial, parallel or both, as the dependencies say), a
clarification before the call, no tool (chat)."""
LANGUAGES = ("en", "zh")


class RecordFormatError(InputFileError):
    """An MMTB record that does not fit the format: the message names file, line, record, field and the fix."""


@dataclass(frozen=True)
class Step:
    """One gold step of a mission: a tool call, the clarifying question (`ASK_STEP`) or the answer (`ANSWER_STEP`)."""

    idx: int
    name: str
    arguments: dict[str, Any]
    observation: Any
    dependencies: tuple[int, ...]
    user_input: str | None = None

    @property
    def is_call(self) -> bool:
        return self.name not in (ASK_STEP, ANSWER_STEP)


@dataclass(frozen=True)
class MissionRecord:
    """One mission of a record: its user text, MMTB type code, gold steps and date."""

    index: int
    code: str
    text: str
    steps: tuple[Step, ...]
    env_info: str | None

    @property
    def calls(self) -> list[Step]:
        return [s for s in self.steps if s.is_call]

    @property
    def layers(self) -> list[list[int]]:
        """The tool calls as MMTB layers them: in answer order, a call depending on one of the current layer starts
        the next layer (several calls in a layer: parallel; several layers: serial)."""
        layers: list[list[int]] = []
        for step in self.calls:
            if not layers or set(step.dependencies) & set(layers[-1]):
                layers.append([step.idx])
            else:
                layers[-1].append(step.idx)
        return layers

    @property
    def subtype(self) -> str:
        """MMTB's type in words: single, serial, parallel, serial+parallel, clarify or chat."""
        kind = TYPE_CODES[self.code]
        if kind != "multiple":
            return kind
        layers = self.layers
        serial, parallel = len(layers) > 1, any(len(layer) > 1 for layer in layers)
        return "serial+parallel" if serial and parallel else "serial" if serial else "parallel"

    @property
    def action_type(self) -> str:
        """The shiftbox action type (the kit's `ACTION_TYPES`): serial+parallel, which it lacks, is serial."""
        return "serial" if self.subtype == "serial+parallel" else self.subtype


@dataclass(frozen=True)
class Record:
    """One MMTB record: its id, tools (OpenAI function tools) and missions, and the line it was read from."""

    id: str
    line: int
    tools: tuple[dict[str, Any], ...]
    missions: tuple[MissionRecord, ...]

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((t["function"] for t in self.tools if t["function"]["name"] == name), None)


class _Where:
    """Names the place of a problem: file, line, record, field."""

    def __init__(self, path: Path, line: int, record: str | None = None):
        self.path, self.line, self.record = path, line, record

    def error(self, field: str, problem: str) -> RecordFormatError:
        record = f" (record {self.record})" if self.record else ""
        return RecordFormatError(f"{self.path} line {self.line}{record}: field {field!r} {problem}; fix the record, "
                                 "or give MMTB's own file (Multi-Mission-Tool-Bench.jsonl)")

    def get(self, data: dict[str, Any], key: str, kind: type | tuple[type, ...], field: str | None = None) -> Any:
        field = field or key
        if key not in data:
            raise self.error(field, "is missing")
        value = data[key]
        if not isinstance(value, kind) or isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple)
                                                                                   else (kind,)):
            names = "/".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            raise self.error(field, f"must be {names}, not {type(value).__name__}")
        return value


def read_mmtb_file(path: Path, language: str = "en") -> list[Record]:
    """Every record of an MMTB JSONL file in `language` (en: the `english_*` keys; zh: the plain ones); blank lines
    are skipped. RecordFormatError (naming line, record and field) for a record that does not fit the format."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown MMTB language {language!r}; choose one of {', '.join(LANGUAGES)}")
    path = Path(path)
    records: list[Record] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text_lines(read_input_text(path)), 1):
        if not line.strip():
            continue
        record = _record(loads_json(line, f"{path} line {number}"), _Where(path, number), language)
        if record.id in seen:
            raise _Where(path, number, record.id).error("id", f"repeats the id of line {seen[record.id]}")
        seen[record.id] = number
        records.append(record)
    if not records:
        raise RecordFormatError(f"{path}: no records; give an MMTB JSONL file (one record a line)")
    return records


def _record(data: Any, where: _Where, language: str) -> Record:
    if not isinstance(data, dict):
        raise where.error("(record)", f"must be a JSON object, not {type(data).__name__}")
    raw_id = where.get(data, "id", (str, list))
    record_id = raw_id if isinstance(raw_id, str) else "".join(str(part) for part in raw_id)
    if not record_id:
        raise where.error("id", "is empty")
    where.record = record_id
    prefix = "english_" if language == "en" else ""
    texts = where.get(data, prefix + "task", list)
    answers = where.get(data, prefix + "answer_list", list)
    codes = where.get(data, "type", list)
    tools = _tools(where.get(data, prefix + "tools", list), where, prefix + "tools")
    for key, values in ((prefix + "answer_list", answers), ("type", codes)):
        if len(values) != len(texts):
            raise where.error(key, f"has {len(values)} items for {len(texts)} missions ({prefix}task)")
    if not texts:
        raise where.error(prefix + "task", "has no mission")
    env = data.get("env_info")
    env_infos = [env] * len(texts) if env is None or isinstance(env, str) else env
    if not isinstance(env_infos, list) or len(env_infos) != len(texts):
        raise where.error("env_info", f"must be a string or one per mission ({len(texts)})")
    names = {t["function"]["name"] for t in tools}
    missions = []
    for i, (text, steps, code, env_info) in enumerate(zip(texts, answers, codes, env_infos, strict=True)):
        if not isinstance(text, str) or not text.strip():
            raise where.error(f"{prefix}task[{i}]", "must be the mission's non-empty text")
        if code not in TYPE_CODES:
            raise where.error(f"type[{i}]", f"is {code!r}, not one of MMTB's mission type codes "
                                            f"{', '.join(f'{c} ({k})' for c, k in TYPE_CODES.items())}")
        field = f"{prefix}answer_list[{i}]"
        if not isinstance(steps, list) or not steps:
            raise where.error(field, "must be a non-empty list of gold steps")
        parsed = tuple(_step(s, where, f"{field}[{j}]", names) for j, s in enumerate(steps))
        _check_dependencies(parsed, where, field)
        mission = MissionRecord(i, code, text.strip(), parsed, env_info if isinstance(env_info, str) else None)
        _check_type(mission, where, field)
        missions.append(mission)
    return Record(record_id, where.line, tuple(tools), tuple(missions))


def _tools(tools: list[Any], where: _Where, field: str) -> list[dict[str, Any]]:
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        at = f"{field}[{i}]"
        if not isinstance(tool, dict):
            raise where.error(at, "must be an OpenAI function tool object")
        function = where.get(tool, "function", dict, f"{at}.function")
        name = where.get(function, "name", str, f"{at}.function.name")
        if not name or name in seen:
            raise where.error(f"{at}.function.name", f"{'repeats' if name else 'is empty'}: {name!r}")
        seen.add(name)
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, dict) or not isinstance(parameters.get("properties", {}), dict):
            raise where.error(f"{at}.function.parameters", "must be a JSON schema object with `properties`")
        for parameter in parameters.get("properties", {}):
            if parameter and not parameter.isidentifier():
                raise where.error(f"{at}.function.parameters.properties.{parameter}",
                                  "is no parameter name shiftbox can serve (letters, digits and _)")
    return tools


def _step(data: Any, where: _Where, field: str, tools: set[str]) -> Step:
    if not isinstance(data, dict):
        raise where.error(field, "must be a gold step object")
    idx = where.get(data, "idx", int, f"{field}.idx")
    action = where.get(data, "action", dict, f"{field}.action")
    name = where.get(action, "name", str, f"{field}.action.name")
    arguments = action.get("arguments", {})
    if isinstance(arguments, str):  # some writers keep OpenAI's arguments string
        try:
            arguments = json.loads(arguments)
        except ValueError:
            raise where.error(f"{field}.action.arguments", "is a string that is no JSON object") from None
    if not isinstance(arguments, dict):
        raise where.error(f"{field}.action.arguments", f"must be an object, not {type(arguments).__name__}")
    if "observation" not in data:
        raise where.error(f"{field}.observation", "is missing (every gold step is annotated with what it returns)")
    dependencies = where.get(data, "dependency_list", list, f"{field}.dependency_list")
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dependencies):
        raise where.error(f"{field}.dependency_list", "must list the idx of earlier steps (integers)")
    if name not in (ASK_STEP, ANSWER_STEP) and name not in tools:
        raise where.error(f"{field}.action.name", f"names tool {name!r}, which is not among the record's tools")
    user_input = data.get("user_input")
    if name == ASK_STEP and (not isinstance(user_input, str) or not user_input.strip()):
        raise where.error(f"{field}.user_input", "must be the user's answer to the clarifying question")
    return Step(idx, name, arguments, data["observation"], tuple(dependencies),
                user_input.strip() if isinstance(user_input, str) else None)


def _check_dependencies(steps: tuple[Step, ...], where: _Where, field: str) -> None:
    known: set[int] = set()
    for j, step in enumerate(steps):
        if step.idx in known:
            raise where.error(f"{field}[{j}].idx", f"repeats idx {step.idx}")
        missing = [d for d in step.dependencies if d not in known]
        if missing:
            raise where.error(f"{field}[{j}].dependency_list", f"names {missing}, no earlier step's idx")
        known.add(step.idx)


def _check_type(mission: MissionRecord, where: _Where, field: str) -> None:
    kind, calls = TYPE_CODES[mission.code], mission.calls
    asks = [s for s in mission.steps if s.name == ASK_STEP]
    if kind == "chat" and calls:
        raise where.error(field, f"holds tool calls ({calls[0].name}) in a chat mission (type 拒)")
    if kind in ("single", "multiple", "clarify") and not calls:
        raise where.error(field, f"holds no tool call in a mission of type {mission.code} ({kind})")
    if kind == "clarify" and not asks:
        raise where.error(field, f"has no {ASK_STEP} step in a clarify mission (type 反)")
