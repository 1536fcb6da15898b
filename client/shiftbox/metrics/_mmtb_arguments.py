"""Multi-Mission Tool Bench's argument check (its `bench_test/analysis_result.py`, read and re-written here): every
argument of a call is scored against the gold call and the tool's JSON schema, the call scores their mean, and a
mission whose walk succeeded fails when one of its calls scores under 0.7.

Per argument: a parameter the tool does not have scores 0; one the gold call does not give scores 1 only if its
value (as text) appears in the parameter's description. Values: equal (integers read as floats) score 1; a type
mismatch 0; strings equal ignoring case, or ignoring case and whitespace, 1, else their ROUGE-L F-measure (two
"lat,lon" pairs 1); other scalars 0; arrays element-wise (both sorted, lengths must agree) and objects key by key,
each the mean of its parts. A call missing a required parameter, or giving none when the gold call gives some,
scores 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

PASS = 0.7
"""A call scoring under this fails its mission (as a string argument must score above it to count as no error)."""

_BLOCK = re.compile(r"([\u4E00-\u9FD5a-zA-Z0-9+#&._%\-]+)")
_WORD = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
_HAN = re.compile(r"([\u4E00-\u9FD5])")
_COORDINATES = re.compile(r"^\d+\.\d+,\d+\.\d+$")
_NUMBER_TYPES = ("integer", "boolean", "float", "number")


def tokens(text: str) -> list[str]:
    """Text cut into tokens as MMTB's tokenizer (jieba's default mode) cuts text without Chinese: inside runs of
    letters, digits and `+#&._%-`, each run of letters and digits (with a decimal part or a % sign kept on) is a token
    and so is each piece between them; every other character, whitespace included, is a token of its own. A Chinese
    character is a token of its own (jieba would group them into dictionary words)."""
    out: list[str] = []
    for block in _BLOCK.split(text):
        if not block:
            continue
        if not _BLOCK.fullmatch(block):
            out.extend(_characters(block))
            continue
        for piece in _HAN.split(block):
            if not piece:
                continue
            if _HAN.fullmatch(piece):
                out.append(piece)
            else:
                out.extend(part for part in _WORD.split(piece) if part)
    return out


def _characters(block: str) -> list[str]:
    """A block outside the word runs: one token per character, a Windows line break kept as one."""
    return [part for part in re.split(r"(\r\n|.)", block, flags=re.S) if part]


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F-measure of two texts over `tokens`: the longest common subsequence over each text's length, their
    harmonic mean; 0 when either has no token or they share none."""
    a, b = tokens(reference), tokens(candidate)
    if not a or not b:
        return 0.0
    row = [0] * (len(b) + 1)
    for x in a:
        previous = 0
        for j, y in enumerate(b, start=1):
            kept = row[j]
            row[j] = previous + 1 if x == y else max(row[j], row[j - 1])
            previous = kept
    common = row[-1]
    if common == 0:
        return 0.0
    precision, recall = common / len(b), common / len(a)
    return 2 * precision * recall / (precision + recall)


