"""The mmtb tools: the imported records' tools, read from the snapshot, each answering a call with the annotated
observation of the gold call it matches.

A call matches a gold call of the same tool whose arguments are equal after `match_key`'s normalization. An
episode serves one task: its first answered call binds it to the task whose annotation answered it (the first in
file order when several tasks annotate the same call); later calls match only that task's gold calls. The n-th
call matching the same gold calls gets the n-th of them (a repeated call, the last one's observation again).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from pydantic import BaseModel, RootModel

from shiftbox_servers.kit import (
    Episode,
    NotFound,
    Snapshot,
    ToolHints,
    ToolSet,
    ToolSpec,
    schema_arguments_model,
)


class Observation(RootModel[Any]):
    """An annotated observation, as the record gives it (object, list, text or number)."""


def match_key(arguments: dict[str, Any]) -> str:
    """The arguments as one comparable text: strings lowercased without whitespace (MMTB's first string rule),
    integers as floats, keys sorted; None values left out (an optional parameter given as null)."""

    def norm(value: Any) -> Any:
        if isinstance(value, str):
            return "".join(value.split()).lower()
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return float(value)
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [norm(v) for v in value]
        return value

    return json.dumps(norm(arguments), sort_keys=True, ensure_ascii=False)


def answer(ep: Episode, tool: str, arguments: dict[str, Any]) -> Observation:
    """The annotated observation for this call in the episode's task (see the module docstring); NotFound when no
    gold call of the task matches it."""
    key = match_key(arguments)
    rows = ep.query("SELECT observation_id, task_id, observation FROM observations WHERE tool = ? AND match_key = ? "
                    "ORDER BY position", (tool, key))
    bound = ep.query_one("SELECT o.task_id FROM calls c JOIN observations o USING (observation_id) "
                         "ORDER BY c.call_id LIMIT 1")
    if bound is not None:
        rows = [r for r in rows if r["task_id"] == bound["task_id"]]
    if not rows:
        shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)[:200]
        task = f" of task {bound['task_id']!r} (this conversation's)" if bound is not None else ""
        raise NotFound(f"no annotated observation for {tool} with arguments {shown}: no gold call{task} makes this "
                       "call, and the mmtb domain answers only the calls its records annotate")
    mine = [r for r in rows if r["task_id"] == rows[0]["task_id"]]
    ids = [r["observation_id"] for r in mine]
    used = ep.query_one(f"SELECT COUNT(*) AS n FROM calls WHERE observation_id IN ({','.join('?' * len(ids))})",
                        tuple(ids))["n"]
    chosen = mine[min(used, len(mine) - 1)]
    ep.execute("INSERT INTO calls (tool, match_key, observation_id) VALUES (?, ?, ?)",
               (tool, key, chosen["observation_id"]))
    return Observation(json.loads(chosen["observation"]))


def tool_spec(name: str, description: str, parameters: dict[str, Any]) -> ToolSpec:
    """One record tool as the kit serves it: the record's schema published as it is, a strict check of the argument
    names and JSON types behind it, and `answer` as its body. A property named "" (MMTB's placeholder for "no
    parameters") is left out."""
    properties = {k: v for k, v in (parameters.get("properties") or {}).items() if k}
    required = set(parameters.get("required") or ())
    model = schema_arguments_model(name, parameters)
    signature = inspect.Signature(
        [inspect.Parameter("ep", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Episode)]
        + [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, annotation=f.annotation,
                             **({} if f.is_required() else {"default": f.default}))
           for k, f in model.model_fields.items()], return_annotation=Observation)

    def call(ep: Episode, **arguments: Any) -> BaseModel:
        return answer(ep, name, {k: v for k, v in arguments.items() if v is not None})

    call.__name__ = call.__qualname__ = name
    call.__doc__ = description or f"The {name} tool."
    call.__signature__ = signature  # type: ignore[attr-defined]
    annotations = ToolHints(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                  open_world_hint=False)
    schema = {"type": "object", "properties": properties,
              **({"required": [r for r in parameters.get("required") or () if r in properties]} if required else {})}
    return ToolSpec(name, call, annotations, model, schema)


def snapshot_tools(snapshot: Snapshot) -> ToolSet:
    """The tools of an mmtb snapshot, in name order."""
    db = snapshot.open_copy()
    try:
        rows = db.execute("SELECT name, description, parameters FROM tools ORDER BY name").fetchall()
    finally:
        db.close()
    return ToolSet({name: tool_spec(name, description, json.loads(parameters)) for name, description, parameters in rows})