def resolve(schema: Any, defs: Mapping[str, Any] | None = None) -> Any:
    """A JSON schema with its `$ref`s inlined and each optional type (`anyOf` with null) read as the type it allows,
    so every property has the `type` MMTB's rules look at."""
    if isinstance(schema, list):
        return [resolve(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    defs = schema.get("$defs", defs) or {}
    if "$ref" in schema:
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return resolve({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, defs)
    options = [o for o in schema.get("anyOf", []) if not (isinstance(o, dict) and o.get("type") == "null")]
    if "anyOf" in schema and len(options) == 1:
        merged = {**{k: v for k, v in schema.items() if k != "anyOf"}, **options[0]}
        return resolve(merged, defs)
    return {k: resolve(v, defs) for k, v in schema.items() if k != "$defs"}


def _described(value: Any, schema: Mapping[str, Any]) -> float:
    """A value the gold call does not give: 1 when the parameter's description mentions it (or says null for None)."""
    description = str(schema.get("description", "")).lower() if isinstance(schema, Mapping) else ""
    text = str(value).lower()
    return 1.0 if text in description or (text == "none" and "null" in description) else 0.0


def value_score(value: Any, gold: Any, schema: Mapping[str, Any]) -> float:
    """One argument's score against the gold value under its schema (module docstring)."""
    value = float(value) if type(value) is int else value
    gold = float(gold) if type(gold) is int else gold
    if type(value) is not type(gold):
        return 0.0
    if value == gold:
        return 1.0
    if isinstance(value, str) and "".join(value.split()).lower() == "".join(gold.split()).lower():
        return 1.0
    if isinstance(value, dict):
        return _object_score(value, gold, schema)
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if kind in _NUMBER_TYPES:
        return 0.0
    if kind == "string" and isinstance(value, str):
        if _COORDINATES.match(value) and _COORDINATES.match(gold):
            return 1.0
        return rouge_l(value, gold)
    if kind == "array" and isinstance(value, list):
        if len(value) != len(gold):
            return 0.0
        item = schema.get("items", {"type": "string"})
        item = item.get("properties", item) if isinstance(item, Mapping) else item
        ordered = sorted(value, key=_canonical), sorted(gold, key=_canonical)
        return sum(value_score(v, g, item) for v, g in zip(*ordered, strict=True)) / len(value)
    return 0.0  # a schema type MMTB has no rule for: its evaluator stops on it, failing the mission


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _object_score(value: dict, gold: dict, schema: Mapping[str, Any]) -> float:
    """An object argument: key by key against the properties its schema declares (an undeclared key: 0 for it all)."""
    fields = schema.get("items", schema.get("properties", schema)) if isinstance(schema, Mapping) else {}
    fields = fields.get("properties", fields) if isinstance(fields, Mapping) else {}
    scores = []
    for key, item in value.items():
        if key not in fields:
            return 0.0
        scores.append(value_score(item, gold[key], fields[key]) if key in gold else _described(item, fields[key]))
    if not scores:
        return 1.0 if not gold else 0.0
    return sum(scores) / len(scores)


def call_score(arguments: Mapping[str, Any], gold: Mapping[str, Any], schema: Mapping[str, Any]) -> float:
    """A call's score: the mean of its arguments' scores against the gold call's (`schema`: the tool's, resolved)."""
    if any(name not in arguments for name in schema.get("required", [])):
        return 0.0
    if not arguments:
        return 1.0 if not gold else 0.0
    properties = schema.get("properties", {})
    scores = [0.0 if name not in properties
              else value_score(value, gold[name], properties[name]) if name in gold
              else _described(value, properties[name])
              for name, value in arguments.items()]
    return sum(scores) / len(scores)


def schema_from_gold(gold: Mapping[str, Any]) -> dict[str, Any]:
    """The schema assumed when the domain is not installed: the gold call's parameters, typed by their values."""
    kinds = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return {"type": "object", "properties": {k: {"type": kinds.get(type(v), "string")} for k, v in gold.items()}}


def arguments_pass(calls: Sequence[tuple[str, Mapping[str, Any]]],
                   gold: Sequence[Mapping[str, Sequence[Mapping[str, Any]]]],
                   schemas: Mapping[str, Mapping[str, Any]] | None) -> bool:
    """Whether every call of a mission scores at least `PASS` against the gold call it pairs with: each call, in
    order, takes the unpaired gold call of its tool that it scores best against (the first on a tie). `gold`: one
    entry per gold call, tool name -> its gold arguments (several when the gold call allows several; the best
    counts)."""
    paired: set[int] = set()
    for name, arguments in calls:
        best, best_index = -1.0, None
        for index, allowed in enumerate(gold):
            if index in paired or name not in allowed:
                continue
            score = max(call_score(arguments, g, (schemas or {}).get(name) or schema_from_gold(g))
                        for g in allowed[name])
            if score > best:
                best, best_index = score, index
        if best_index is None or best < PASS:
            return False
        paired.add(best_index)
    return True
